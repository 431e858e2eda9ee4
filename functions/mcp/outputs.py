"""Output models of the routes whose FastAPI handler declares none (they answer a dict), as their
bodies are: each tool's `outputSchema` is its output model's serialization schema, so these describe
what `POST /api/tools/extract` answers (functions/extract/api.py `extraction_response`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Open(BaseModel):
    """A body that may grow additive fields: they are allowed, the ones named are checked."""

    model_config = ConfigDict(extra="allow")


class EvidenceQuote(_Open):
    """A page-located quote: `quote` verbatim on `page` (null for an abstract)."""

    quote: str
    page: int | None


class ExtractedContent(_Open):
    title: str
    abstract: str
    key_findings: list[Any]
    methodology: Any
    citations: list[Any]
    evidence: list[EvidenceQuote]


class ExtractionMetadata(_Open):
    extraction_success: bool
    source_url: str
    extraction_timestamp: str


class ExtractionMetrics(_Open):
    processing_time_ms: float
    confidence_score: float


class ExtractResponse(_Open):
    """POST /api/tools/extract."""

    extracted_content: ExtractedContent
    metadata: ExtractionMetadata
    extraction_metrics: ExtractionMetrics
