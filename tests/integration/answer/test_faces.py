"""Every route of both faces, per its seed, over real search, extraction, DynamoDB and S3 (moto)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.cli.sse import iter_sse
from tests.e2e.scholarly_topic import TopicPaper
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

QUESTION = "How does sparse attention reduce the memory use of transformer architectures?"
SOURCE_ID = re.compile(r"^(ax|s2|oa|cr|lib)_[0-9a-f]{8}$")
RESEARCH_FIELDS = {
    "query",
    "content",
    "citations",
    "sources",
    "connectors_used",
    "model",
    "usage",
    "preset_used",
    "focus_mode_used",
    "quality_gate",
    "contradictions",
    "rcs_summaries",
}
QUERY_FIELDS = {
    "answer_id",
    "query",
    "answer",
    "citations",
    "claim_verifications",
    "confidence_score",
    "refusal",
    "trace_id",
}
CITATION_FIELDS = {
    "citation_id",
    "source_id",
    "title",
    "url",
    "published_at",
    "snippet",
    "chunk_start",
    "chunk_end",
}
CLAIM_FIELDS = {"claim_id", "claim_text", "verdict", "evidence_chunk_ids", "confidence", "notes"}
EVENT_FIELDS = {"event_id", "agent", "event_type", "timestamp", "payload"}
AGENTS = {"Planner", "Retriever", "Writer", "Critic", "Verifier", "Red-Team", "Decision"}


def _abstracts(papers: list[TopicPaper]) -> dict[str, str]:
    return {paper.sample.title: paper.sample.abstract for paper in papers}


def test_query_cites_located_spans_of_the_abstracts_and_keeps_its_trace(
    client: TestClient, papers: list[TopicPaper]
) -> None:
    response = client.post(
        "/v1/query",
        json={"query": QUESTION, "user_id": "usr-1", "session_id": "sess-1", "options": {"preset": "fast"}},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) >= QUERY_FIELDS
    assert re.fullmatch(r"ans-[0-9a-f]{32}", body["answer_id"])
    assert re.fullmatch(r"trace-[0-9a-f]{32}", body["trace_id"])
    assert body["refusal"] is False and 0 < body["confidence_score"] <= 1
    assert body["query"] == QUESTION and body["citations"]
    abstracts = _abstracts(papers)
    for citation in body["citations"]:
        assert set(citation) >= CITATION_FIELDS
        assert SOURCE_ID.match(citation["source_id"]), citation["source_id"]
        assert citation["origin"] == "abstract"  # the fast preset reads no full text
        abstract = abstracts[citation["title"]]
        assert abstract[citation["chunk_start"] : citation["chunk_end"]] == citation["snippet"]
        assert f"[{int(citation['citation_id'].removeprefix('cit-'))}]" in body["answer"]
    for claim in body["claim_verifications"]:
        assert set(claim) >= CLAIM_FIELDS
    cited_chunks = {citation["chunk_id"] for citation in body["citations"]}
    supported = [c for c in body["claim_verifications"] if c["verdict"] != "unsupported"]
    assert supported and all(set(c["evidence_chunk_ids"]) <= cited_chunks for c in supported)

    trace = client.get(f"/v1/traces/{body['trace_id']}")
    assert trace.status_code == 200
    stored = trace.json()
    assert stored["trace_id"] == body["trace_id"] and stored["query"] == QUESTION
    events = stored["events"]
    assert all(set(event) >= EVENT_FIELDS and event["agent"] in AGENTS for event in events)
    names = [event["name"] for event in events]
    assert names[:2] == ["request_received", "plan_created"]
    assert {"search_started", "search_completed", "retrieval_completed", "draft_written"} <= set(names)
    assert names[-1] == "decision"
    assert (
        events[0]["payload"]["user_id"] == "usr-1" and events[0]["payload"]["answer_id"] == body["answer_id"]
    )


def test_an_unknown_trace_is_not_found(client: TestClient) -> None:
    response = client.get("/v1/traces/trace-00000000000000000000000000000000")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_stream_sends_trace_events_before_the_final_answer(client: TestClient) -> None:
    with client.stream(
        "POST", "/v1/query/stream", json={"query": QUESTION, "options": {"preset": "fast"}}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = list(iter_sse(response.iter_bytes()))
    kinds = [event.event for event in events]
    assert kinds[0] == "trace_event" and kinds[-1] == "final"
    assert kinds.count("trace_event") >= 5 and "answer_delta" in kinds and "citation" in kinds
    final = events[-1].json()
    assert set(final) >= QUERY_FIELDS and not final["refusal"]
    streamed = "".join(event.json()["text"] for event in events if event.event == "answer_delta")
    # What is streamed is the final answer, whose sentences attribute the quotes they cite.
    numbers = [int(citation["citation_id"].removeprefix("cit-")) for citation in final["citations"]]
    assert numbers and all(f"[{number}]" in streamed for number in numbers)
    stored = client.get(f"/v1/traces/{final['trace_id']}").json()
    streamed_ids = [event.json()["event_id"] for event in events if event.event == "trace_event"]
    assert [event["event_id"] for event in stored["events"]] == streamed_ids


def test_research_answers_with_every_seed_field(client: TestClient) -> None:
    response = client.post(
        "/api/v1/research",
        json={"query": QUESTION, "preset": "comprehensive", "focus_mode": "academic", "top_k": 5},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) >= RESEARCH_FIELDS
    assert body["preset_used"] == "Comprehensive" and body["focus_mode_used"] == "academic"
    assert body["model"] and set(body["usage"]) == {"prompt_tokens", "completion_tokens"}
    assert body["quality_gate"]["decision"] == "proceed"
    assert {"passed_sources", "filtered_sources"} <= set(body["quality_gate"])
    assert body["sources"] and body["citations"] and body["rcs_summaries"]
    for source in body["sources"]:
        assert set(source) >= {"id", "title", "url", "content", "score", "connector"}
        assert SOURCE_ID.match(source["id"]) and source["connector"] in body["connectors_used"]
    assert {c["id"] for c in body["citations"]} <= {s["id"] for s in body["sources"]}
    for citation in body["citations"]:
        assert {"id", "title", "url"} <= set(citation)
    assert {"source_title", "summary", "relevance_score"} <= set(body["rcs_summaries"][0])
    assert isinstance(body["contradictions"], list) and body["refusal"] is False


def test_ask_is_research_at_low_effort(client: TestClient) -> None:
    body = client.post("/api/v1/ask", json={"query": QUESTION, "reasoning_effort": "high"}).json()
    assert set(body) >= RESEARCH_FIELDS and body["preset_used"] is None
    events = client.get(f"/v1/traces/{body['trace_id']}").json()["events"]
    (plan,) = [event for event in events if event["name"] == "plan_created"]
    assert plan["payload"]["reasoning_effort"] == "low"


def test_presets_focus_modes_and_health(client: TestClient) -> None:
    presets = client.get("/api/v1/presets").json()["presets"]
    assert {p["name"] for p in presets} == {"fast", "comprehensive", "contracrow", "academic", "tutorial"}
    assert all(set(p) == {"name", "description", "features"} for p in presets)
    modes = client.get("/api/v1/focus-modes").json()["focus_modes"]
    assert len(modes) == 7 and all(set(m) == {"name", "description"} for m in modes)
    health = client.get("/v1/health").json()
    assert health["status"] == "ok" and health["version"] == "0.1.0"
    assert health["llm_configured"] is False and "arxiv" in health["connectors"]


def test_search_ranks_sources_and_honours_freshness(client: TestClient) -> None:
    response = client.post("/v1/search", json={"query": "sparse attention transformer", "max_results": 5})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert 0 < len(results) <= 5
    assert all(set(r) == {"source_id", "title", "url", "published_at", "snippet"} for r in results)
    assert all(SOURCE_ID.match(r["source_id"]) for r in results)
    year = datetime.now(UTC).year
    fresh = client.post(
        "/v1/search",
        json={"query": "transformer architectures", "freshness": "year", "search_provider": "openalex"},
    ).json()["results"]
    assert fresh and all(int(r["published_at"][:4]) >= year - 1 for r in fresh)
    assert all(r["source_id"].startswith("oa_") for r in fresh)


BAD_RESEARCH: list[dict[str, Any]] = [
    {},
    {"query": ""},
    {"query": "q", "top_k": 0},
    {"query": "q", "top_k": 51},
    {"query": "q", "preset": "deep"},
    {"query": "q", "focus_mode": "sports"},
    {"query": "q", "reasoning_effort": "max"},
    {"query": "q", "connectors": ["tavily"]},
]


@pytest.mark.parametrize("body", BAD_RESEARCH)
def test_bad_research_bodies_are_400_with_a_detail(client: TestClient, body: dict[str, Any]) -> None:
    for path in ("/api/v1/research", "/api/v1/ask"):
        response = client.post(path, json=body)
        assert response.status_code == 400, response.text
        assert set(response.json()) == {"detail"} and response.json()["detail"]


BAD_TRUST: list[tuple[str, Any, str | None]] = [
    ("/v1/query", {}, "query"),
    ("/v1/query", {"query": "q", "options": {"max_sources": 0}}, "options.max_sources"),
    ("/v1/query", {"query": "q", "options": {"search_provider": "bing"}}, "options.search_provider"),
    ("/v1/query/stream", {"query": "  "}, "query"),
    ("/v1/search", {"query": "q", "max_results": 51}, "max_results"),
    ("/v1/search", {"query": "q", "freshness": "hour"}, "freshness"),
    ("/v1/search", {"query": "q", "search_provider": "bing"}, "search_provider"),
    ("/v1/query", "not json", None),
]


@pytest.mark.parametrize(("path", "body", "field"), BAD_TRUST)
def test_bad_trust_bodies_are_400_invalid_request(
    client: TestClient, path: str, body: Any, field: str | None
) -> None:
    if isinstance(body, str):
        response = client.post(path, content=body, headers={"content-type": "application/json"})
    else:
        response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["message"]
    assert error["details"].get("field") == field
    if body == {}:
        assert error == {
            "code": "invalid_request",
            "message": "Missing query field",
            "details": {"field": "query"},
        }


def test_an_unknown_document_is_not_found(client: TestClient) -> None:
    response = client.post(
        "/v1/query", json={"query": QUESTION, "documents": ["doc-000000000000000000000000"]}
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_nothing_found_is_404_on_research_and_a_refusal_on_query(aws: object, web: ScholarlyWeb) -> None:
    from functions.answer.app import app
    from tests.support.scholarly_fixtures import install

    install(web, [])
    with TestClient(app, raise_server_exceptions=False) as client:
        research = client.post("/api/v1/research", json={"query": QUESTION})
        assert (research.status_code, research.json()) == (404, {"detail": "No search results found"})
        query = client.post("/v1/query", json={"query": QUESTION})
        assert query.status_code == 200
        assert query.json()["refusal"] is True and query.json()["refusal_code"] == "no_relevant_sources"
        assert query.json()["citations"] == []


def test_every_connector_down_is_503_on_both_faces(aws: object, web: ScholarlyWeb) -> None:
    from functions.answer.app import app

    web.fail("/", "down")
    with TestClient(app, raise_server_exceptions=False) as client:
        research = client.post(
            "/api/v1/research", json={"query": QUESTION, "connectors": ["arxiv", "openalex"]}
        )
        assert research.status_code == 503
        assert research.json()["detail"].startswith("No search connector available")
        query = client.post("/v1/query", json={"query": QUESTION, "options": {"search_provider": "crossref"}})
        assert query.status_code == 503
        assert query.json()["error"]["code"] == "upstream_unavailable"
        stream = client.post(
            "/v1/query/stream", json={"query": QUESTION, "options": {"search_provider": "arxiv"}}
        )
        events = list(iter_sse([stream.content]))
        assert events[-1].event == "error" and events[-1].json()["error"]["code"] == "upstream_unavailable"
