"""HTTP routers: `POST /api/tools/extract` (agent API 2) and `/v1/documents` (trust API uploads).

Every route acts for the caller's team (`TeamId`): uploads belong to it, and `GET /v1/documents/{id}`
and `library://<id>` find only its documents (another team's answer 404 exactly like unknown ones)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Path, Request, UploadFile
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, field_validator

from functions.common.api import TeamId
from functions.common.errors import InvalidInput, NotFound
from functions.common.http import HttpClient
from functions.common.models import ExtractedPaper
from functions.common.rate_limit import DynamoDbRateLimiter, InMemoryRateLimiter, RateLimiter
from functions.common.settings import get_settings
from functions.common.storage import BlobStore, DynamoDbTtlCache, InMemoryTtlCache, S3BlobStore, TtlCache
from functions.extract.documents import DocumentRepository, DynamoDocumentRepository
from functions.extract.errors import DocumentTooLarge
from functions.extract.metadata_connectors import ConnectorMetadata
from functions.extract.service import ExtractionService
from functions.search.config import SearchSettings

ELEMENTS = ("title", "abstract", "key_findings", "methodology", "conclusions", "citations", "evidence")
UPLOAD_CHUNK = 1024 * 1024
DOCUMENT_ID_MAX_CHARS = 80


class ExtractionParameters(BaseModel):
    focus_areas: list[str] = Field(default_factory=list, max_length=20)
    required_elements: list[Annotated[str, Field(json_schema_extra={"enum": list(ELEMENTS)})]] | None = None
    max_length: int = Field(default=5000, ge=200, le=100_000)

    @field_validator("required_elements")
    @classmethod
    def _known_elements(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        unknown = [v for v in value if v not in ELEMENTS]
        if unknown:
            raise ValueError(f"unknown element(s) {unknown}; use any of {list(ELEMENTS)}")
        return value


class ExtractRequest(BaseModel):
    source_url: str = Field(min_length=1, max_length=2048)
    extraction_parameters: ExtractionParameters | None = None


@lru_cache(maxsize=1)
def _blobs() -> BlobStore:
    return S3BlobStore(get_settings().data_bucket)


@lru_cache(maxsize=1)
def _documents() -> DocumentRepository:
    return DynamoDocumentRepository()


@lru_cache(maxsize=1)
def _lookup_cache() -> TtlCache:
    return InMemoryTtlCache() if SearchSettings().state_backend == "memory" else DynamoDbTtlCache()


@lru_cache(maxsize=1)
def _lookup_limiter() -> RateLimiter:
    return InMemoryRateLimiter() if SearchSettings().state_backend == "memory" else DynamoDbRateLimiter()


async def get_service() -> AsyncIterator[ExtractionService]:
    """One HTTP client per request (clients are bound to an event loop); storage adapters are shared."""
    settings = get_settings()
    http = HttpClient(settings)
    try:
        yield ExtractionService(
            http=http,
            blobs=_blobs(),
            documents=_documents(),
            settings=settings,
            metadata=ConnectorMetadata.from_settings(
                settings, http, cache=_lookup_cache(), limiter=_lookup_limiter()
            ),
        )
    finally:
        await http.aclose()


ServiceDep = Annotated[ExtractionService, Depends(get_service)]
tools_router = APIRouter(tags=["tools"])
documents_router = APIRouter(tags=["documents"])


def extraction_response(
    paper: ExtractedPaper, source_url: str, elements: list[str] | None, elapsed_ms: float
) -> dict[str, Any]:
    wanted = set(elements or ELEMENTS) | {"title", "abstract"}
    concluding = [
        q for q in paper.evidence if q.kind == "conclusion" or "conclu" in (q.section or "").lower()
    ]
    conclusions = " ".join(q.quote for q in sorted(concluding, key=lambda q: (q.page, q.char_start)))
    content: dict[str, Any] = {
        "title": paper.title,
        "abstract": paper.abstract,
        "key_findings": paper.key_findings if "key_findings" in wanted else [],
        "methodology": paper.methodology if "methodology" in wanted else "",
        "citations": paper.citations if "citations" in wanted else [],
    }
    if "conclusions" in wanted:
        content["conclusions"] = conclusions
    if paper.success:
        content["authors"] = paper.authors
        content["sections"] = paper.sections
        if paper.year is not None:
            content["year"] = paper.year
        if paper.venue:
            content["venue"] = paper.venue
    # Additive: page-located quotes (always returned; a later synthesis cites them).
    content["evidence"] = [q.model_dump() for q in paper.evidence]
    metadata: dict[str, Any] = {
        "extraction_success": paper.success,
        "source_url": source_url,
        "extraction_timestamp": _utc_seconds(datetime.now(UTC)),
        "canonical_id": paper.canonical_id,
        "page_count": paper.page_count,
        # Additive: identifiers found, and which source (a registry or the layout) gave each field.
        "identifiers": paper.identifiers,
        "metadata_sources": paper.metadata_sources,
    }
    if not paper.success:
        metadata["failure_reason"] = paper.failure_reason or "extraction failed"
    return {
        "extracted_content": content,
        "metadata": metadata,
        "extraction_metrics": {
            "processing_time_ms": round(elapsed_ms, 1),
            "confidence_score": paper.confidence_score if paper.success else 0.0,
        },
    }


def _utc_seconds(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@tools_router.post("/api/tools/extract")
async def extract(body: ExtractRequest, service: ServiceDep, team: TeamId) -> dict[str, Any]:
    started = time.perf_counter()
    parameters = body.extraction_parameters or ExtractionParameters()
    paper = await service.extract(
        body.source_url,
        focus_areas=parameters.focus_areas,
        max_length=parameters.max_length,
        budget_seconds=get_settings().extract_budget_seconds,
        team_id=team,
    )
    elapsed = (time.perf_counter() - started) * 1000
    return extraction_response(paper, body.source_url, parameters.required_elements, elapsed)


async def _read_capped(upload: UploadFile, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := await upload.read(UPLOAD_CHUNK):
        size += len(chunk)
        if size > limit:
            raise DocumentTooLarge(f"file exceeds the {limit} byte limit", field="file")
        chunks.append(chunk)
    return b"".join(chunks)


@documents_router.post("/v1/documents", status_code=201)
async def upload_document(
    request: Request,
    service: ServiceDep,
    team: TeamId,
    file: Annotated[UploadFile, File(description="the PDF")],
    metadata: Annotated[str | None, Form(description="optional JSON object: title, authors, year")] = None,
) -> JSONResponse:
    limit = get_settings().upload_max_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit + 64 * 1024:
        raise DocumentTooLarge(f"upload of {declared} bytes exceeds the {limit} byte limit", field="file")
    data = await _read_capped(file, limit)
    record = await service.ingest_upload(team, data, file.filename or "document.pdf", metadata)
    return JSONResponse(
        status_code=201,
        content={"document_id": record.document_id, "status": record.status, "pages": record.pages},
    )


@documents_router.get("/v1/documents/{document_id}")
async def get_document(
    document_id: Annotated[
        str, Path(json_schema_extra={"pattern": "^doc-", "maxLength": DOCUMENT_ID_MAX_CHARS})
    ],
    service: ServiceDep,
    team: TeamId,
) -> dict[str, Any]:
    if not document_id.startswith("doc-") or len(document_id) > DOCUMENT_ID_MAX_CHARS:
        raise InvalidInput(f"not a document id: {document_id!r}", field="document_id")
    record = await asyncio.to_thread(service.get_document, team, document_id)
    if record is None:
        raise NotFound(f"no document {document_id}")
    return {
        "document_id": record.document_id,
        "filename": record.filename,
        "uploaded_at": _utc_seconds(record.uploaded_at),
        "size_bytes": record.size_bytes,
        "status": record.status,
        "pages": record.pages,
        "title": record.title,
        "source_url": record.source_url,
    }
