"""Both faces' routes over the in-memory service: request ids, error bodies, streaming, listings."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from functions.answer.app import app
from functions.answer.service import AnswerService
from functions.answer.wiring import answer_service
from functions.cli.sse import iter_sse
from tests.unit.answer.harness import QUESTION, BrokenSearch, Harness, harness

Serve = Callable[[AnswerService], TestClient]


@pytest.fixture
def serve() -> Iterator[Serve]:
    def start(service: AnswerService) -> TestClient:
        app.dependency_overrides[answer_service] = lambda: service
        return TestClient(app, raise_server_exceptions=False)

    yield start
    app.dependency_overrides.clear()


def test_the_request_id_is_echoed_whatever_its_case_or_generated(serve: Serve) -> None:
    client = serve(harness().service())
    for header in ("X-Request-ID", "x-request-id", "X-REQUEST-ID"):
        response = client.get("/v1/health", headers={header: "req-42"})
        assert response.headers["X-Request-ID"] == "req-42"
    generated = client.get("/v1/health").headers["x-request-id"]
    assert len(generated) == 36 and generated != client.get("/v1/health").headers["x-request-id"]
    bad = client.post("/v1/query", json={}, headers={"X-Request-ID": "req-43"})
    assert bad.status_code == 400 and bad.headers["x-request-id"] == "req-43"
    stream = client.post("/v1/query/stream", json={"query": QUESTION}, headers={"X-Request-ID": "req-44"})
    assert stream.headers["x-request-id"] == "req-44"
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["cache-control"] == "no-cache" and stream.headers["x-accel-buffering"] == "no"


def test_a_pipeline_bug_is_a_synthesis_error_without_internals(serve: Serve) -> None:
    client = serve(Harness(BrokenSearch(), broken_pipeline=True).service())
    research = client.post("/api/v1/research", json={"query": QUESTION}, headers={"X-Request-ID": "r-1"})
    assert research.status_code == 500
    assert research.json() == {"detail": "Synthesis error: RuntimeError"}
    assert research.headers["x-request-id"] == "r-1"
    query = client.post("/v1/query", json={"query": QUESTION})
    assert query.status_code == 500
    assert query.json() == {"error": {"code": "internal_error", "message": "Internal error", "details": {}}}
    events = list(iter_sse([client.post("/v1/query/stream", json={"query": QUESTION}).content]))
    assert [e.event for e in events] == ["trace_event", "trace_event", "error"]
    assert [e.json()["name"] for e in events[:2]] == ["request_received", "error"]
    assert events[-1].json()["error"]["code"] == "internal_error"


def test_stream_option_on_query_answers_as_the_stream_route(serve: Serve) -> None:
    client = serve(harness().service())
    response = client.post(
        "/v1/query", json={"query": QUESTION, "options": {"stream": True, "reasoning_effort": "low"}}
    )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = list(iter_sse([response.content]))
    assert events[0].event == "trace_event" and events[-1].event == "final"


def test_unknown_routes_and_methods_answer_in_each_faces_format(serve: Serve) -> None:
    client = serve(harness().service())
    assert client.get("/v1/nothing").json() == {
        "error": {"code": "not_found", "message": "Not Found", "details": {}}
    }
    assert client.get("/api/v1/nothing").json() == {"detail": "Not Found"}
    wrong = client.get("/v1/query")
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"


def test_presets_and_focus_modes_list_the_pipelines_tables(serve: Serve) -> None:
    client = serve(harness().service())
    presets = client.get("/api/v1/presets").json()["presets"]
    assert [p["name"] for p in presets] == ["fast", "comprehensive", "contracrow", "academic", "tutorial"]
    comprehensive = presets[1]
    assert comprehensive["description"] == "Full pipeline with quality gate, RCS, and contradiction detection"
    assert {"quality_gate", "rcs", "contradictions", "outline"} <= set(comprehensive["features"])
    modes = client.get("/api/v1/focus-modes").json()["focus_modes"]
    assert [m["name"] for m in modes] == [
        "general",
        "academic",
        "documentation",
        "comparison",
        "debugging",
        "tutorial",
        "news",
    ]
    assert modes[0] == {"name": "general", "description": "Balanced search across all sources"}
