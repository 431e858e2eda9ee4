"""An uploaded document (POST /v1/documents on the extract function) is evidence for /v1/query."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from functions.local_runtime.aws import EmbeddedAws
from tests.e2e.scholarly_topic import TopicPaper, normalise

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_query_cites_the_pages_of_an_uploaded_document(
    aws: EmbeddedAws, client: TestClient, papers: list[TopicPaper]
) -> None:
    from functions.extract.app import app as extract_app

    paper = papers[1]
    with TestClient(extract_app) as extract:
        uploaded = extract.post("/v1/documents", files={"file": ("moe.pdf", paper.pdf, "application/pdf")})
    assert uploaded.status_code == 201, uploaded.text
    document_id = uploaded.json()["document_id"]

    response = client.post(
        "/v1/query",
        json={
            "query": "How does mixture of experts routing change the throughput of transformers?",
            "documents": [document_id],
            "options": {"preset": "fast", "search_provider": "crossref"},
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    # an uploaded document is a source of the team library: the library connector's id prefix
    from_document = [c for c in body["citations"] if c["source_id"].startswith("lib_")]
    assert from_document, body
    for citation in from_document:
        assert citation["origin"] == "page" and citation["page"] >= 1
        assert citation["url"] == f"library://{document_id}"
        assert normalise(citation["snippet"]) in normalise(paper.text)
