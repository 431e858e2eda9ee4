"""Team scoping of search: the library connector answers with the query's team's uploads only, through
the SearchService (whose shared response cache never holds them) and through both search routes (which
take the team from the request, never from the body)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.common.documents import DocumentRecord, InMemoryDocumentRepository
from functions.common.settings import reset_settings_cache
from functions.common.storage import InMemoryTtlCache
from functions.common.tenancy import DEFAULT_TEAM, TEAM_HEADER
from functions.search.app import app
from functions.search.connectors.base import ConnectorContext
from functions.search.connectors.library import LibraryConnector
from functions.search.models import PaperQuery
from functions.search.routes import get_service
from functions.search.service import SearchService, cache_key
from tests.support.fakes.connectors import StubConnector, crossref_stub, s2_stub, service_with

TEAM_A, TEAM_B = "team-a", "team-b"
DOC_A = "doc-aaaaaaaaaaaaaaaaaaaaaaaa"
DOC_B = "doc-bbbbbbbbbbbbbbbbbbbbbbbb"
QUERY = "sparse attention routing"


def _record(team_id: str, document_id: str, title: str) -> DocumentRecord:
    return DocumentRecord(
        team_id=team_id,
        document_id=document_id,
        filename="paper.pdf",
        uploaded_at=datetime(2026, 1, 5, tzinfo=UTC),
        size_bytes=1000,
        status="indexed",
        sha256="0" * 64,
        pdf_key=f"teams/{team_id}/documents/{document_id}/original.pdf",
        title=title,
        abstract="How long documents route sparse attention.",
        year=2024,
        search_text="sparse attention routing",
    )


def _documents() -> InMemoryDocumentRepository:
    documents = InMemoryDocumentRepository()
    documents.put(_record(TEAM_A, DOC_A, "Sparse attention routing, team A's draft"))
    documents.put(_record(TEAM_B, DOC_B, "Sparse attention routing, team B's notes"))
    return documents


class RecordingCache(InMemoryTtlCache):
    """The shared response cache, remembering what was put into it."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[tuple[str, Any]] = []

    def put(self, key: str, value: Any, ttl_seconds: int) -> None:
        self.puts.append((key, value))
        super().put(key, value, ttl_seconds)


def _service(upstream: StubConnector) -> SearchService:
    service = service_with(upstream)
    service.cache = RecordingCache()
    service.connectors["library"] = LibraryConnector(ConnectorContext(), _documents())
    return service


def _library_urls(service: SearchService, team_id: str | None) -> list[str]:
    outcome = asyncio.run(service.search(PaperQuery(query=QUERY, team_id=team_id)))
    return [p.url for p in outcome.papers if p.url.startswith("library://")]


def test_two_teams_searching_the_same_query_get_only_their_own_library_papers() -> None:
    upstream = s2_stub()
    service = _service(upstream)
    assert _library_urls(service, TEAM_A) == [f"library://{DOC_A}"]
    assert _library_urls(service, TEAM_B) == [f"library://{DOC_B}"]
    assert _library_urls(service, TEAM_A) == [f"library://{DOC_A}"], "a repeat is not another team's"
    assert _library_urls(service, "team-c") == []
    assert _library_urls(service, None) == []
    # The public upstream's answer is shared by every team (asked once); the library is never cached.
    assert len(upstream.calls) == 1
    assert isinstance(service.cache, RecordingCache)
    assert [value["connector"] for _, value in service.cache.puts] == ["semantic_scholar"]
    assert "library://" not in json.dumps(service.cache.puts)


def test_the_cache_key_of_public_results_does_not_depend_on_the_team() -> None:
    assert cache_key("arxiv", PaperQuery(query=QUERY, team_id=TEAM_A), 10) == cache_key(
        "arxiv", PaperQuery(query=QUERY, team_id=TEAM_B), 10
    )


@pytest.fixture
def routed() -> Iterator[tuple[TestClient, StubConnector]]:
    upstream = crossref_stub()
    app.dependency_overrides[get_service] = lambda: _service(upstream)
    yield TestClient(app, raise_server_exceptions=False), upstream
    app.dependency_overrides.clear()


def test_both_routes_search_the_callers_library_only(routed: tuple[TestClient, StubConnector]) -> None:
    client, _ = routed
    for team, mine, theirs in ((TEAM_A, DOC_A, DOC_B), (TEAM_B, DOC_B, DOC_A)):
        tools = client.post("/api/tools/search", json={"query": QUERY}, headers={TEAM_HEADER: team})
        urls = [r["url"] for r in tools.json()["results"]]
        assert f"library://{mine}" in urls and f"library://{theirs}" not in urls
        v1 = client.post("/api/v1/search", json={"query": QUERY}, headers={TEAM_HEADER: team})
        urls = [s["url"] for s in v1.json()["sources"]]
        assert f"library://{mine}" in urls and f"library://{theirs}" not in urls


def test_the_team_comes_from_the_request_never_the_body(routed: tuple[TestClient, StubConnector]) -> None:
    client, upstream = routed
    body: dict[str, Any] = {"query": QUERY, "team_id": TEAM_A}
    tools = client.post("/api/tools/search", json=body, headers={TEAM_HEADER: TEAM_B})
    assert tools.status_code == 200
    assert f"library://{DOC_A}" not in [r["url"] for r in tools.json()["results"]]
    client.post("/api/v1/search", json=body)
    assert [q.team_id for q in upstream.calls] == [TEAM_B, DEFAULT_TEAM]
    schemas = app.openapi()["components"]["schemas"]
    for name in ("ToolsSearchRequest", "V1SearchRequest", "SearchFilters"):
        assert "team_id" not in schemas[name]["properties"], name


def test_a_request_without_a_team_is_401_in_each_format(
    routed: tuple[TestClient, StubConnector], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, upstream = routed
    monkeypatch.setenv("TEAM_SOURCE", "authorizer")  # on AWS, and no authorizer context here
    reset_settings_cache()
    tools = client.post("/api/tools/search", json={"query": QUERY})
    assert tools.status_code == 401
    assert tools.json() == {"error": "Unauthorized", "message": tools.json()["message"]}
    v1 = client.post("/api/v1/search", json={"query": QUERY})
    assert v1.status_code == 401 and v1.json() == {"detail": "Unauthorized"}
    assert not upstream.calls
