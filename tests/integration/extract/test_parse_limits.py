"""A decompression bomb is refused with 422 in each route's error format, by upload and by URL alike,
with nothing of it stored; another team's small upload at the same time is indexed."""

from __future__ import annotations

import asyncio

from fastapi.testclient import TestClient

from functions.common.documents import DocumentRecord, InMemoryDocumentRepository
from functions.common.storage import InMemoryBlobStore
from functions.extract.errors import UnprocessableDocument
from functions.extract.service import ExtractionService
from tests.integration.extract.conftest import Harness
from tests.support.pdfgen import bomb_pdf, sample_paper_pdf
from tests.support.scholarly_web import ScholarlyWeb

REFUSAL = (
    "the PDF exceeds the parsing limits: a stream decompresses to more than the 64 MiB allowed per stream"
)


def test_an_uploaded_bomb_is_422_in_the_trust_format_and_nothing_is_stored(
    api: TestClient, blobs: InMemoryBlobStore, documents: InMemoryDocumentRepository
) -> None:
    response = api.post("/v1/documents", files={"file": ("figures.pdf", bomb_pdf(), "application/pdf")})
    assert response.status_code == 422
    assert response.json() == {
        "error": {"code": "unprocessable_document", "message": REFUSAL, "details": {"field": "file"}}
    }
    assert blobs.list_keys("") == []
    assert api.get("/v1/documents").json() == {"documents": [], "count": 0}


def test_a_bomb_at_an_extraction_url_is_422_in_the_agent_format_and_nothing_is_stored(
    api: TestClient, web: ScholarlyWeb, blobs: InMemoryBlobStore
) -> None:
    web.set_response("/figures.pdf", bomb_pdf(), content_type="application/pdf")
    response = api.post("/api/tools/extract", json={"source_url": web.url("/figures.pdf")})
    assert response.status_code == 422
    assert response.json() == {"error": "UNPROCESSABLE_DOCUMENT", "message": REFUSAL, "field": "source_url"}
    assert blobs.list_keys("") == []


def test_another_teams_small_upload_is_indexed_while_a_bomb_is_refused(harness: Harness) -> None:
    async def both(service: ExtractionService) -> tuple[DocumentRecord | BaseException, ...]:
        return await asyncio.gather(
            service.ingest_upload("team-bomb", bomb_pdf(), "figures.pdf"),
            service.ingest_upload("team-small", sample_paper_pdf(), "routing.pdf"),
            return_exceptions=True,
        )

    refused, indexed = harness.run(both)
    assert isinstance(refused, UnprocessableDocument) and refused.message == REFUSAL
    assert isinstance(indexed, DocumentRecord) and indexed.status == "indexed" and indexed.pages == 2
    assert harness.documents.all("team-bomb") == []
    assert harness.blobs.list_keys("teams/team-bomb/") == []
