"""`/v1/query/stream` over real HTTP: the local runtime's gateway served by uvicorn on a loopback port (as
`make run` serves it), the scholarly web holding every search's answer until the client has read the
stream's first event, and the Server-Sent Events read as they arrive. The first event must come long
before the answer: while the searches it needs have not been answered at all."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from functions.local_runtime.aws import EmbeddedAws
from tests.e2e.answer_topic import QUESTION, answer_papers, gateway_server
from tests.e2e.scholarly_topic import TopicPaper, environment, serve
from tests.support.scholarly_web import Hold, ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SEARCH_PATHS = (
    ScholarlyWeb.ARXIV_PATH,
    ScholarlyWeb.SEMANTIC_SCHOLAR_PATH,
    ScholarlyWeb.OPENALEX_PATH,
    ScholarlyWeb.CROSSREF_PATH,
)


@dataclass
class LiveServer:
    web: ScholarlyWeb
    papers: list[TopicPaper]
    base_url: str


@dataclass(frozen=True)
class Received:
    event: str
    data: dict[str, Any]
    searches_released: bool  # read after the held searches were let answer


@pytest.fixture(scope="module")
def live() -> Iterator[LiveServer]:
    papers = answer_papers()
    with ScholarlyWeb() as web:
        serve(web, papers)
        with EmbeddedAws(extra_environment=environment(web)), gateway_server() as base_url:
            yield LiveServer(web, papers, base_url)


def _read_events(response: httpx.Response, holds: Sequence[Hold] = ()) -> list[Received]:
    """Each `event:`/`data:` pair the moment its data line arrives (comments are keep-alives); the first
    one read releases `holds`."""
    received: list[Received] = []
    name = ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            released = all(hold.released.is_set() for hold in holds)
            received.append(Received(name, json.loads(line.removeprefix("data: ")), released))
            for hold in holds:
                hold.release()
    return received


def test_the_first_event_arrives_long_before_the_answer(live: LiveServer) -> None:
    body = {"query": QUESTION, "options": {"preset": "fast"}}
    with httpx.Client(base_url=live.base_url, timeout=60) as http:
        assert http.get("/v1/health").status_code == 200  # the container is warm, as it is on AWS
        holds = [live.web.hold(path) for path in SEARCH_PATHS]
        try:
            with http.stream(
                "POST", "/v1/query/stream", json=body, headers={"X-Request-ID": "req-stream-1"}
            ) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                assert response.headers["x-request-id"] == "req-stream-1"
                events = _read_events(response, holds)
        finally:
            for hold in holds:
                hold.release()
        trace = http.get(f"/v1/traces/{events[-1].data['trace_id']}").json()

    first, final = events[0], events[-1]
    assert first.event == "trace_event" and first.data["agent"] == "Planner"
    # on the wire while no search had been answered, and no answer waited out its hold instead
    assert not first.searches_released and not any(hold.outlasted for hold in holds)
    assert final.event == "final" and final.searches_released
    assert final.data["refusal"] is False and final.data["citations"]

    kinds = [event.event for event in events]
    # every trace event, then the answer as it is written, the verified citations and the final body
    assert kinds.index("answer_delta") < kinds.index("citation") < kinds.index("final") == len(kinds) - 1
    completed = [e for e in events if e.event == "trace_event" and e.data["name"] == "search_completed"]
    assert completed and all(event.searches_released for event in completed)
    deltas = "".join(event.data["text"] for event in events if event.event == "answer_delta")
    assert deltas == final.data["answer"]
    citations = [event.data["citations"] for event in events if event.event == "citation"]
    assert citations == [final.data["citations"]]
    streamed = [event.data for event in events if event.event == "trace_event"]
    assert [event["event_id"] for event in trace["events"]] == [event["event_id"] for event in streamed]


def test_query_with_stream_option_streams_the_same_events(live: LiveServer) -> None:
    options: dict[str, Any] = {"preset": "fast", "reasoning_effort": "low"}
    body = {"query": QUESTION, "options": {**options, "stream": True}}
    with httpx.Client(base_url=live.base_url, timeout=60) as http:
        with http.stream("POST", "/v1/query", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["x-request-id"]  # generated when the caller sends none
            events = _read_events(response)
        plain = http.post("/v1/query", json={"query": QUESTION, "options": {**options, "stream": False}})
    assert events[0].event == "trace_event" and events[-1].event == "final"
    final = events[-1].data
    assert plain.status_code == 200 and plain.headers["content-type"].startswith("application/json")
    # The same question answered twice: the same answer and citations, under different ids.
    assert plain.json()["answer"] == final["answer"]
    assert plain.json()["citations"] == final["citations"]
    assert plain.json()["trace_id"] != final["trace_id"]
