"""Attribution: a quoted sentence rewritten as a finding of its authors, in the third person.

"We describe a deployed system [8, 9]." from Lee, Chen and Wu (2023) is shown as "Lee et al. (2023)
describe a deployed system."; "This paper introduces a tool" as "The paper by Lee et al. (2023) introduces
a tool"; a sentence without self-reference gets a lead, "Lee et al. (2023) report that …". First person
becomes the authors ("we" → "they", "our" → "their"), and the paper's own citations of other works
("[8, 9, 14]", "(Smith et al., 2019)", superscripts) are removed. Nothing else changes: numbers, negation,
hedges and the population stay as the quote has them, and the quote itself is kept verbatim by the
citation. The words the rewrite adds are returned as its attribution (the Verifier discounts them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_SELF_NOUNS = (
    "paper|study|work|article|letter|review|chapter|manuscript|thesis|research|report|survey|analysis|"
    "investigation|trial|experiment|contribution"
)
SELF_REFERENCE = re.compile(
    rf"\b(?:this|the present|the current|our)\s+(?:{_SELF_NOUNS})\b|\bherein\b", re.IGNORECASE
)
FIRST_PERSON = re.compile(r"\b(?:[Ww]e|[Oo]ur|[Oo]urs|us|[Oo]urselves)\b")
# Numeric citations in square brackets: "[8]", "[8, 9, 14]", "[3-5]", "[12; 14]".
_NUMERIC_CITATION = re.compile(r"\s*\[\s*[1-9]\d{0,2}(?:\s*[-\u2013,;]\s*[1-9]\d{0,2})*\s*\]")
_NAME = (
    r"[A-Z][A-Za-z'\u2019\-]+(?:\s+(?:et\s+al\.?|and\s+[A-Z][A-Za-z'\u2019\-]+|&\s+[A-Z][A-Za-z'\u2019\-]+))?"
)
_AUTHOR_YEAR = rf"{_NAME},?\s+(?:19|20)\d{{2}}[a-z]?"
# Parenthetical author-year citations: "(Smith et al., 2019)", "(e.g., Lee 2020; Chen and Wu, 2021a)".
_AUTHOR_YEAR_CITATION = re.compile(
    rf"\s*\((?:(?:e\.g\.|see|cf\.)\s*,?\s*)?{_AUTHOR_YEAR}(?:\s*[;,]\s*{_AUTHOR_YEAR})*\)"
)
_SUPERSCRIPT = re.compile(
    r"[\u00b9\u00b2\u00b3\u2070\u2074-\u2079]+(?:[,\u2013\-][\u00b9\u00b2\u00b3\u2070\u2074-\u2079]+)*"
)
FOREIGN_MARKERS = (_NUMERIC_CITATION, _AUTHOR_YEAR_CITATION, _SUPERSCRIPT)

_OPENING_FRAME = re.compile(
    rf"^(?:(?:in|through|with)\s+(?:this|the present|the current|our)\s+(?:{_SELF_NOUNS})|here(?:in)?)"
    r"\s*,?\s*(?=we\b)",
    re.IGNORECASE,
)
_CONNECTIVE = re.compile(
    r"^(?:However|Moreover|Furthermore|In addition|Additionally|Finally|Thus|Therefore|Hence|Also|"
    r"Nevertheless|Nonetheless|Then|Next|Consequently|Accordingly|In particular|Specifically|Similarly|"
    r"Likewise|Indeed|In contrast|Conversely|By contrast|On the other hand|First|Second|Third|Lastly)"
    r"\s*,\s+",
)
_ADVERBS = frozenset(
    [
        "also",
        "then",
        "further",
        "first",
        "finally",
        "additionally",
        "moreover",
        "now",
        "here",
        "therefore",
        "thus",
        "next",
    ]
)
_SUBJECT_SELF = re.compile(rf"^(?:this|the present|the current|our)\s+({_SELF_NOUNS})\b", re.IGNORECASE)
_PREPOSITION_SELF = re.compile(
    rf"\b(in|of|from|throughout|by|within)\s+(?:this|the present|the current|our)\s+({_SELF_NOUNS})\b",
    re.IGNORECASE,
)
_SELF_ASIDE = re.compile(
    rf",?\s*\b(?:in|within|throughout|through)\s+(?:this|the present|the current|our)\s+(?:{_SELF_NOUNS})\b,?",
    re.IGNORECASE,
)
_OTHER_SELF = re.compile(rf"\b(?:this|the present|the current|our)\s+({_SELF_NOUNS})\b", re.IGNORECASE)
_LEADING_PHRASE = re.compile(r"^((?:In|Among|Across|For|Of)\s[^,;:]{3,60}),\s+(?=\S)")
_PRONOUNS = {"we": "they", "us": "them", "our": "their", "ours": "theirs", "ourselves": "themselves"}
_IRREGULAR = {"have": "has", "do": "does", "are": "is", "were": "was", "go": "goes"}
_TITLE_WORDS = 6
_MODALS = frozenset(["can", "could", "may", "might", "must", "shall", "should", "will", "would"])


@dataclass(frozen=True)
class Attributed:
    """The sentence as shown and the phrases the rewrite added (who states it)."""

    text: str
    attribution: tuple[str, ...]


def last_name(author: str) -> str:
    """'Lee, Jane' and 'Jane Lee' -> 'Lee'."""
    return author.split(",", 1)[0].strip() if "," in author else (author.split() or [""])[-1]


def author_label(authors: Sequence[str], year: int | None, title: str = "") -> str:
    """How a finding is attributed: 'Lee et al. (2023)', 'Lee and Chen (2023)', 'Lee (2023)'; a work
    without authors by its title ('"Dense retrieval for…" (2023)')."""
    names = [name for name in (last_name(a) for a in authors) if name]
    if len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    elif names:
        who = f"{names[0]} et al."
    else:
        words = title.split()
        short = " ".join(words[:_TITLE_WORDS]) + ("\u2026" if len(words) > _TITLE_WORDS else "")
        who = f"\u201c{short.strip('.')}\u201d" if short else "One study"
    return f"{who} ({year})" if year else who


def is_plural(label: str) -> bool:
    return " et al." in label or " and " in label


def without_markers(text: str) -> str:
    """The sentence without the paper's own citations of other works, spaced as prose."""
    for pattern in FOREIGN_MARKERS:
        text = pattern.sub("", text)
    text = re.sub(r"\s+([.,;:!?])", r"\1", " ".join(text.split()))
    return re.sub(r"\(\s*\)", "", text).strip()


