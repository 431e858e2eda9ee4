"""References as they are cited: a formatted string (any common style), a bare DOI in any spelling, or a
BibTeX entry, read into what the lookups and the matching need.

The title of a formatted reference is found by its shape (a quoted title, the sentence after an
author-year head, or the sentence after the author list); the matching does not rely on it alone: it
also looks for a registry record's title anywhere in the reference's text (functions/references/matching.py).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from bibtexparser.entrypoint import parse_string

from functions.common.errors import InvalidInput

_YEAR = re.compile(r"(?<!\d)(1[89]\d{2}|20\d{2})(?!\d)")


@dataclass(frozen=True)
class CitedReference:
    """One reference as cited: `input` verbatim, `text` the searchable part (no DOI or URL)."""

    input: str
    text: str
    doi: str | None = None
    title: str | None = None
    years: tuple[int, ...] = ()
    arxiv_id: str | None = None
    notes: tuple[str, ...] = field(default=())


# "10.1038/nature14539", "doi:10.1038/…", "https://doi.org/10.1038/…", "dx.doi.org/10.1038%2F…"
_DOI = re.compile(r"10\.\d{4,9}/[^\s\"<>{}]+", re.IGNORECASE)
_DOI_PREFIX = re.compile(
    r"(?:https?://)?(?:dx\.)?doi\.org/|\bdoi\s*[:=]\s*|\bDOI\s+(?=10\.)|https?://\S*?/doi/(?:abs/|full/|pdf/)?",
    re.IGNORECASE,
)


def find_doi(text: str) -> str | None:
    """The first DOI of `text` in any of its spellings, normalised (lower case, unescaped, without the
    punctuation that ends a sentence or closes a bracket around it)."""
    unescaped = re.sub(r"%2[Ff]", "/", text)
    match = _DOI.search(_DOI_PREFIX.sub("", unescaped))
    if match is None:
        return None
    doi = match.group(0)
    while doi and doi[-1] in ".,;:]}'":
        doi = doi[:-1]
    if doi.endswith(")") and doi.count("(") < doi.count(")"):
        doi = doi[:-1]
    return doi.lower() or None


def normalise_text(text: str) -> str:
    """Lower case, accents and LaTeX braces off, punctuation as spaces: what titles are compared as."""
    text = re.sub(r"\\[a-zA-Z]+\s*|[{}$\\]", "", text)
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w]+", " ", plain.lower()).split())


_URL = re.compile(r"https?://\S+|\bwww\.\S+")


def _without_identifiers(text: str) -> str:
    text = _URL.sub(" ", text)
    text = _DOI_PREFIX.sub(" ", text)
    text = _DOI.sub(" ", text)
    text = re.sub(r"\b(?:doi|DOI|Available at|Retrieved from|URL)\s*[:.]?\s*$", "", text.strip())
    return " ".join(text.split()).strip(" ,;")


_INITIALS = re.compile(r"\b[A-Z]\.|\b[A-Z]{1,3}\b")


def _looks_like_authors(part: str) -> bool:
    words = part.split()
    if not words:
        return False
    initials = len(_INITIALS.findall(part))
    return ("," in part and initials >= 1) or " and " in part or "&" in part or "et al" in part


# a title in quotes (IEEE, MLA, Chicago)
_QUOTED = re.compile(r"[\"“”](.{8,400}?)[,.]?[\"”]")
# "(2019)." or "(2019, March)." after the authors (APA, Harvard)
_AUTHOR_YEAR_HEAD = re.compile(r"\((?:1[89]\d{2}|20\d{2})[a-z]?(?:, [^)]{0,40})?\)[.,:]?\s+")
# "LeCun Y, Bengio Y, Hinton GE. " (Vancouver: initials without periods)
_VANCOUVER_HEAD = re.compile(r"^(?:[A-Z][\w'\u00C0-\u024F-]+ [A-Z]{1,3}(?:,\s*|\.\s+)|et al\.?,?\s*)+")
# a sentence end that is not an initial ("A. Vaswani", "Vaswani, A.") nor an "et al."
_SENTENCE_END = re.compile(r"(?<!\b[A-Z])(?<!\bal)(?<!\bet)[.?!]\s+")


def formatted_title(text: str) -> str | None:
    """The title of a formatted reference: quoted (IEEE, MLA, Chicago), after "(2019)." (APA, Harvard),
    or the sentence after the author list (Vancouver, ACM, Nature)."""
    quoted = _QUOTED.search(text)
    if quoted:
        return quoted.group(1).strip(" ,.")
    head = _AUTHOR_YEAR_HEAD.search(text) or _VANCOUVER_HEAD.match(text)
    rest = text[head.end() :] if head else text
    parts = [p.strip() for p in _SENTENCE_END.split(rest) if p.strip()]
    if not head and len(parts) > 1 and _looks_like_authors(parts[0]):
        parts = parts[1:]
    for part in parts:
        candidate = _YEAR.sub("", part).strip(" ,.()")
        if len(candidate.split()) >= 2 and not _looks_like_authors(part):
            return candidate
    return None


# "arXiv:1706.03762v5"
_ARXIV = re.compile(r"\barxiv[:\s]*(\d{4}\.\d{4,5})(?:v\d+)?", re.IGNORECASE)


def parse_reference(text: str) -> CitedReference:
    """One reference string: a bare DOI, a BibTeX entry (starting with `@`) or a formatted reference."""
    stripped = text.strip()
    if stripped.startswith("@"):
        entries = parse_bibtex(stripped, what="the BibTeX entry")
        if len(entries) != 1:
            raise InvalidInput(f"holds {len(entries)} BibTeX entries, not one")
        return entries[0]
    searchable = _without_identifiers(stripped)
    arxiv = _ARXIV.search(stripped)
    return CitedReference(
        input=text,
        text=searchable,
        doi=find_doi(stripped),
        title=formatted_title(searchable) if len(searchable.split()) >= 3 else None,
        years=tuple(int(y) for y in _YEAR.findall(searchable)),
        arxiv_id=arxiv.group(1) if arxiv else None,
    )


def parse_references(texts: Sequence[str]) -> list[CitedReference]:
    """Each string in order; a malformed one is refused naming its place (`references[3]`)."""
    parsed: list[CitedReference] = []
    for index, text in enumerate(texts):
        if not text.strip():
            raise InvalidInput(f"references[{index}]: must not be blank", field=f"references[{index}]")
        try:
            parsed.append(parse_reference(text))
        except InvalidInput as exc:
            raise InvalidInput(f"references[{index}]: {exc.message}", field=f"references[{index}]") from exc
    return parsed


def _field(fields: dict[str, str], *names: str) -> str:
    for name in names:
        value = fields.get(name)
        if value:
            return " ".join(re.sub(r"[{}]", "", value).split())
    return ""


def _bibtex_reference(raw: str, fields: dict[str, str]) -> CitedReference:
    title = _field(fields, "title")
    authors = _field(fields, "author", "editor").replace(" and ", ", ")
    year = _field(fields, "year", "date")[:4]
    venue = _field(fields, "journal", "booktitle", "publisher", "school", "howpublished")
    doi = find_doi(_field(fields, "doi", "url", "note"))
    eprint = (
        _field(fields, "eprint") if "arxiv" in _field(fields, "archiveprefix", "eprinttype").lower() else ""
    )
    text = ". ".join(part for part in (authors, f"({year})" if year else "", title, venue) if part)
    return CitedReference(
        input=raw,
        text=text,
        doi=doi,
        title=title or None,
        years=(int(year),) if year.isdigit() else (),
        arxiv_id=eprint or None,
    )


def parse_bibtex(text: str, *, what: str = "the .bib file") -> list[CitedReference]:
    """The entries of a BibTeX text, in order; InvalidInput when a block cannot be parsed or none is an
    entry."""
    library = parse_string(text)
    if library.failed_blocks:
        failed = library.failed_blocks[0]
        line = getattr(failed, "start_line", 0) + 1
        raise InvalidInput(f"{what} is malformed BibTeX (the block at line {line} cannot be parsed)")
    entries = [
        _bibtex_reference(entry.raw or text, {k.lower(): str(f.value) for k, f in entry.fields_dict.items()})
        for entry in library.entries
    ]
    if not entries:
        raise InvalidInput(f"{what} holds no BibTeX entry")
    if any(not (entry.title or entry.doi) for entry in entries):
        raise InvalidInput(f"{what} has an entry with neither a title nor a DOI")
    return entries
