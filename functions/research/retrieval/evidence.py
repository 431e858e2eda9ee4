"""What the writers and checkers read: fused sources and the evidence chunks cut from them.

A chunk is verbatim text of its source, located by character offsets into the text it came from (the
abstract, one page of the parsed PDF, or an uploaded document's page), so a citation can point at
exactly the quoted span: `origin_text[char_start:char_end] == text`. The answer engine cuts its chunks
from what it retrieves ("chunk-…"); the research job's are the screened quotes of its extracted papers
("ev-…", functions/research/job/evidence.py), each with the kind of statement the extraction found.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from functions.common.models import short_hash

ABSTRACT, PAGE = "abstract", "page"


def source_id_for(connector_prefix: str, url: str) -> str:
    """The multi-source contract's id: `{connector_prefix}_{hash of the URL}` (the URL de-duplicates)."""
    return f"{connector_prefix}_{short_hash(url)}"


def chunk_id_for(source_id: str, origin: str, page: int | None, char_start: int) -> str:
    return "chunk-" + short_hash(f"{source_id}|{origin}|{page}|{char_start}", 10)


@dataclass(frozen=True)
class SourceDoc:
    source_id: str
    title: str
    url: str
    connector: str
    score: float  # reciprocal-rank fusion over every query and connector that returned it
    snippet: str  # the abstract (or a metadata line when there is none)
    published_at: str | None  # ISO 8601; only the year is known for most papers: January 1st
    year: int | None = None
    authors: list[str] = field(default_factory=list)
    doi: str | None = None
    venue: str | None = None
    citations: int | None = None
    relevance: float = 0.0  # calibrated probability that the source is about the question
    answers_question: bool = False  # relevant to the question as a whole, not only one of its concepts
    document_id: str | None = None  # an uploaded document's id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EvidenceChunk:
    chunk_id: str
    source_id: str
    text: str
    score: float  # rank against the question, 0..1
    origin: str  # ABSTRACT or PAGE
    page: int | None
    char_start: int
    char_end: int
    section: str | None = None
    kind: str | None = None  # a job's quote: "finding", "method", "limitation", "future_work", ...

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def published_at(year: int | None) -> str | None:
    """A source's publication date as the contracts write it, from its year alone."""
    return f"{year:04d}-01-01T00:00:00Z" if year else None