def _agree(verb: str, plural: bool) -> str:
    """A present-tense verb in the subject's number ('describe' for 'Lee et al.', 'describes' for 'Lee')."""
    lower = verb.lower()
    if plural or lower in _MODALS or lower.endswith("ed") or not lower.isalpha():
        return verb
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"


def _with_subject(rest: str, label: str) -> str:
    """`label` as the subject of what followed 'we': 'we also propose X' -> 'Lee (2023) also proposes X'."""
    words = rest.split(" ", 2)
    plural = is_plural(label)
    if len(words) >= 2 and words[0].lower() in _ADVERBS:
        return " ".join([label, words[0], _agree(words[1], plural), *words[2:]])
    return " ".join([label, _agree(words[0], plural), *words[1:]]) if words[0] else label


def _pronouns(text: str) -> str:
    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        if word == "us" and match.start() > 0 and text[match.start() - 1 : match.start()] == ".":
            return word
        new = _PRONOUNS[word.lower()]
        return new.capitalize() if word[0].isupper() else new

    return FIRST_PERSON.sub(swap, text)


def continuing(text: str, proper: frozenset[str]) -> str:
    """The sentence continuing another: its first word lower-cased unless it is a name or acronym."""
    first = text.split(" ", 1)[0]
    if not first[:1].isupper() or first[1:] != first[1:].lower() or first.rstrip(",;:") in proper:
        return text
    return text[:1].lower() + text[1:]


