"""The HTTP contract: POST /api/tools/extract (API 2) and /v1/documents (trust API)."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from functions.common.settings import reset_settings_cache
from tests.support.pdfgen import SAMPLE_TITLE, build_pdf, sample_paper_pdf
from tests.support.scholarly_web import ScholarlyWeb

PDF = sample_paper_pdf()


def test_extract_success_follows_api_2(api: TestClient, web: ScholarlyWeb) -> None:
    web.set_response("/arxiv-site/pdf/2401.12345", PDF, content_type="application/pdf")
    response = api.post(
        "/api/tools/extract",
        json={
            "source_url": "https://arxiv.org/abs/2401.12345",
            "extraction_parameters": {
                "focus_areas": ["methodology", "results"],
                "required_elements": ["key_findings", "methodology", "conclusions", "citations"],
                "max_length": 5000,
            },
        },
    )
    assert response.status_code == 200
    body = response.json()
    content, meta, metrics = body["extracted_content"], body["metadata"], body["extraction_metrics"]
    assert content["title"] == SAMPLE_TITLE and 100 <= len(content["abstract"]) <= 1000
    assert 3 <= len(content["key_findings"]) <= 7 and all(
        50 <= len(f) <= 200 for f in content["key_findings"]
    )
    assert 200 <= len(content["methodology"]) <= 1000
    assert content["citations"][0].startswith("Vaswani et al., 2017. Attention is all you need.")
    assert content["conclusions"].startswith("Learned block routing")
    assert meta["extraction_success"] is True and meta["source_url"] == "https://arxiv.org/abs/2401.12345"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", meta["extraction_timestamp"])
    assert "failure_reason" not in meta
    assert metrics["processing_time_ms"] > 0 and 0.5 <= metrics["confidence_score"] <= 1.0
    evidence = content["evidence"]
    assert {"quote", "page", "char_start", "char_end", "section", "kind", "relevance_score"} <= set(
        evidence[0]
    )


def test_unparseable_content_is_200_with_success_false(api: TestClient, web: ScholarlyWeb) -> None:
    scan = build_pdf([[]], raw_streams={0: b"q 0 0 1 rg 72 72 400 600 re f Q"})
    web.set_response("/scan.pdf", scan, content_type="application/pdf")
    response = api.post("/api/tools/extract", json={"source_url": web.url("/scan.pdf")})
    assert response.status_code == 200
    body = response.json()
    assert body["metadata"]["extraction_success"] is False
    assert "no text layer" in body["metadata"]["failure_reason"]
    assert body["extracted_content"] == {
        "title": "",
        "abstract": "",
        "key_findings": [],
        "methodology": "",
        "citations": [],
        "conclusions": "",
        "evidence": [],
    }
    assert body["extraction_metrics"]["confidence_score"] == 0.0


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"source_url": "ftp://example.org/x.pdf"}, "source_url"),
        ({"source_url": "http://169.254.169.254/latest/meta-data/"}, "source_url"),
        ({}, "source_url"),
        (
            {"source_url": "2401.12345", "extraction_parameters": {"max_length": -1}},
            "extraction_parameters.max_length",
        ),
        (
            {"source_url": "2401.12345", "extraction_parameters": {"required_elements": ["everything"]}},
            "extraction_parameters.required_elements",
        ),
    ],
)
def test_bad_requests_are_400_naming_the_field(
    api: TestClient, payload: dict[str, object], field: str
) -> None:
    response = api.post("/api/tools/extract", json=payload)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "INVALID_REQUEST" and body["field"] == field and body["message"]


def test_unavailable_source_is_404(api: TestClient, web: ScholarlyWeb) -> None:
    response = api.post("/api/tools/extract", json={"source_url": web.url("/gone.pdf")})
    assert response.status_code == 404
    assert response.json()["error"] == "SOURCE_UNAVAILABLE"


def test_timeout_is_504(api: TestClient, web: ScholarlyWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXTRACT_BUDGET_SECONDS", "1")
    reset_settings_cache()
    web.set_response("/slow.pdf", PDF, content_type="application/pdf")
    web.set_latency("/slow.pdf", 3.0)
    response = api.post("/api/tools/extract", json={"source_url": web.url("/slow.pdf")})
    assert response.status_code == 504
    assert response.json()["error"] == "EXTRACTION_TIMEOUT"


def test_upload_get_and_extract_library_document(api: TestClient) -> None:
    response = api.post(
        "/v1/documents",
        files={"file": ("routing.pdf", PDF, "application/pdf")},
        data={"metadata": json.dumps({"year": 2024})},
    )
    assert response.status_code == 201
    created = response.json()
    assert created["status"] == "indexed" and created["pages"] == 2
    document_id = created["document_id"]
    shown = api.get(f"/v1/documents/{document_id}").json()
    assert (
        shown["filename"] == "routing.pdf"
        and shown["size_bytes"] == len(PDF)
        and shown["status"] == "indexed"
    )
    assert datetime.strptime(shown["uploaded_at"], "%Y-%m-%dT%H:%M:%SZ")
    again = api.post("/v1/documents", files={"file": ("copy.pdf", PDF, "application/pdf")})
    assert again.json()["document_id"] == document_id, "content-addressed: the same file is the same document"
    extracted = api.post("/api/tools/extract", json={"source_url": f"library://{document_id}"}).json()
    assert extracted["metadata"]["extraction_success"] is True
    assert extracted["extracted_content"]["evidence"][0]["page"] == 1


def test_upload_validation_errors_use_the_trust_error_schema(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_pdf = api.post("/v1/documents", files={"file": ("notes.txt", b"plain text", "text/plain")})
    assert not_pdf.status_code == 422
    assert not_pdf.json()["error"]["code"] == "unprocessable_document"
    assert not_pdf.json()["error"]["details"] == {"field": "file"}
    scan = build_pdf([[]], raw_streams={0: b"q 0 0 1 rg 72 72 400 600 re f Q"})
    assert api.post("/v1/documents", files={"file": ("scan.pdf", scan, "application/pdf")}).status_code == 422
    bad_meta = api.post(
        "/v1/documents", files={"file": ("a.pdf", PDF, "application/pdf")}, data={"metadata": "{oops"}
    )
    assert bad_meta.status_code == 422 and bad_meta.json()["error"]["details"]["field"] == "metadata"
    missing = api.post("/v1/documents", data={"metadata": "{}"})
    assert missing.status_code == 400 and missing.json()["error"]["details"]["field"] == "file"
    monkeypatch.setenv("UPLOAD_MAX_BYTES", "1000")
    reset_settings_cache()
    big = api.post("/v1/documents", files={"file": ("big.pdf", PDF, "application/pdf")})
    assert big.status_code == 413 and big.json()["error"]["code"] == "payload_too_large"
    unknown = api.get("/v1/documents/doc-000000000000000000000000")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
