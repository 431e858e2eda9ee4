"""Text helpers shared by the connectors: names, markup, identifiers, titles, snippets, query terms."""

from __future__ import annotations

import html
import re
import unicodedata

_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[0-9a-z]+(?:[-'][0-9a-z]+)*")
_ARXIV_NEW = re.compile(r"(?:(?<=arxiv[.:/])|(?<![\d.]))(\d{4}\.\d{4,5})(?:v\d+)?(?!\d)", re.IGNORECASE)
_ARXIV_OLD = re.compile(r"([a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.IGNORECASE)
_PARTICLES = frozenset(
    {
        "van",
        "von",
        "der",
        "den",
        "de",
        "del",
        "della",
        "da",
        "di",
        "du",
        "la",
        "le",
        "dos",
        "das",
        "ter",
        "ten",
        "bin",
        "al",
    }
)

STOPWORDS = frozenset(
    """a an and are as at be but by can do does for from has have how in into is it its of on or
    over that the their these this those to under using via vs was were what when where which who
    why with within without recent new novel study toward towards based approach approaches""".split()  # noqa: SIM905
)


def clean_text(value: str | None) -> str:
    """Markup (JATS, HTML) removed, entities decoded, whitespace collapsed."""
    if not value:
        return ""
    text = _TAG.sub(" ", value)
    text = html.unescape(text)
    return _SPACE.sub(" ", text).strip()


def strip_jats_abstract(value: str | None) -> str:
    """Crossref abstracts: `<jats:p>`, `<jats:title>Abstract</jats:title>` and friends."""
    text = clean_text(value)
    return re.sub(r"^(abstract|summary)\s*[:.]?\s+", "", text, flags=re.IGNORECASE)


def fold(value: str) -> str:
    """Lower-case ASCII-folded text (accents dropped) for comparisons."""
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def normalise_title(title: str) -> str:
    return " ".join(_WORD.findall(fold(clean_text(title))))


def terms(text: str) -> list[str]:
    """Content words of a text, in order, folded; stopwords and 1-letter tokens dropped."""
    return [w for w in _WORD.findall(fold(text)) if w not in STOPWORDS and len(w) > 1]


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


def format_author(
    name: str | None = None, *, family: str | None = None, given: str | None = None
) -> str | None:
    """'John A. Smith' | 'Smith, John' | family/given -> 'Smith, J. A.' (the API 1 format)."""
    if family is None:
        raw = clean_text(name)
        if not raw:
            return None
        if "," in raw:
            family, given = (part.strip() for part in raw.split(",", 1))
        else:
            parts = raw.split()
            if len(parts) == 1:
                return parts[0]
            cut = len(parts) - 1
            while cut > 1 and parts[cut - 1].lower() in _PARTICLES:
                cut -= 1
            family, given = " ".join(parts[cut:]), " ".join(parts[:cut])
    family = clean_text(family)
    if not family:
        return clean_text(given) or None
    initials = []
    for part in re.split(r"[\s.]+", clean_text(given)):
        if not part:
            continue
        pieces = [p for p in part.split("-") if p]
        initials.append("-".join(p[0].upper() + "." for p in pieces))
    return f"{family}, {' '.join(initials)}" if initials else family


def arxiv_id_from(value: str | None) -> str | None:
    """The version-less arXiv id in an id, abs/pdf URL or arXiv DOI (10.48550/arXiv.XXXX)."""
    if not value:
        return None
    text = value.strip()
    if "arxiv" not in text.lower() and not re.fullmatch(r"[\w.\-/]+", text):
        return None
    match = _ARXIV_NEW.search(text)
    if match:
        return match.group(1)
    match = _ARXIV_OLD.search(text)
    if match and ("arxiv" in text.lower() or text.lower() == match.group(0).lower()):
        return match.group(1)
    return None


def snippet_from(abstract: str | None, *, fallback: str, limit: int = 500, minimum: int = 100) -> str:
    """An abstract excerpt of at most `limit` characters, cut at a sentence or word boundary.

    When the abstract is missing or shorter than `minimum`, the `fallback` (a metadata line built from
    the record) is appended so the snippet still says what the work is.
    """
    text = clean_text(abstract)
    if len(text) > limit:
        cut = text[:limit]
        sentence_end = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
        if sentence_end >= minimum:
            text = cut[: sentence_end + 1]
        else:
            text = cut[: cut.rfind(" ")].rstrip(",;:") + "…" if " " in cut else cut
    if len(text) < minimum:
        text = f"{text} {fallback}".strip() if text else fallback
        text = text[:limit]
    return text