def proper_words(texts: Sequence[str]) -> frozenset[str]:
    """Capitalised words a source uses inside its sentences (names it keeps capitalised)."""
    found: set[str] = set()
    for text in texts:
        found.update(re.findall(r"(?<=[a-z,;] )([A-Z][a-z][\w'\-]*)", text))
    return frozenset(found)


def attribute(
    sentence: str, label: str, proper: frozenset[str] = frozenset(), *, again: bool = False
) -> Attributed:
    """`sentence` (a quote) as a finding of `label`'s authors: first person and self-reference rewritten,
    foreign reference markers removed, and a lead that names the authors when the sentence has none."""
    text = without_markers(sentence)
    connective = _CONNECTIVE.match(text)
    if connective:  # it ties the sentence to the one before it in the paper, which is not shown
        rest = text[connective.end() :]
        text = rest[:1].upper() + rest[1:]
    framed = _OPENING_FRAME.match(text)
    if framed:
        text = text[framed.end() :]
    lead = re.match(r"^[Ww]e\s+(.*)$", text, re.DOTALL)
    if lead:  # "we describe in this paper X" -> "Lee et al. (2023) describe X"
        rest = _OTHER_SELF.sub(lambda m: f"the {m.group(1).lower()}", _SELF_ASIDE.sub(" ", lead.group(1)))
        return Attributed(_pronouns(_with_subject(" ".join(rest.split()), label)), (label,))
    subject = _SUBJECT_SELF.match(text)
    if subject:
        opener = f"The {subject.group(1).lower()} by {label}"
        return Attributed(_pronouns(opener + text[subject.end() :]), (label,))
    if _PREPOSITION_SELF.search(text):
        text = _PREPOSITION_SELF.sub(
            lambda m: f"{m.group(1)} the {m.group(2).lower()} by {label}", text, count=1
        )
        text = _OTHER_SELF.sub(lambda m: f"the {m.group(1).lower()}", text)
        if re.search(r"\b[Ww]e\b", text):
            text = re.sub(r"\b([Ww])e\b", lambda m: "They" if m.group(1) == "W" else "they", text)
        return Attributed(_pronouns(text), (label,))
    inner_we = re.search(r"\bwe\s+(.*)$", text, re.DOTALL)
    if inner_we:
        text = text[: inner_we.start()] + _with_subject(inner_we.group(1), label)
        text = _OTHER_SELF.sub(lambda m: f"the {m.group(1).lower()}", text)
        return Attributed(_pronouns(text), (label,))
    text = _pronouns(_OTHER_SELF.sub(lambda m: f"the {m.group(1).lower()}", text))
    return _with_lead(text, label, proper, again)


def _with_lead(text: str, label: str, proper: frozenset[str], again: bool = False) -> Attributed:
    """A sentence with no subject of its authors: 'In 38 patients, Chen et al. (2017) report that …';
    a question is what they ask. `again`: the sentence before was theirs too ('They also report that …')."""
    if text.rstrip().endswith("?"):
        asks = f"{label} {_agree('ask', is_plural(label))}:"
        return Attributed(f"{asks} {text}", (asks,))
    says = "They also report that" if again else f"{label} {_agree('report', is_plural(label))} that"
    leading = _LEADING_PHRASE.match(text)
    if leading and not re.search(r"\d", leading.group(1)[:2]):
        rest = text[leading.end() :]
        return Attributed(f"{leading.group(1)}, {says} {continuing(rest, proper)}", (says,))
    return Attributed(f"{says} {continuing(text, proper)}", (says,))


def speaks_for_itself(text: str) -> bool:
    """Whether a shown sentence is in a paper's first person or refers to itself ("this paper")."""
    return bool(FIRST_PERSON.search(text) or SELF_REFERENCE.search(text) or re.search(r"\bHere,? we\b", text))


def foreign_markers(text: str) -> int:
    """How many of a paper's own reference markers a shown sentence still carries."""
    return sum(len(pattern.findall(text)) for pattern in FOREIGN_MARKERS)
