"""Domain models shared between functions (search, extract, orchestrate). Free of FastAPI and boto3.

API request/response models that follow one seed contract live with the router that serves them;
these are the internal shapes that travel between services and state-machine steps.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, TypedDict, Unpack

from pydantic import BaseModel, Field, field_validator

from functions.common.untrusted import clean_untrusted

_DOI = re.compile(r"10\.\d{4,9}/\S+", re.IGNORECASE)
# arXiv's DataCite DOIs ("10.48550/arxiv.2101.01234"): the arXiv id says more.
ARXIV_DOI_PREFIX = "10.48550/arxiv."
# How a scholarly registry is asked for one work.
LookupKind = Literal["doi", "arxiv", "title"]


def normalise_doi(value: str | None) -> str | None:
    """'https://doi.org/10.1/ABC' -> '10.1/abc'; None when there is no DOI in the value."""
    if not value:
        return None
    match = _DOI.search(value.strip())
    return match.group(0).rstrip(".,;").lower() if match else None


def _untrusted(value: Any) -> Any:
    """Text fields read from papers and upstream APIs, cleaned (see functions.common.untrusted)."""
    if isinstance(value, str):
        return clean_untrusted(value)
    if isinstance(value, list):
        return [clean_untrusted(item) if isinstance(item, str) else item for item in value]
    return value


def short_hash(value: str, length: int = 8) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:length]


class Paper(BaseModel):
    """One scholarly work, normalised from any connector, merged across connectors."""

    title: str
    url: str  # fetchable: arXiv abs URL, DOI URL or open-access PDF
    abstract: str | None = None
    year: int | None = None
    authors: list[str] = Field(default_factory=list)  # "LastName, F."
    venue: str | None = None
    doi: str | None = None  # "10.xxxx/xxxxx", lower-cased
    arxiv_id: str | None = None  # without version, e.g. "2401.12345"
    citations: int | None = None
    pdf_url: str | None = None  # open-access PDF when known
    open_access: bool | None = None
    # OpenAlex's `is_retracted` (None: no registry said); living reviews report newly retracted sources.
    is_retracted: bool | None = None
    source: (
        str  # connector that found it first ("arxiv", "semantic_scholar", "openalex", "crossref", "library")
    )
    found_by: list[str] = Field(default_factory=list)  # every connector that returned it
    upstream_rank: int | None = None  # 1-based rank in the connector's own answer
    relevance_score: float = 0.0  # 0..1, comparable across connectors
    quality_score: float = 0.0  # 0..1, from citations, venue and recency

    _clean = field_validator("title", "abstract", "authors", "venue", mode="after")(_untrusted)

    @property
    def canonical_id(self) -> str:
        """arXiv id, else DOI, else a hash of the URL: the key of caches and de-duplication."""
        if self.arxiv_id:
            return f"arxiv:{self.arxiv_id}"
        if self.doi:
            return f"doi:{self.doi}"
        return f"url:{short_hash(self.url, 16)}"


class EvidenceQuote(BaseModel):
    """A verbatim, page-located quote from a document (the handover seed's quote shape)."""

    quote: str
    page: int  # 1-based physical page of the PDF
    char_start: int  # offsets into that page's normalised text
    char_end: int
    section: str | None = None  # section context, e.g. "Results"
    kind: str = "quote"  # "finding", "method", "limitation", "future_work", "quote"
    relevance_score: float = 0.0

    _clean = field_validator("quote", "section", mode="after")(_untrusted)


class ExtractedPaper(BaseModel):
    """What extraction produces for one source; cached by canonical id."""

    source_url: str
    canonical_id: str
    success: bool
    failure_reason: str | None = None
    title: str = ""
    authors: list[str] = Field(default_factory=list)
    abstract: str = ""
    key_findings: list[str] = Field(default_factory=list)
    methodology: str = ""
    citations: list[str] = Field(default_factory=list)
    sections: list[str] = Field(default_factory=list)
    evidence: list[EvidenceQuote] = Field(default_factory=list)
    page_count: int = 0
    confidence_score: float = 0.0
    pdf_sha256: str | None = None
    extracted_at: datetime | None = None
    # Bibliographic fields, from a scholarly registry when the paper's identifier led to one.
    year: int | None = None
    venue: str | None = None
    identifiers: dict[str, str] = Field(default_factory=dict)  # "doi", "arxiv_id"
    # Where each of title/authors/abstract/year/venue came from: "layout" or a registry's name.
    metadata_sources: dict[str, str] = Field(default_factory=dict)

    _clean = field_validator(
        "title",
        "authors",
        "abstract",
        "key_findings",
        "methodology",
        "citations",
        "sections",
        "venue",
        mode="after",
    )(_untrusted)


@dataclass(frozen=True, slots=True)
class WorkMetadata:
    """One work as a scholarly registry describes it when asked by identifier or title (the search
    connectors' lookups produce it, extraction merges it): full author names as printed (the search
    format "Family, I." drops given names), abstract as plain text."""

    source: str  # the registry: "arxiv", "crossref", "openalex", "semantic_scholar"
    title: str = ""
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    abstract: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    url: str | None = None  # the registry's landing page of the work
    # Whether the registry marks the work retracted (OpenAlex `is_retracted`, a Crossref retraction
    # notice in `updated-by`); None: the registry does not say.
    is_retracted: bool | None = None


class ExtractOptions(TypedDict, total=False):
    """How a paper's full text is read (each has a default: functions/extract/service.py)."""

    focus_areas: list[str] | None
    max_length: int
    budget_seconds: float
    team_id: str | None  # `library://` sources resolve within this team's documents only (None: none)
    job_id: str | None  # with `priority`: where the fetches queue at a provider
    priority: int
    # the most one fetch waits for its turn at a provider before the call is deferred (TurnDeferred);
    # None: it waits as long as the budget allows (an interactive caller waits for its answer)
    turn_wait_seconds: float | None


class FullTextPort(Protocol):
    """What gives a paper's full text (functions/extract implements it; research, orchestrate and
    metering use it)."""

    async def extract(self, source_url: str, **options: Unpack[ExtractOptions]) -> ExtractedPaper: ...
