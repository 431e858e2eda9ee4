"""The seed contract over HTTP: shapes, every validation rule (exact status and message), caching."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.rag.app import app
from functions.rag.loader import set_knowledge_base

SEARCH_TYPES = "[formula, algorithm, table, figure, section, example, exercise, appendix]"
RELATIONS = "[USES_IN, CITES, REFERENCES, RELATED_TO, FOLLOWS, REFERENCED_BY, PART_OF]"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def _assert_error(response: Any, status: int, detail: str, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"detail", "status_code", "error_code", "timestamp"}
    assert body["detail"] == detail
    assert body["status_code"] == status
    assert body["error_code"] == code
    assert TIMESTAMP.match(body["timestamp"])


# --- POST /search/semantic -----------------------------------------------------------------------


def test_semantic_search_returns_the_seed_fields_sorted_by_score(client: TestClient) -> None:
    response = client.post("/search/semantic", json={"query": "POMDP belief state update algorithm"})
    assert response.status_code == 200
    body = response.json()
    assert body["total_count"] == len(body["results"]) <= 5
    first = body["results"][0]
    assert set(first) >= {
        "id",
        "type",
        "content",
        "number",
        "title",
        "chapter",
        "section",
        "page_number",
        "score",
    }
    assert first["id"] in {"algo_1_1", "section_1_1", "chunk_1_1_1", "formula_1_1"}
    scores = [result["score"] for result in body["results"]]
    assert scores == sorted(scores, reverse=True)
    assert body["suggestions"] == []


def test_semantic_search_puts_a_named_item_first(client: TestClient) -> None:
    body = client.post("/search/semantic", json={"query": "what does Algorithm 2.1 do", "k": 3}).json()
    assert body["results"][0]["id"] == "algo_2_1"
    assert body["results"][0]["page_number"] == 6


def test_k_limits_the_results(client: TestClient) -> None:
    body = client.post("/search/semantic", json={"query": "value iteration convergence", "k": 2}).json()
    assert len(body["results"]) == 2 and body["total_count"] == 2


def test_traverse_types_restrict_the_result_types(client: TestClient) -> None:
    body = client.post(
        "/search/semantic", json={"query": "value iteration", "traverse_types": ["formula", "algorithm"]}
    ).json()
    assert body["results"]
    assert {result["type"] for result in body["results"]} <= {"formula", "algorithm"}


@pytest.mark.parametrize(
    ("filters", "check"),
    [
        ({"chapter": "2"}, lambda r: r["chapter"] == "2"),
        ({"chapter": 2}, lambda r: r["chapter"] == "2"),
        ({"section": "1.2"}, lambda r: r["section"] == "1.2" or r["section"].startswith("1.2.")),
        ({"page_number": 3}, lambda r: r["page_number"] is not None),
    ],
)
def test_filters_restrict_chapter_section_and_page(
    client: TestClient, filters: dict[str, Any], check: Any
) -> None:
    body = client.post(
        "/search/semantic", json={"query": "value policy belief demand", "k": 20, "filters": filters}
    ).json()
    assert body["results"]
    assert all(check(result) for result in body["results"])


def test_page_filter_matches_only_that_page(client: TestClient, knowledge_base: Any) -> None:
    body = client.post(
        "/search/semantic", json={"query": "contraction convergence", "filters": {"page_number": 3}}
    ).json()
    for result in body["results"]:
        entity = knowledge_base.nodes[result["id"]]
        last = entity.page_end if entity.page_end is not None else entity.page_number
        assert entity.page_number <= 3 <= last


def test_typos_get_suggestions_from_the_books_vocabulary(client: TestClient) -> None:
    body = client.post("/search/semantic", json={"query": "POMP belief update"}).json()
    assert body["suggestions"] == ["POMDP belief update"]
    assert body["metadata"]["corrected_terms"] == {"POMP": "POMDP"}
    assert body["results"] and body["results"][0]["id"] in {
        "algo_1_1",
        "chunk_1_1_1",
        "section_1_1",
        "chunk_1_1",
    }
    corrected = client.post("/search/semantic", json={"query": "Belman optimality operater"}).json()
    assert corrected["suggestions"] == ["Bellman optimality operator"]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"query": ""}, "query must be at least 3 characters"),
        ({"query": "ab"}, "query must be at least 3 characters"),
        ({"query": "   ab   "}, "query must be at least 3 characters"),
        ({"query": "x" * 1001}, "query must be at most 1000 characters"),
        ({}, "query is required"),
        ({"query": 42}, "query must be a string"),
        ({"query": "value", "k": 0}, "k must be between 1 and 20"),
        ({"query": "value", "k": 21}, "k must be between 1 and 20"),
        ({"query": "value", "k": -3}, "k must be between 1 and 20"),
        ({"query": "value", "k": "5"}, "k must be an integer"),
        ({"query": "value", "k": 2.5}, "k must be an integer"),
        (
            {"query": "value", "traverse_types": ["formula", "invalid_type"]},
            f"traverse_types contains invalid value: 'invalid_type'. Valid values: {SEARCH_TYPES}",
        ),
        (
            {"query": "value", "traverse_types": ["USES_IN"]},
            f"traverse_types contains invalid value: 'USES_IN'. Valid values: {SEARCH_TYPES}",
        ),
        ({"query": "value", "traverse_types": "formula"}, "traverse_types must be an array"),
        ({"query": "value", "filters": {"invalid_key": "x"}}, "filter 'invalid_key' is not supported"),
        ({"query": "value", "filters": {"page_number": "12"}}, "filter 'page_number' must be an integer"),
        ({"query": "value", "filters": {"page_number": 1.5}}, "filter 'page_number' must be an integer"),
        ({"query": "value", "filters": {"section": 3}}, "filter 'section' must be a string"),
        ({"query": "value", "filters": ["chapter"]}, "filters must be an object"),
    ],
)
def test_semantic_search_validation(client: TestClient, body: dict[str, Any], detail: str) -> None:
    _assert_error(client.post("/search/semantic", json=body), 400, detail, "INVALID_PARAMETER")


def test_semantic_search_rejects_a_body_that_is_not_json(client: TestClient) -> None:
    response = client.post(
        "/search/semantic", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    _assert_error(response, 400, "request body must be a JSON object", "INVALID_PARAMETER")


# --- POST /search/expand-graph -------------------------------------------------------------------


def test_expand_graph_returns_documents_with_relationships(client: TestClient) -> None:
    response = client.post(
        "/search/expand-graph",
        json={"document_ids": ["formula_2_1", "algo_2_1"], "traverse_types": ["USES_IN"]},
    )
    assert response.status_code == 200
    body = response.json()
    documents = {document["id"]: document for document in body["expanded_documents"]}
    assert documents["formula_2_1"]["relationships"] == [
        {"type": "USES_IN", "target_id": "algo_2_1", "target_type": "algorithm"}
    ]
    assert {"type": "USES_IN", "target_id": "formula_2_1", "target_type": "formula"} in documents["algo_2_1"][
        "relationships"
    ]
    assert body["relationship_count"] == sum(len(d["relationships"]) for d in body["expanded_documents"])
    assert body["metadata"]["warnings"] == []


def test_expand_graph_includes_connected_documents(client: TestClient) -> None:
    body = client.post(
        "/search/expand-graph", json={"document_ids": ["box_1_1"], "traverse_types": ["CITES"]}
    ).json()
    documents = {document["id"]: document for document in body["expanded_documents"]}
    assert documents["box_1_1"]["hop"] == 0
    assert documents["formula_1_2"]["hop"] == 1
    assert "(1.2)" in documents["formula_1_2"]["content"]


def test_expand_graph_without_types_follows_every_relationship(client: TestClient) -> None:
    body = client.post("/search/expand-graph", json={"document_ids": ["algo_1_1"]}).json()
    kinds = {relationship["type"] for relationship in body["expanded_documents"][0]["relationships"]}
    assert {"PART_OF", "REFERENCES", "REFERENCED_BY", "USES_IN", "RELATED_TO"} <= kinds


def test_expand_graph_accepts_the_long_algorithm_prefix(client: TestClient) -> None:
    body = client.post("/search/expand-graph", json={"document_ids": ["algorithm_2_1"]}).json()
    assert body["expanded_documents"][0]["id"] == "algo_2_1"


def test_expand_graph_returns_partial_results_with_a_warning(client: TestClient) -> None:
    response = client.post("/search/expand-graph", json={"document_ids": ["algo_2_1", "formula_9_9"]})
    assert response.status_code == 200
    body = response.json()
    assert body["expanded_documents"][0]["id"] == "algo_2_1"
    assert body["metadata"]["not_found_ids"] == ["formula_9_9"]
    assert body["metadata"]["warnings"] == ["document_ids not found in knowledge base: formula_9_9"]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (
            {"document_ids": ["algo_2_1", "not an id"]},
            "document_ids contains an invalid id: 'not an id'. Expected <type>_<number>, e.g. 'formula_3_2'",
        ),
        (
            {"document_ids": ["spaceship_1_1"]},
            "document_ids contains an invalid id: 'spaceship_1_1'. Expected <type>_<number>, e.g. 'formula_3_2'",
        ),
        ({}, "document_ids is required"),
        ({"document_ids": []}, "document_ids must contain at least 1 id"),
        ({"document_ids": [f"formula_1_{n}" for n in range(51)]}, "document_ids must contain at most 50 ids"),
        ({"document_ids": "algo_2_1"}, "document_ids must be an array of ids"),
        ({"document_ids": [12]}, "document_ids must contain only strings"),
        (
            {"document_ids": ["algo_2_1"], "traverse_types": ["invalid_type"]},
            f"traverse_types contains invalid value: 'invalid_type'. Valid values: {RELATIONS}",
        ),
        ({"document_ids": ["algo_2_1"], "traverse_types": "USES_IN"}, "traverse_types must be an array"),
    ],
)
def test_expand_graph_validation(client: TestClient, body: dict[str, Any], detail: str) -> None:
    _assert_error(client.post("/search/expand-graph", json=body), 400, detail, "INVALID_PARAMETER")


# --- GET /entity/{entity_type}/{number} ----------------------------------------------------------


def test_entity_lookup_returns_the_seed_fields(client: TestClient) -> None:
    response = client.get("/entity/algorithm/2.1")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == "algo_2_1" and body["type"] == "algorithm" and body["number"] == "2.1"
    assert body["title"] == "(s,S) inventory policy"
    assert body["chapter"] == "2" and body["section"] == "2.2" and body["page_number"] == 6
    assert "formula_2_1" in body["references"]
    assert "chunk_2_2_1" in body["cited_by"] or "section_2_2" in body["cited_by"]


@pytest.mark.parametrize(
    ("path", "status", "detail", "code"),
    [
        (
            "/entity/theorem/1.1",
            400,
            "entity_type must be one of: formula, algorithm, table, figure",
            "INVALID_PARAMETER",
        ),
        (
            "/entity/box/1.1",
            400,
            "entity_type must be one of: formula, algorithm, table, figure",
            "INVALID_PARAMETER",
        ),
        (
            "/entity/algorithm/1",
            400,
            "number format invalid. Expected format: X.Y or X.YZ",
            "INVALID_PARAMETER",
        ),
        (
            "/entity/algorithm/1.2.3",
            400,
            "number format invalid. Expected format: X.Y or X.YZ",
            "INVALID_PARAMETER",
        ),
        (
            "/entity/formula/abc",
            400,
            "number format invalid. Expected format: X.Y or X.YZ",
            "INVALID_PARAMETER",
        ),
        ("/entity/algorithm/99.99", 404, "Algorithm 99.99 not found in knowledge base", "NOT_FOUND"),
        ("/entity/formula/1.9", 404, "Formula 1.9 not found in knowledge base", "NOT_FOUND"),
        ("/entity/table/A.1", 404, "Table A.1 not found in knowledge base", "NOT_FOUND"),
    ],
)
def test_entity_validation_and_not_found(
    client: TestClient, path: str, status: int, detail: str, code: str
) -> None:
    _assert_error(client.get(path), status, detail, code)


# --- caching and availability --------------------------------------------------------------------


def test_search_and_expansion_are_cacheable_for_a_day(client: TestClient) -> None:
    search = client.post("/search/semantic", json={"query": "belief state"})
    expand = client.post("/search/expand-graph", json={"document_ids": ["algo_1_1"]})
    for response in (search, expand):
        assert response.headers["cache-control"] == "public, max-age=86400"
        assert response.headers["etag"].startswith('"')


def test_entities_are_cacheable_for_a_week_with_etag_and_304(client: TestClient) -> None:
    first = client.get("/entity/table/2.1")
    assert first.headers["cache-control"] == "public, max-age=604800"
    again = client.get("/entity/table/2.1", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == first.headers["etag"]
    other = client.get("/entity/table/2.1", headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200


def test_search_answers_304_for_the_same_request(client: TestClient) -> None:
    first = client.post("/search/semantic", json={"query": "holding cost", "k": 3})
    again = client.post(
        "/search/semantic",
        json={"query": "holding cost", "k": 3},
        headers={"If-None-Match": first.headers["etag"]},
    )
    assert again.status_code == 304


def test_errors_are_not_cached(client: TestClient) -> None:
    assert client.get("/entity/algorithm/99.99").headers["cache-control"] == "no-store"


def test_without_an_index_the_api_answers_503_in_the_seed_format(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from functions.rag.config import reset_rag_settings_cache

    monkeypatch.setenv("RAG_INDEX_PATH", str(tmp_path))
    reset_rag_settings_cache()
    set_knowledge_base(None)
    try:
        with TestClient(app) as test_client:
            response = test_client.get("/entity/algorithm/1.1")
        _assert_error(
            response,
            503,
            f"knowledge base is not loaded: no index in {tmp_path}; ingest the book first "
            f"(python -m functions.rag.ingest --index-dir {tmp_path} <table of contents and chapter PDFs>)",
            "SERVICE_UNAVAILABLE",
        )
    finally:
        reset_rag_settings_cache()


def test_unknown_route_uses_the_error_format(client: TestClient) -> None:
    _assert_error(client.get("/entity/algorithm"), 404, "Not Found", "NOT_FOUND")
