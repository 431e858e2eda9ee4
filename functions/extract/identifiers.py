"""Identifiers a PDF carries about itself: DOI, arXiv id, and hints from its embedded metadata.

Sources, most trustworthy first: the XMP packet (`prism:doi`, `dc:identifier`, `dc:title`), DOI links
(`/URI` annotations), the arXiv margin stamp ("arXiv:2101.01234v2 [cs.CL] 3 Jan 2021"), and DOIs or
arXiv ids printed on the first two pages. Text-found identifiers may belong to a cited work (a
footnote, a reference on page 2), so callers confirm them against the document before trusting them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from functions.common.models import ARXIV_DOI_PREFIX, normalise_doi

FRONT_PAGES = 2
XMP_SCAN_BYTES = 4 * 1024 * 1024
# Keys under which embedded hints are kept in ParsedPdf.metadata (next to the Info dictionary's keys).
XMP_TITLE, XMP_DOI, LINK_DOI = "xmp:title", "xmp:doi", "link:doi"

_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"<>{}]+", re.IGNORECASE)
_LABELLED_DOI = re.compile(r"(?:\bdoi\s*:?\s*|doi\.org/)(10\.\d{4,9}/[^\s\"<>{}]+)", re.IGNORECASE)
_ARXIV_STAMP = re.compile(
    r"\barXiv:\s?(?P<id>\d{4}\.\d{4,5}|[a-z][a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?\s*\[[A-Za-z\-.]+\]",
)
_ARXIV_STAMP_OLD_BARE = re.compile(r"\b(?P<id>[a-z][a-z\-]+(?:\.[A-Z]{2})?/\d{7})v\d+\s*\[[A-Za-z\-.]+\]")
_ARXIV_LABELLED = re.compile(
    r"(?:\barXiv:\s?|arxiv\.org/(?:abs|pdf)/)(?P<id>\d{4}\.\d{4,5}|[a-z][a-z\-]+(?:\.[A-Z]{2})?/\d{7})",
    re.IGNORECASE,
)
_XMP_PACKET = re.compile(rb"<x:xmpmeta.*?</x:xmpmeta>", re.DOTALL)
_XMP_TITLE = re.compile(r"<dc:title>.*?<rdf:li[^>]*>(.*?)</rdf:li>", re.DOTALL)
_XMP_DOI = re.compile(r"<prism:doi>(.*?)</prism:doi>|prism:doi=\"([^\"]+)\"", re.DOTALL)
_XMP_IDENTIFIER = re.compile(r"<dc:identifier>(.*?)</dc:identifier>", re.DOTALL)
_URI_DOI = re.compile(rb"/URI\s*\(\s*(?:https?://)?(?:dx\.)?doi\.org/(10\.\d{4,9}/[^)\s]+)\)", re.IGNORECASE)
_YEAR_HINTS = (
    re.compile(r"\barXiv:\S+\s*\[[^\]]+\]\s*\d{1,2}\s+[A-Z][a-z]{2}\s+((?:19|20)\d{2})\b"),
    re.compile(r"(?:©|\(c\)|copyright)\s*((?:19|20)\d{2})\b", re.IGNORECASE),
    re.compile(r"\b(?:published|accepted)\b[^\n]{0,40}?\b((?:19|20)\d{2})\b", re.IGNORECASE),
)
_ENTITIES = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'", "&#39;": "'"}


@dataclass(slots=True)
class DocumentIdentifiers:
    """Candidates in order of trust; `dois[0]`/`arxiv_ids[0]` are the best guesses."""

    dois: list[str] = field(default_factory=list)
    arxiv_ids: list[str] = field(default_factory=list)
    year: int | None = None

    @property
    def doi(self) -> str | None:
        return self.dois[0] if self.dois else None

    @property
    def arxiv_id(self) -> str | None:
        return self.arxiv_ids[0] if self.arxiv_ids else None


@dataclass(frozen=True)
class RequestedIdentifiers:
    """The identifiers of the source the caller asked for (a DOI or arXiv id): trusted, no confirmation
    needed."""

    doi: str | None = None
    arxiv_id: str | None = None


NOTHING_REQUESTED = RequestedIdentifiers()


def _unescape(text: str) -> str:
    for entity, char in _ENTITIES.items():
        text = text.replace(entity, char)
    return " ".join(text.split())


def clean_doi(value: str) -> str | None:
    """A DOI as printed (trailing punctuation, an unbalanced closing bracket) -> normalised, or None."""
    doi = normalise_doi(value)
    if not doi:
        return None
    doi = doi.rstrip(".,;:'\"")
    while doi and doi[-1] in ")]" and doi.count(doi[-1]) > doi.count("(" if doi[-1] == ")" else "["):
        doi = doi[:-1].rstrip(".,;:")
    return doi if re.fullmatch(r"10\.\d{4,9}/\S{2,}", doi) else None


def embedded_hints(data: bytes) -> dict[str, str]:
    """XMP title/DOI and a DOI link, read from the raw file (XMP packets are stored uncompressed so
    that tools without a PDF parser can read them; compressed ones are simply not found)."""
    hints: dict[str, str] = {}
    head = data[:XMP_SCAN_BYTES]
    packet = _XMP_PACKET.search(head)
    if packet:
        xmp = packet.group(0).decode("utf-8", "replace")
        title = _XMP_TITLE.search(xmp)
        if title and _unescape(title.group(1)):
            hints[XMP_TITLE] = _unescape(title.group(1))
        doi_match = _XMP_DOI.search(xmp)
        doi = clean_doi(doi_match.group(1) or doi_match.group(2) or "") if doi_match else None
        if doi is None:
            for identifier in _XMP_IDENTIFIER.findall(xmp):
                doi = clean_doi(_unescape(identifier))
                if doi:
                    break
        if doi:
            hints[XMP_DOI] = doi
    link = _URI_DOI.search(head)
    if link:
        doi = clean_doi(link.group(1).decode("latin-1"))
        if doi:
            hints[LINK_DOI] = doi
    return hints


def _add(values: list[str], value: str | None) -> None:
    if value and value not in values:
        values.append(value)


def find_identifiers(front_pages: list[str], metadata: dict[str, str]) -> DocumentIdentifiers:
    """`front_pages`: the normalised text of the first pages (only FRONT_PAGES are read)."""
    found = DocumentIdentifiers()
    _add(found.dois, clean_doi(metadata.get(XMP_DOI, "")))
    _add(found.dois, clean_doi(metadata.get(LINK_DOI, "")))
    pages = front_pages[:FRONT_PAGES]
    for text in pages:
        for match in _LABELLED_DOI.finditer(text):
            _add(found.dois, clean_doi(match.group(1)))
    for text in pages[:1]:  # unlabelled DOIs only on the first page (page 2 may hold references)
        for match in _DOI.finditer(text):
            _add(found.dois, clean_doi(match.group(0)))
    for text in pages:
        for pattern in (_ARXIV_STAMP, _ARXIV_STAMP_OLD_BARE):
            for match in pattern.finditer(text):
                _add(found.arxiv_ids, match.group("id"))
    for text in pages[:1]:
        for match in _ARXIV_LABELLED.finditer(text):
            _add(found.arxiv_ids, match.group("id"))
    for doi in [d for d in found.dois if d.startswith(ARXIV_DOI_PREFIX)]:
        found.dois.remove(doi)  # arXiv's DataCite DOI: the arXiv id says more
        _add(found.arxiv_ids, doi[len(ARXIV_DOI_PREFIX) :])
    found.year = year_hint(pages[0] if pages else "")
    return found


def year_hint(first_page: str) -> int | None:
    """The publication year a first page states (arXiv stamp date, copyright line, published/accepted)."""
    for pattern in _YEAR_HINTS:
        match = pattern.search(first_page)
        if match:
            return int(match.group(1))
    return None
