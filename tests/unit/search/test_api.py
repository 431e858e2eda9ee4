"""The HTTP contracts of the search app (in-process ASGI; connectors are protocol stubs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient

from functions.search.app import app
from functions.search.routes import get_service
from functions.search.service import SearchService
from tests.support.fakes.connectors import crossref_stub, failing_stub, s2_stub, service_with


@pytest.fixture
def use_service() -> Iterator[Any]:
    def install(service: SearchService) -> TestClient:
        app.dependency_overrides[get_service] = lambda: service
        return TestClient(app, raise_server_exceptions=False)

    yield install
    app.dependency_overrides.clear()


@pytest.fixture
def client(use_service: Any) -> TestClient:
    return use_service(service_with(s2_stub(), crossref_stub()))  # type: ignore[no-any-return]


def test_tools_search_answers_api_1(client: TestClient) -> None:
    response = client.post(
        "/api/tools/search",
        json={
            "query": "transformer architectures",
            "filters": {"year_range": {"start": 2022}},
            "max_results": 3,
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"results", "total_found", "search_metrics", "failed_sources"}
    assert len(body["results"]) == 3 and body["total_found"] == 3
    assert body["search_metrics"]["sources_searched"] == 2 and body["failed_sources"] == {}
    for result in body["results"]:
        assert isinstance(result["year"], int) and result["year"] >= 2022
        assert 0.0 <= result["relevance_score"] <= 1.0
        assert 100 <= len(result["snippet"]) <= 500
        assert result["url"].startswith("https://")
        assert all(", " in a and a.endswith(".") for a in result["authors"])


def test_partial_failure_is_200_with_failed_sources(use_service: Any) -> None:
    client = use_service(service_with(s2_stub(), failing_stub("crossref", "HTTP 503 from crossref: busy")))
    body = client.post("/api/tools/search", json={"query": "transformers"}).json()
    assert body["results"] and body["failed_sources"] == {"crossref": "HTTP 503 from crossref: busy"}
    assert body["search_metrics"]["sources_failed"] == 1


def test_all_sources_failing_is_the_seed_500(use_service: Any) -> None:
    client = use_service(service_with(failing_stub("arxiv", "Connection to arXiv failed")))
    response = client.post("/api/tools/search", json={"query": "transformers"})
    assert response.status_code == 500
    assert response.json() == {
        "error": "Search service unavailable",
        "message": "arxiv: Connection to arXiv failed",
    }
    v1 = client.post("/api/v1/search", json={"query": "transformers"})
    assert v1.status_code == 500 and v1.json()["detail"].startswith("Search error: arxiv")


def test_no_results_is_200_empty_on_tools_and_404_on_v1(use_service: Any) -> None:
    empty = s2_stub()
    empty.answer = empty.answer.model_copy(update={"papers": [], "total": 0})
    client = use_service(service_with(empty))
    body = client.post("/api/tools/search", json={"query": "nothing"}).json()
    assert body["results"] == [] and body["total_found"] == 0
    response = client.post("/api/v1/search", json={"query": "nothing"})
    assert response.status_code == 404 and response.json() == {"detail": "No search results found"}


def test_client_rate_limit_answers_429_with_retry_after(use_service: Any) -> None:
    client = use_service(service_with(s2_stub(), per_minute=2))
    headers = {"x-api-key": "team-a"}
    assert client.post("/api/tools/search", json={"query": "a"}, headers=headers).status_code == 200
    assert client.post("/api/tools/search", json={"query": "b"}, headers=headers).status_code == 200
    limited = client.post("/api/tools/search", json={"query": "c"}, headers=headers)
    assert limited.status_code == 429
    assert limited.json() == {"error": "Rate limit exceeded", "retry_after": 30}
    assert limited.headers["retry-after"] == "30"
    other = client.post("/api/tools/search", json={"query": "c"}, headers={"x-api-key": "team-b"})
    assert other.status_code == 200


BAD_TOOLS_BODIES = [
    ({}, "query"),
    ({"query": ""}, "query"),
    ({"query": "   "}, "query"),
    ({"query": "x" * 10_240}, "query"),
    ({"query": 42}, "query"),
    ({"query": ["a"]}, "query"),
    ({"query": "ok", "max_results": 0}, "max_results"),
    ({"query": "ok", "max_results": 101}, "max_results"),
    ({"query": "ok", "max_results": "20"}, "max_results"),
    ({"query": "ok", "max_results": True}, "max_results"),
    ({"query": "ok", "filters": {"year_range": {"start": 1899}}}, "filters.year_range.start"),
    ({"query": "ok", "filters": {"year_range": {"end": 3000}}}, "filters.year_range.end"),
    ({"query": "ok", "filters": {"year_range": {"start": "2020"}}}, "filters.year_range.start"),
    ({"query": "ok", "filters": {"year_range": {"start": 2024, "end": 2020}}}, "filters.year_range"),
    ({"query": "ok", "filters": {"source_types": ["blogs"]}}, "filters.source_types.0"),
    ({"query": "ok", "filters": {"source_types": "academic"}}, "filters.source_types"),
    ({"query": "ok", "filters": {"min_quality_score": 1.5}}, "filters.min_quality_score"),
    ({"query": "ok", "filters": {"min_quality_score": -0.1}}, "filters.min_quality_score"),
    ({"query": "ok", "filters": "recent"}, "filters"),
]


@pytest.mark.parametrize(("body", "field"), BAD_TOOLS_BODIES)
def test_bad_tools_input_is_400_naming_the_field(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    response = client.post("/api/tools/search", json=body)
    assert response.status_code == 400, response.text
    payload = response.json()
    assert payload["error"] == "Invalid request"
    assert payload["message"].startswith(f"{field}:"), payload


def test_malformed_json_is_400(client: TestClient) -> None:
    response = client.post(
        "/api/tools/search", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["message"].startswith("body:")


BAD_V1_BODIES = [
    ({"query": ""}, "query"),
    ({"query": "x" * 10_240}, "query"),
    ({"query": "ok", "top_k": 0}, "top_k"),
    ({"query": "ok", "top_k": 51}, "top_k"),
    ({"query": "ok", "top_k": 2.5}, "top_k"),
    ({"query": "ok", "connectors": "arxiv"}, "connectors"),
    ({"query": "ok", "connectors": ["tavily"]}, "connectors"),
    ({"query": "ok", "connectors": []}, "connectors"),
]


@pytest.mark.parametrize(("body", "field"), BAD_V1_BODIES)
def test_bad_v1_input_is_400_naming_the_field(client: TestClient, body: dict[str, Any], field: str) -> None:
    response = client.post("/api/v1/search", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith(f"{field}:")


def test_v1_search_fuses_with_rrf(client: TestClient) -> None:
    response = client.post("/api/v1/search", json={"query": "transformer architectures", "top_k": 5})
    assert response.status_code == 200
    body = response.json()
    assert body["connectors_used"] == ["semantic_scholar", "crossref"]
    assert body["total_results"] == len(body["sources"]) == 4
    scores = [s["score"] for s in body["sources"]]
    assert scores == sorted(scores, reverse=True)
    top = body["sources"][0]
    assert top["score"] == round(2 / 61, 6)  # first in both connectors
    prefix, digest = top["id"].split("_")
    assert prefix in {"ss", "cr"} and len(digest) == 8
    assert len({s["id"] for s in body["sources"]}) == 4


def test_health(client: TestClient) -> None:
    body = client.get("/api/v1/health").json()
    assert body["status"] == "healthy"
    assert body["connectors"] == ["semantic_scholar", "crossref"]
    assert body["llm_configured"] is False


def test_health_shows_the_providers_breakers_not_a_teams_own_key(use_service: Any) -> None:
    service = service_with(s2_stub(), crossref_stub())
    client = use_service(service)
    for _ in range(5):
        service.breakers.get("semantic_scholar@team:team-0123456789ab").record_failure()
    service.breakers.get("crossref").record_success()
    body = client.get("/api/v1/health").json()
    assert body["status"] == "healthy" and "team-0123456789ab" not in json.dumps(body)
    assert body["circuit_breakers"] == {"crossref": "closed"}


def test_lambda_handler_serves_an_api_gateway_event(use_service: Any) -> None:
    import json

    from functions.search.handler import handler

    use_service(service_with(s2_stub()))
    event = {
        "resource": "/{proxy+}",
        "path": "/api/tools/search",
        "httpMethod": "POST",
        "headers": {"content-type": "application/json", "x-api-key": "lambda-test"},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": "POST",
            "stage": "prod",
            "identity": {"sourceIp": "203.0.113.9"},
        },
        "body": json.dumps({"query": "transformer architectures", "max_results": 2}),
        "isBase64Encoded": False,
    }
    response = handler(event, cast(Any, None))
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert len(body["results"]) == 2 and body["total_found"] == 4
