"""Authoritative metadata: title, authors, year, venue and abstract from the scholarly registries,
when the paper's identifier (or, failing that, its title) leads to a record that is about this paper.

The extraction domain sees the registries only through the `ScholarlyMetadata` port; the deployed
wiring implements it over the search connectors (`metadata_connectors.py`), unit tests with a fake.
Everything here is bounded by a time budget and never raises: without an answer the layout stands.

Order: arXiv ids ask arXiv, then Semantic Scholar for fields still missing; DOIs ask Crossref and
OpenAlex together (Crossref first when merging: it is the registration agency; OpenAlex usually has the
abstract Crossref lacks), then Semantic Scholar for what is still missing. Without an identifier that
answers, Crossref's bibliographic search by the layout title, accepted only on a close title match
with agreeing year and first author.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from functions.common.models import LookupKind, WorkMetadata
from functions.common.observability import get_logger
from functions.common.text import fold
from functions.extract.frontmatter import clean_abstract
from functions.extract.identifiers import NOTHING_REQUESTED, DocumentIdentifiers, RequestedIdentifiers

logger = get_logger("extract")

FIELDS = ("title", "authors", "year", "venue", "abstract")
DOI_SOURCES = ("crossref", "openalex")
ARXIV_SOURCES = ("arxiv",)
FILL_SOURCE = "semantic_scholar"
TITLE_SEARCH_SOURCE = "crossref"
TITLE_MATCH = 92  # rapidfuzz ratio of normalised titles for a title-search hit
TITLE_ON_PAGE = 90  # partial ratio of a record's title against the front pages' text
MIN_ABSTRACT_CHARS = 80
_VERSION = re.compile(r"v\d+$")


class ScholarlyMetadata(Protocol):
    """Port to the scholarly registries. Implementations bound each call by `timeout` seconds and
    return an empty list for unknown works and for failures alike (never raise)."""

    async def lookup(
        self, source: str, kind: LookupKind, value: str, timeout: float
    ) -> list[WorkMetadata]: ...


@runtime_checkable
class AnswerMemory(Protocol):
    """Takes a registry answer the caller fetched itself for the same request as `lookup(source, kind,
    value)` would send (the open-access lookup of a DOI reads the DOI's Crossref and OpenAlex records),
    so that a later lookup is answered without asking again. Never raises."""

    async def remember(
        self, source: str, kind: LookupKind, value: str, status_code: int, body: bytes
    ) -> None: ...


@dataclass(slots=True)
class LayoutFacts:
    """What the layout analysis found, to confirm records against and to fall back on."""

    title: str
    authors: list[str]
    front_text: str  # text of the first pages: a record about this paper has its title there
    year: int | None = None


@dataclass(slots=True)
class ResolvedMetadata:
    """Merged fields of the accepted records and, per field, the source it came from."""

    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    abstract: str = ""
    doi: str | None = None
    arxiv_id: str | None = None
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return bool(self.sources)

    def to_json(self) -> dict[str, object]:
        return {
            "title": self.title,
            "authors": self.authors,
            "year": self.year,
            "venue": self.venue,
            "abstract": self.abstract,
            "doi": self.doi,
            "arxiv_id": self.arxiv_id,
            "sources": self.sources,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ResolvedMetadata:
        authors = data.get("authors")
        sources = data.get("sources")
        year = data.get("year")
        return cls(
            title=str(data.get("title") or ""),
            authors=[str(a) for a in authors] if isinstance(authors, list) else [],
            year=year if isinstance(year, int) else None,
            venue=str(data["venue"]) if data.get("venue") else None,
            abstract=str(data.get("abstract") or ""),
            doi=str(data["doi"]) if data.get("doi") else None,
            arxiv_id=str(data["arxiv_id"]) if data.get("arxiv_id") else None,
            sources={str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {},
        )


def normalised_title(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", fold(text)))


def surname(name: str) -> str:
    """'Smith, John' | 'John Smith' -> 'smith' (folded)."""
    name = name.split(",", 1)[0] if "," in name else (name.split() or [""])[-1]
    return normalised_title(name).replace(" ", "")


def titles_match(a: str, b: str, threshold: float = TITLE_MATCH) -> bool:
    from rapidfuzz import fuzz  # on first use, not with the handler (bench/cold_start.py)

    x, y = normalised_title(a), normalised_title(b)
    return bool(x and y) and fuzz.ratio(x, y) >= threshold


def about_this_paper(work: WorkMetadata, layout: LayoutFacts) -> bool:
    """A record found through an identifier printed in the paper may describe a cited work (a DOI
    in a footnote, an arXiv id in a reference): its title must be on the paper's front pages."""
    if not work.title:
        return False
    if layout.title and titles_match(work.title, layout.title, 85):
        return True
    from rapidfuzz import fuzz

    title, text = normalised_title(work.title), normalised_title(layout.front_text)
    return bool(title and text) and fuzz.partial_ratio(title, text) >= TITLE_ON_PAGE


def search_hit_agrees(work: WorkMetadata, layout: LayoutFacts) -> bool:
    """A title-search hit: close title, and year and first author agree where both are known."""
    if not titles_match(work.title, layout.title):
        return False
    if work.year and layout.year and abs(work.year - layout.year) > 1:
        return False
    if work.authors and layout.authors:
        layout_names = {surname(name) for name in layout.authors}
        if surname(work.authors[0]) not in layout_names:
            return False
    return True


def merge(records: Sequence[WorkMetadata]) -> ResolvedMetadata:
    """Each field from the first record (in the given order of trust) that has it."""
    resolved = ResolvedMetadata()
    for record in records:
        if not resolved.title and record.title:
            resolved.title, resolved.sources["title"] = record.title, record.source
        if not resolved.authors and record.authors:
            resolved.authors, resolved.sources["authors"] = list(record.authors), record.source
        if resolved.year is None and record.year:
            resolved.year, resolved.sources["year"] = record.year, record.source
        if not resolved.venue and record.venue:
            resolved.venue, resolved.sources["venue"] = record.venue, record.source
        abstract = clean_abstract(record.abstract or "")
        if not resolved.abstract and len(abstract) >= MIN_ABSTRACT_CHARS:
            resolved.abstract, resolved.sources["abstract"] = abstract, record.source
        resolved.doi = resolved.doi or record.doi
        resolved.arxiv_id = resolved.arxiv_id or record.arxiv_id
    return resolved


def _missing(records: Sequence[WorkMetadata]) -> bool:
    merged = merge(records)
    return not all(merged.sources.get(name) for name in ("title", "authors", "abstract"))


class MetadataResolver:
    """Runs the lookups for one paper inside a budget; whatever answered by then is used."""

    def __init__(self, port: ScholarlyMetadata, budget_seconds: float) -> None:
        self._port = port
        self._budget = budget_seconds
        self._deadline = 0.0

    def _left(self) -> float:
        return self._deadline - time.monotonic()

    async def resolve(
        self,
        identifiers: DocumentIdentifiers,
        layout: LayoutFacts,
        requested: RequestedIdentifiers = NOTHING_REQUESTED,
    ) -> ResolvedMetadata:
        self._deadline = time.monotonic() + self._budget
        accepted: list[WorkMetadata] = []
        try:
            async with asyncio.timeout(self._budget + 0.2):
                await self._collect(identifiers, layout, requested, accepted)
        except TimeoutError:
            logger.info("metadata lookups cut at the budget", budget_seconds=self._budget)
        except Exception:  # an adapter bug must not fail the extraction: keep the layout
            logger.warning("metadata lookup failed", exc_info=True)
        return merge(accepted)

    async def _collect(
        self,
        identifiers: DocumentIdentifiers,
        layout: LayoutFacts,
        requested: RequestedIdentifiers,
        accepted: list[WorkMetadata],
    ) -> None:
        arxiv_ids = _ordered(requested.arxiv_id, identifiers.arxiv_ids)[:2]
        dois = _ordered(requested.doi, identifiers.dois)[:2]
        candidates: list[tuple[LookupKind, str, bool, tuple[str, ...]]] = [
            ("arxiv", value, value == requested.arxiv_id, ARXIV_SOURCES) for value in arxiv_ids
        ]
        candidates += [("doi", value, value == requested.doi, DOI_SOURCES) for value in dois]
        for kind, value, trusted, sources in candidates:
            found = await self._ask(sources, kind, value, layout, trusted)
            if not found or _missing(found):
                # Semantic Scholar fills what is missing, or answers when the primary sources did not.
                found += await self._ask((FILL_SOURCE,), kind, value, layout, trusted or bool(found))
            if found:
                accepted.extend(found)
                return
        if len(layout.title.split()) < 4:
            return
        hits = await self._port.lookup(TITLE_SEARCH_SOURCE, "title", layout.title, self._timeout())
        hit = next((work for work in hits if search_hit_agrees(work, layout)), None)
        if hit is None:
            return
        accepted.append(hit)
        if hit.doi and _missing(accepted) and self._left() > 0.5:
            accepted.extend(await self._ask(("openalex",), "doi", hit.doi, layout, True))

    def _timeout(self) -> float:
        return max(0.1, self._left())

    async def _ask(
        self,
        sources: Sequence[str],
        kind: LookupKind,
        value: str,
        layout: LayoutFacts,
        trusted: bool,
    ) -> list[WorkMetadata]:
        """Ask `sources` concurrently; their confirmed records in the order of `sources`."""
        if self._left() <= 0.1:
            return []
        calls: list[Awaitable[list[WorkMetadata]]] = [
            self._port.lookup(source, kind, value, self._timeout()) for source in sources
        ]
        answers = await asyncio.gather(*calls, return_exceptions=True)
        records: list[WorkMetadata] = []
        for answer in answers:
            if not isinstance(answer, list):
                continue
            match = next((w for w in answer if _identifies(w, kind, value)), None)
            if match is not None and (trusted or about_this_paper(match, layout)):
                records.append(match)
        return records


def _identifies(work: WorkMetadata, kind: LookupKind, value: str) -> bool:
    """The record is the one asked for (a mirror or cache could answer with another work)."""
    if kind == "doi":
        return work.doi is None or work.doi.lower() == value.lower()
    if kind == "arxiv":
        return work.arxiv_id is None or _VERSION.sub("", work.arxiv_id) == _VERSION.sub("", value)
    return True


def _ordered(first: str | None, rest: Sequence[str]) -> list[str]:
    values = [first] if first else []
    return values + [value for value in rest if value not in values]
