"""HTTP routers: `POST /api/tools/extract` (agent API 2) and `/v1/documents` (trust API uploads).

Every route acts for the caller's team (`TeamId`): uploads belong to it, and `GET /v1/documents/{id}`
and `library://<id>` find only its documents (another team's answer 404 exactly like unknown ones)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Path, Query, Request, UploadFile
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, field_validator

from functions.common.errors import InvalidInput, NotFound
from functions.common.settings import built_from_settings, get_settings
from functions.common.web.api import TeamId
from functions.extract.errors import DocumentTooLarge

if TYPE_CHECKING:
    from functions.common.documents import DocumentRecord, DocumentRepository
    from functions.common.models import ExtractedPaper
    from functions.common.storage import BlobStore
    from functions.extract.service import ExtractionService

# The extraction service (PDF parsing: pypdfium2; the HTTP client: httpcore; the metadata connectors) and
# the AWS adapters are imported by the first request that needs them, not with the handler
# (bench/cold_start.py); under SnapStart the handler imports them before the snapshot.

ELEMENTS = ("title", "abstract", "key_findings", "methodology", "conclusions", "citations", "evidence")
UPLOAD_CHUNK = 1024 * 1024
DOCUMENT_ID_MAX_CHARS = 80
MAX_LISTED_DOCUMENTS = 1000  # DocumentRepository.all's cap


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


# What `resolve.classify` can accept (it refuses everything else, naming why): after leading whitespace,
# `library://<document id>`; or, optionally after `arxiv:` / `arxiv.org/abs/`, an arXiv id, a DOI
# (`10.<registrant>/<suffix>`, or `doi:` and text holding one), or an http(s) URL with a host (tabs and
# line breaks inside it ignored, as `urllib.parse.urlsplit` drops them). Python's `\d`, `\s`, as there.
_TAB_OR_BREAK = r"[\t\n\r]*"
SOURCE_URL_PATTERN = (
    r"^[\x00-\x20\s]*(library:///*doc-[0-9a-f]{8,64}\n?/*\s*$"
    r"|([Aa][Rr][Xx][Ii][Vv](:|\.[Oo][Rr][Gg]/[Aa][Bb][Ss]/))?("
    r"(\d{4}\.\d{4,5}|[a-z][a-z.-]+(\.[A-Z]{2})?/\d{7})(v\d+)?\s*$"
    r"|([Dd][Oo][Ii]:[\s\S]*)?10\.\d{4,9}/\S"
    r"|[\x00-\x20]*[Hh]{w}[Tt]{w}[Tt]{w}[Pp]{w}([Ss]{w})?:{w}/{w}/{w}[^/?#\t\n\r]))"
).replace("{w}", _TAB_OR_BREAK)


class ExtractRequest(BaseModel):
    # the pattern is documentation; `classify` refuses what it does not accept, with its own message
    source_url: str = Field(
        min_length=1,
        max_length=2048,
        description="What to extract from: an http(s) URL; an arXiv id (`2101.00001`, `arxiv:2101.00001v2`, "
        "`hep-th/9901001`, or an arxiv.org abs, pdf or html URL); a DOI (`10.1234/abc`, `doi:10.1234/abc`, or a "
        "doi.org URL); or `library://<document_id>`, a document your team uploaded (`POST /v1/documents`). "
        "Surrounding whitespace is ignored.",
        examples=[
            "arxiv:2101.00001",
            "10.1038/nature14539",
            "https://arxiv.org/pdf/2101.00001v2",
            "library://doc-0123456789abcdef",
        ],
        json_schema_extra={"pattern": SOURCE_URL_PATTERN},
    )
    extraction_parameters: ExtractionParameters | None = None


@built_from_settings
@lru_cache(maxsize=1)
def _blobs() -> BlobStore:
    from functions.common.storage import S3BlobStore

    return S3BlobStore(get_settings().data_bucket)


@built_from_settings
@lru_cache(maxsize=1)
def _documents() -> DocumentRepository:
    from functions.common.documents import DynamoDocumentRepository

    return DynamoDocumentRepository()


async def get_service() -> AsyncIterator[ExtractionService]:
    """One HTTP client per request (clients are bound to an event loop); storage adapters are shared."""
    from functions.common.outbound.http import HttpClient
    from functions.extract.metadata_connectors import ConnectorMetadata, lookup_cache
    from functions.extract.service import ExtractionService

    settings = get_settings()
    http = HttpClient(settings, purpose="fetch")
    service = ExtractionService(
        http=http,
        # a team's own source_url is reached under its own allow-list, never the connectors'
        source_http=lambda: HttpClient(settings, purpose="extract"),
        blobs=_blobs(),
        documents=_documents(),
        settings=settings,
        metadata=ConnectorMetadata.from_settings(settings, http, cache=lookup_cache()),
    )
    try:
        yield service
    finally:
        await service.aclose()  # its clients: `http` and the source client, if one was built


ServiceDep = Annotated["ExtractionService", Depends(get_service)]


class DocumentView(BaseModel):
    """An uploaded document as the API shows it."""

    document_id: str
    filename: str
    uploaded_at: str = Field(description="UTC, ISO 8601 to the second")
    size_bytes: int
    status: str = Field(description='"indexed" (parsed and searchable) or "failed"')
    pages: int
    title: str
    source_url: str = Field(description="library://<document_id>: cite or extract it like any source")

    @classmethod
    def of(cls, record: DocumentRecord) -> DocumentView:
        shown = {name: getattr(record, name) for name in cls.model_fields}
        return cls(**{**shown, "uploaded_at": _utc_seconds(record.uploaded_at)})


class DocumentList(BaseModel):
    documents: list[DocumentView]
    count: int


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
) -> DocumentView:
    if not document_id.startswith("doc-") or len(document_id) > DOCUMENT_ID_MAX_CHARS:
        raise InvalidInput(f"not a document id: {document_id!r}", field="document_id")
    record = await asyncio.to_thread(service.get_document, team, document_id)
    if record is None:
        raise NotFound(f"no document {document_id}")
    return DocumentView.of(record)


@documents_router.get("/v1/documents")
async def list_documents(
    service: ServiceDep,
    team: TeamId,
    limit: Annotated[int, Query(ge=1, le=MAX_LISTED_DOCUMENTS, description="at most this many")] = 100,
) -> DocumentList:
    """The team's uploaded documents, newest first, each as `GET /v1/documents/{document_id}` shows it."""
    records = await asyncio.to_thread(service.list_documents, team, limit)
    return DocumentList(documents=[DocumentView.of(record) for record in records], count=len(records))
