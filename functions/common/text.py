"""Words and sentences: the tokeniser, stemmer, stop words and sentence splitter that every family shares."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_WORD = re.compile(r"[0-9a-z]+(?:[-'][0-9a-z]+)*")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words: never a concept, never a search term.
STOPWORDS = _words(
    "a about above across after again against all am among an and any are as at be because been "
    "before being below between both but by can could did do does doing down during each either every "
    "few for from further had has have having he her here hers how i if in into is it its itself just "
    "least less little lot lots many me more most much my neither no none nor not now of off on once "
    "only or other our ours out over own per same several she should so some such than that the their "
    "theirs them then there these they this those through to too toward towards under until up using "
    "versus very via vs was we were what whatever when where which whichever while who whom why will "
    "with within would you your yours"
)

# The words a query's relevance to a paper is not judged on (search scores, screening relevance): the
# commonest function words and the words every research title uses ("novel approach", "a new study").
# Narrower than STOPWORDS on purpose: words such as "not", "more" or "between" say what a query asks for.
QUERY_STOPWORDS = _words(
    "a an and are as at be but by can do does for from has have how in into is it its of on or over that "
    "the their these this those to under using via vs was were what when where which who why with within "
    "without recent new novel study toward towards based approach approaches"
)

# Words that end in a full stop without ending a sentence ("et al.", "Fig. 2", "e.g."); one letter
# (an initial, "vitamin A.") does not end one either.
ABBREVIATIONS = _words(
    "al fig figs eq eqs e.g i.e vs cf sec secs tab ref refs no dr mr ms st resp approx ca etc viz proc vol "
    "pp ed eds jan feb mar apr jun jul aug sep sept oct nov dec inc ltd univ dept"
)
# A full stop, question or exclamation mark, any closing quotes or brackets, then white space.
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+")
SENTENCE_OPENERS = "[(\"'\u201c\u2018"  # besides capitals and digits, what a sentence may start with


def fold(value: str) -> str:
    """Lower-case ASCII-folded text (accents dropped) for comparisons."""
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def words(text: str) -> list[str]:
    """Every word of a text, in order, folded: letters and digits, joined by inner hyphens or apostrophes."""
    return _WORD.findall(fold(text))


def terms(
    text: str,
    *,
    stopwords: frozenset[str] = QUERY_STOPWORDS,
    min_length: int = 2,
    numbers: bool = True,
    letter_first: bool = False,
) -> list[str]:
    """The content words of a text, in order, folded: stop words and words shorter than `min_length`
    dropped, bare numbers too unless `numbers`, and with `letter_first` every word that starts with a
    digit ('16s', '3d', '2024')."""
    return [
        word
        for word in words(text)
        if len(word) >= min_length
        and word not in stopwords
        and (numbers or not word.isdigit())
        and not (letter_first and word[0].isdigit())
    ]


def stem(word: str) -> str:
    """A deliberately light stemmer: plurals and -ing/-ed, enough to match 'transformers'/'transformer'."""
    if len(word) >= 5 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) >= 5 and word.endswith("es") and word[:-2].endswith(("x", "ch", "sh", "ss", "z")):
        return word[:-2]
    if len(word) >= 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) >= 6 and word.endswith("ing"):
        return word[:-3]
    if len(word) >= 5 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2]
    return word


def stems(
    text: str, *, stopwords: frozenset[str] = QUERY_STOPWORDS, min_length: int = 2, numbers: bool = True
) -> list[str]:
    """The stems of the text's `terms`, in order."""
    return [stem(word) for word in terms(text, stopwords=stopwords, min_length=min_length, numbers=numbers)]


def _after_abbreviation(text: str) -> bool:
    last = text.rsplit(None, 1)[-1] if text.strip() else ""
    token = last.lstrip(SENTENCE_OPENERS).rstrip(".").lower()
    return token in ABBREVIATIONS or (len(token) == 1 and token.isalpha())


def sentence_spans(
    text: str, start: int = 0, end: int | None = None, *, openers: str = SENTENCE_OPENERS
) -> list[tuple[int, int]]:
    """(start, end) of each sentence of text[start:end], trailing white space left out. A sentence ends
    at a full stop, question or exclamation mark (and any closing quotes or brackets) followed by white
    space and a capital, a digit or one of `openers`, but not after an abbreviation or an initial,
    inside brackets or not ("(Fig. 2)", "Smith et al. (2020)")."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    begin = start
    for match in _SENTENCE_END.finditer(text, start, end):
        following = text[match.end() : match.end() + 1]
        if following and not (following.isupper() or following.isdigit() or following in openers):
            continue
        if _after_abbreviation(text[begin : match.start() + 1]):
            continue
        spans.append((begin, match.start() + len(match.group(0).rstrip())))
        begin = match.end()
    last = len(text[begin:end].rstrip())
    if last:
        spans.append((begin, begin + last))
    return [(first, stop) for first, stop in spans if stop - first >= 2]


def first_sentence(text: str) -> str:
    stripped = text.strip()
    spans = sentence_spans(stripped)
    return stripped[spans[0][0] : spans[0][1]] if spans else stripped


def listed(items: Sequence[str]) -> str:
    """Items as prose lists them: "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def mid_sentence(phrase: str) -> str:
    """A phrase as it reads inside a sentence: its first letter lowered, unless it opens an acronym or a
    capitalised name ("Stroke risk" -> "stroke risk", "BCR values" and "GPT-4" unchanged)."""
    return phrase[:1].lower() + phrase[1:] if phrase[1:2].islower() else phrase
