"""The S3-triggered ingest on moto's S3: PDFs uploaded under kb-source/<book>/ become a served index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from functions.common.storage import S3BlobStore
from functions.rag import location
from functions.rag.app import app, memo
from functions.rag.config import reset_rag_settings_cache
from functions.rag.index import load_knowledge_base
from functions.rag.ingest import handler
from functions.rag.loader import set_knowledge_base
from tests.unit.rag.tiny_book import tiny_book

pytestmark = pytest.mark.integration
BUCKET = "rag-test-data"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("DATA_BUCKET", BUCKET)
    monkeypatch.delenv("RAG_INDEX_PATH", raising=False)
    # A developer's `make ingest-textbook` output must not shadow the bucket in this test.
    monkeypatch.setattr(location, "LOCAL_INDEX_DIR", Path("/nonexistent/rag-index"))
    reset_rag_settings_cache()
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client
    reset_rag_settings_cache()
    set_knowledge_base(None)
    memo.clear()


def _event(key: str) -> dict[str, Any]:
    return {
        "Records": [
            {"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": BUCKET}, "object": {"key": key}}}
        ]
    }


def test_uploaded_book_is_ingested_and_served_from_s3(s3: Any) -> None:
    for source in tiny_book():
        s3.put_object(Bucket=BUCKET, Key=f"kb-source/tiny-book/{source.name}", Body=source.data)
    result = handler(_event("kb-source/tiny-book/ch02.pdf"), None)
    [summary] = result["ingested"]
    assert summary["book_id"] == "tiny-book" and summary["written"] is True
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix="kb/")["Contents"]]
    assert f"kb/tiny-book/{summary['version']}/manifest.json" in keys
    assert "kb/tiny-book/LATEST" in keys

    # The same upload again: same version, nothing rewritten.
    again = handler(_event("kb-source/tiny-book/ch01.pdf"), None)
    assert again["ingested"][0]["version"] == summary["version"]
    assert again["ingested"][0]["written"] is False

    # The API loads the index from the data bucket on first use.
    set_knowledge_base(None)
    memo.clear()
    with TestClient(app) as client:
        response = client.get("/entity/algorithm/2.1")
    assert response.status_code == 200
    assert response.json()["title"] == "(s,S) inventory policy"
    assert load_knowledge_base(S3BlobStore(), "tiny-book").version == summary["version"]


def test_objects_outside_the_source_prefix_are_ignored(s3: Any) -> None:
    assert handler(_event("payloads/some.pdf"), None) == {"ingested": []}
    assert handler(_event("kb-source/tiny-book/readme.txt"), None) == {"ingested": []}
