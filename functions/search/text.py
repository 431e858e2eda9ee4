"""Text helpers shared by the connectors: names, markup, identifiers, titles, snippets."""

from __future__ import annotations

import html
import re

from functions.common.text import words

_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")
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


def normalise_title(title: str) -> str:
    return " ".join(words(clean_text(title)))


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
