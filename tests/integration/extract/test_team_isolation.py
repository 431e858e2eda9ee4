"""Uploaded documents belong to their team: another team's id reads exactly like an unknown one, through
the service and through the routes, and an upload's files and cached parse live under its team only."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from functions.common.documents import InMemoryDocumentRepository
from functions.common.models import ExtractedPaper
from functions.common.settings import reset_settings_cache
from functions.common.storage import InMemoryBlobStore
from functions.common.tenancy import DEFAULT_TEAM, TEAM_HEADER
from functions.extract.errors import SourceUnavailable
from functions.extract.parse_cache import document_keys, document_pdf_key
from functions.extract.service import ExtractionService
from tests.integration.extract.conftest import Harness
from tests.support.pdfgen import SAMPLE_TITLE, sample_paper_pdf

PDF = sample_paper_pdf()
TEAM_A, TEAM_B = "team-a", "team-b"
UNKNOWN = "doc-000000000000000000000000"


def _upload(harness: Harness, team_id: str) -> str:
    record = harness.run(lambda s: s.ingest_upload(team_id, PDF, "routing.pdf"))
    assert record.team_id == team_id
    return record.document_id


def _extract_as(harness: Harness, source_url: str, team_id: str | None) -> ExtractedPaper:
    async def extract(service: ExtractionService) -> ExtractedPaper:
        return await service.extract(source_url, team_id=team_id)

    return harness.run(extract)


def _refusal(harness: Harness, source_url: str, team_id: str | None) -> str:
    async def extract(service: ExtractionService) -> None:
        await service.extract(source_url, team_id=team_id)

    with pytest.raises(SourceUnavailable) as raised:
        harness.run(extract)
    return raised.value.message


def test_an_upload_is_stored_under_its_team_only(
    harness: Harness, blobs: InMemoryBlobStore, documents: InMemoryDocumentRepository
) -> None:
    document_id = _upload(harness, TEAM_A)
    prefix = f"teams/{TEAM_A}/documents/{document_id}/"
    assert blobs.list_keys("") == sorted(
        [prefix + "original.pdf", prefix + "pages.json", prefix + "paper.json"]
    )
    record = documents.get(TEAM_A, document_id)
    assert record is not None
    assert record.pdf_key == document_pdf_key(TEAM_A, document_id)
    assert record.parsed_key == document_keys(TEAM_A, document_id).parsed
    assert documents.get(TEAM_B, document_id) is None
    assert harness.run(lambda s: _get(s, TEAM_B, document_id)) is None
    assert harness.run(lambda s: _get(s, TEAM_A, document_id)) == record


async def _get(service: ExtractionService, team_id: str, document_id: str) -> object:
    return service.get_document(team_id, document_id)


def test_library_extraction_resolves_only_within_the_team(harness: Harness) -> None:
    document_id = _upload(harness, TEAM_A)
    source = f"library://{document_id}"
    paper = _extract_as(harness, source, TEAM_A)
    assert paper.success and paper.title == SAMPLE_TITLE
    assert harness.last is not None and harness.last.stats.cache_hits == 1, "served from A's own parse"
    unknown = _refusal(harness, f"library://{UNKNOWN}", TEAM_B)
    for team_id in (TEAM_B, DEFAULT_TEAM, None, "not a team"):
        # A's parse is cached, yet neither another team nor a caller without one is served it.
        message = _refusal(harness, source, team_id)
        assert message == unknown.replace(UNKNOWN, document_id), team_id
        assert harness.last is not None and harness.last.stats.cache_hits == 0


def test_the_same_file_uploaded_by_two_teams_is_two_private_documents(
    harness: Harness, blobs: InMemoryBlobStore
) -> None:
    first = _upload(harness, TEAM_A)
    second = _upload(harness, TEAM_B)
    assert first == second, "content-addressed ids"
    assert blobs.list_keys(f"teams/{TEAM_B}/documents/{second}/")
    for team_id in (TEAM_A, TEAM_B):
        assert _extract_as(harness, f"library://{first}", team_id).success
    assert not blobs.list_keys("pdfs/") and not blobs.list_keys("parsed/"), "nothing in the shared space"


def test_the_api_answers_another_teams_document_exactly_like_an_unknown_one(api: TestClient) -> None:
    as_a, as_b = {TEAM_HEADER: TEAM_A}, {TEAM_HEADER: TEAM_B}
    created = api.post("/v1/documents", files={"file": ("routing.pdf", PDF, "application/pdf")}, headers=as_a)
    assert created.status_code == 201, created.text
    document_id = created.json()["document_id"]
    assert api.get(f"/v1/documents/{document_id}", headers=as_a).json()["status"] == "indexed"

    def like_unknown(body: object) -> object:
        return json.loads(json.dumps(body).replace(UNKNOWN, document_id))

    unknown_get = api.get(f"/v1/documents/{UNKNOWN}", headers=as_b)
    assert unknown_get.status_code == 404
    for headers in (as_b, {}):  # {}: the default team
        theirs = api.get(f"/v1/documents/{document_id}", headers=headers)
        assert theirs.status_code == 404 and theirs.json() == like_unknown(unknown_get.json())

    extracted = api.post("/api/tools/extract", json={"source_url": f"library://{document_id}"}, headers=as_a)
    assert extracted.status_code == 200 and extracted.json()["metadata"]["extraction_success"] is True
    unknown_extract = api.post(
        "/api/tools/extract", json={"source_url": f"library://{UNKNOWN}"}, headers=as_b
    )
    assert unknown_extract.status_code == 404
    for headers in (as_b, {}):
        theirs = api.post(
            "/api/tools/extract", json={"source_url": f"library://{document_id}"}, headers=headers
        )
        assert theirs.status_code == 404 and theirs.json() == like_unknown(unknown_extract.json())


def test_a_request_without_a_team_is_401_in_each_contracts_format(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_SOURCE", "authorizer")  # on AWS, and no authorizer context here
    reset_settings_cache()
    upload = api.post("/v1/documents", files={"file": ("routing.pdf", PDF, "application/pdf")})
    assert upload.status_code == 401
    assert upload.json()["error"]["code"] == "unauthorized" and upload.json()["error"]["details"] == {}
    shown = api.get(f"/v1/documents/{UNKNOWN}")
    assert shown.status_code == 401 and shown.json()["error"]["code"] == "unauthorized"
    extracted = api.post("/api/tools/extract", json={"source_url": f"library://{UNKNOWN}"})
    assert extracted.status_code == 401 and extracted.json()["error"] == "UNAUTHORIZED"
    assert extracted.json()["message"]


def test_the_list_shows_the_callers_team_only_newest_first(api: TestClient) -> None:
    as_a, as_b = {TEAM_HEADER: TEAM_A}, {TEAM_HEADER: TEAM_B}
    first = api.post("/v1/documents", files={"file": ("first.pdf", PDF, "application/pdf")}, headers=as_a)
    other = sample_paper_pdf(title="A second paper on routing")
    second = api.post("/v1/documents", files={"file": ("second.pdf", other, "application/pdf")}, headers=as_a)
    assert first.status_code == 201 and second.status_code == 201, (first.text, second.text)

    listed = api.get("/v1/documents", headers=as_a)
    assert listed.status_code == 200
    body = listed.json()
    assert body["count"] == 2
    assert [doc["filename"] for doc in body["documents"]] == ["second.pdf", "first.pdf"]
    shown = api.get(f"/v1/documents/{second.json()['document_id']}", headers=as_a).json()
    assert body["documents"][0] == shown, "each entry reads as its own GET does"
    assert api.get("/v1/documents", params={"limit": 1}, headers=as_a).json()["count"] == 1

    for headers in (as_b, {}):  # another team, and the default team
        theirs = api.get("/v1/documents", headers=headers)
        assert theirs.status_code == 200 and theirs.json() == {"documents": [], "count": 0}

    refused = api.get("/v1/documents", params={"limit": 0}, headers=as_a)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_request"
