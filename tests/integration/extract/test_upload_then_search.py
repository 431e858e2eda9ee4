"""Upload -> search -> extract on the embedded AWS (moto S3 + DynamoDB): a PDF uploaded through
/v1/documents is found by /api/tools/search through the `library` connector and extracts with evidence."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.common.settings import reset_settings_cache
from functions.local_runtime.aws import EmbeddedAws
from tests.support.pdfgen import SAMPLE_TITLE, sample_paper_pdf

pytestmark = pytest.mark.integration


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedAws]:
    # Only the team's library is searched, so the test needs no scholarly upstream.
    monkeypatch.setenv("SEARCH_CONNECTORS", "library")
    with EmbeddedAws(step_functions=[], state_machines=[]) as embedded:
        reset_settings_cache()
        yield embedded


@pytest.fixture
def apps(aws: EmbeddedAws) -> Iterator[tuple[TestClient, TestClient]]:
    from functions.extract.app import app as extract_app
    from functions.search.app import app as search_app

    with TestClient(extract_app) as extract, TestClient(search_app) as search:
        yield extract, search


def test_uploaded_pdf_is_found_by_library_search_and_extracts(apps: tuple[TestClient, TestClient]) -> None:
    extract, search = apps
    for _ in (1,):
        uploaded = extract.post(
            "/v1/documents",
            files={"file": ("routing.pdf", sample_paper_pdf(), "application/pdf")},
            data={"metadata": json.dumps({"year": 2024})},
        )
        assert uploaded.status_code == 201, uploaded.text
        document_id = uploaded.json()["document_id"]
        assert extract.get(f"/v1/documents/{document_id}").json()["status"] == "indexed"

        found = search.post("/api/tools/search", json={"query": "sparse attention routing long documents"})
        assert found.status_code == 200, found.text
        results = found.json()["results"]
        assert results, found.text
        assert results[0]["title"] == SAMPLE_TITLE
        assert results[0]["url"] == f"library://{document_id}"

        extracted = extract.post("/api/tools/extract", json={"source_url": results[0]["url"]})
        body = extracted.json()
        assert extracted.status_code == 200 and body["metadata"]["extraction_success"] is True
        assert body["extracted_content"]["evidence"] and body["extracted_content"]["evidence"][0]["page"] >= 1

        unrelated = search.post("/api/tools/search", json={"query": "marine crenarchaeota nitrification"})
        assert unrelated.json()["results"] == []


def test_another_team_neither_finds_nor_reads_the_upload(apps: tuple[TestClient, TestClient]) -> None:
    """On DynamoDB and S3 (moto), with the documents table keyed as the registry says."""
    extract, search = apps
    as_a, as_b = {"x-team-id": "team-a"}, {"x-team-id": "team-b"}
    uploaded = extract.post(
        "/v1/documents",
        files={"file": ("routing.pdf", sample_paper_pdf(), "application/pdf")},
        data={"metadata": json.dumps({"year": 2024})},
        headers=as_a,
    )
    assert uploaded.status_code == 201, uploaded.text
    document_id = uploaded.json()["document_id"]
    query = {"query": "sparse attention routing long documents"}

    mine = search.post("/api/tools/search", json=query, headers=as_a).json()["results"]
    assert [r["url"] for r in mine] == [f"library://{document_id}"]
    for headers in (as_b, {}):  # another team, and the default one
        assert search.post("/api/tools/search", json=query, headers=headers).json()["results"] == []
        v1 = search.post("/api/v1/search", json=query, headers=headers)
        assert v1.status_code == 404, "the multi-source seed's 'No search results found'"
        assert extract.get(f"/v1/documents/{document_id}", headers=headers).status_code == 404
        extracted = extract.post(
            "/api/tools/extract", json={"source_url": f"library://{document_id}"}, headers=headers
        )
        assert extracted.status_code == 404 and extracted.json()["error"] == "SOURCE_UNAVAILABLE"
