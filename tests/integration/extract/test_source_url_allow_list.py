"""A team's own `source_url` is fetched under EXTRACT_ALLOW_PRIVATE_HOSTS, never under the connectors'
FETCH_ALLOW_PRIVATE_HOSTS: through the extract API's real wiring (`get_service`), on in-memory storage."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.common.documents import InMemoryDocumentRepository
from functions.common.settings import reset_settings_cache
from functions.common.storage import InMemoryBlobStore, InMemoryTtlCache
from functions.extract import api as extract_api
from functions.extract import metadata_connectors
from tests.support.pdfgen import sample_paper_pdf
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = pytest.mark.integration

PDF = sample_paper_pdf()


@pytest.fixture
def client(web: ScholarlyWeb, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    from functions.extract.app import app

    blobs, documents = InMemoryBlobStore(), InMemoryDocumentRepository()
    monkeypatch.setattr(extract_api, "_blobs", lambda: blobs)
    monkeypatch.setattr(extract_api, "_documents", lambda: documents)
    monkeypatch.setattr(metadata_connectors, "lookup_cache", InMemoryTtlCache)
    monkeypatch.setenv("SEARCH_TURNS_BACKEND", "memory")  # turns at the providers in this process
    web.set_response("/arxiv-site/pdf/2401.12345", PDF, content_type="application/pdf")
    web.set_response("/team/paper.pdf", PDF, content_type="application/pdf")
    with TestClient(app) as test_client:
        yield test_client


def test_a_team_url_on_a_host_listed_only_for_the_connectors_is_refused(
    client: TestClient, web: ScholarlyWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXTRACT_ALLOW_PRIVATE_HOSTS", "")
    reset_settings_cache()

    refused = client.post("/api/tools/extract", json={"source_url": web.url("/team/paper.pdf")})
    assert refused.status_code == 400
    assert "private or reserved address" in refused.json()["message"]
    # the connectors still reach the same host: an arXiv id is fetched from ARXIV_PDF_BASE_URL
    found = client.post("/api/tools/extract", json={"source_url": "arXiv:2401.12345"})
    assert found.status_code == 200 and found.json()["metadata"]["extraction_success"] is True


def test_a_team_url_on_a_host_listed_for_extraction_is_fetched(
    client: TestClient, web: ScholarlyWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FETCH_ALLOW_PRIVATE_HOSTS", "")
    monkeypatch.setenv("EXTRACT_ALLOW_PRIVATE_HOSTS", web.host_port)
    reset_settings_cache()

    response = client.post("/api/tools/extract", json={"source_url": web.url("/team/paper.pdf")})
    assert response.status_code == 200 and response.json()["metadata"]["extraction_success"] is True
