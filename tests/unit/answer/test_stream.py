"""The event stream of one answer: SSE framing, event order, errors as events, cancellation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.requests import ClientDisconnect
from starlette.types import Message

from functions.answer.schemas import QueryResponse
from functions.answer.sse import KEEP_ALIVE, EventStreamResponse, frame
from functions.answer.stream import answer_events
from functions.cli.sse import ServerSentEvent, iter_sse
from functions.research.pipeline import AnswerRequest
from tests.unit.answer.harness import QUESTION, BrokenSearch, Harness, harness


def test_a_frame_is_one_event_line_and_one_data_line() -> None:
    data = {"text": 'two\nlines and a quote " and ünïcode', "n": 1}
    raw = frame("answer_delta", data)
    assert raw.startswith(b"event: answer_delta\ndata: {") and raw.endswith(b"}\n\n")
    assert raw.count(b"\n") == 3  # the newline inside the text is escaped by JSON
    (event,) = iter_sse([raw[:7], raw[7:20], raw[20:]])
    assert event == ServerSentEvent(
        "answer_delta", json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    )
    assert event.json() == data
    with pytest.raises(ValueError):
        frame("bad\nname", {})


async def _collect(stream: Any) -> list[bytes]:
    return [chunk async for chunk in stream]


def _events(chunks: list[bytes]) -> list[ServerSentEvent]:
    return list(iter_sse(chunks))


def test_trace_events_come_first_then_deltas_citations_and_the_final_answer() -> None:
    rig = harness()
    request = AnswerRequest(question=QUESTION, reasoning_effort="low")
    chunks = asyncio.run(
        _collect(answer_events(rig.service(), request, answer_id="ans-1", trace_id="trace-1"))
    )
    assert all(chunk.endswith(b"\n\n") for chunk in chunks)  # one chunk per event, written as it comes
    events = _events(chunks)
    kinds = [event.event for event in events]
    assert kinds[0] == "trace_event" and events[0].json()["name"] == "request_received"
    assert kinds[-1] == "final"
    assert kinds.index("answer_delta") < kinds.index("citation") < kinds.index("final")
    final = QueryResponse.model_validate(events[-1].json())
    assert final.answer_id == "ans-1" and final.trace_id == "trace-1" and not final.refusal
    (citation,) = [event for event in events if event.event == "citation"]
    assert citation.json()["citations"] == events[-1].json()["citations"]
    trace_names = [event.json()["name"] for event in events if event.event == "trace_event"]
    stored = rig.traces.get("team-default", "trace-1")
    assert stored is not None and [event["name"] for event in stored["events"]] == trace_names


def test_a_failure_is_an_error_event_with_the_trust_error_body() -> None:
    rig = harness(fail=True)
    chunks = asyncio.run(
        _collect(
            answer_events(rig.service(), AnswerRequest(question=QUESTION), answer_id="a", trace_id="trace-2")
        )
    )
    events = _events(chunks)
    assert events[-1].event == "error"
    error = events[-1].json()["error"]
    assert error["code"] == "upstream_unavailable" and "openalex: down" in error["message"]
    assert "final" not in [event.event for event in events]

    broken = Harness(BrokenSearch(), broken_pipeline=True)
    events = _events(
        asyncio.run(
            _collect(
                answer_events(broken.service(), AnswerRequest(question=QUESTION), answer_id="a", trace_id="t")
            )
        )
    )
    assert events[-1].json() == {
        "error": {"code": "internal_error", "message": "Internal error", "details": {}}
    }


class SlowSearch(BrokenSearch):
    async def search(self, query: Any) -> Any:
        await asyncio.sleep(3600)  # never answers within a test: whatever waited for it would time out
        raise AssertionError("never reached")


def test_a_quiet_stream_sends_keep_alive_comments() -> None:
    async def scenario() -> list[bytes]:
        stream = answer_events(
            Harness(SlowSearch()).service(),
            AnswerRequest(question=QUESTION),
            answer_id="a",
            trace_id="trace-3",
            heartbeat_seconds=0.05,
        )
        chunks = [await anext(stream) for _ in range(5)]
        await stream.aclose()
        return chunks

    chunks = asyncio.run(scenario())
    assert KEEP_ALIVE in chunks


def test_closing_the_stream_cancels_the_run_and_keeps_its_trace() -> None:
    rig = Harness(SlowSearch())

    async def scenario() -> list[str]:
        stream = answer_events(
            rig.service(), AnswerRequest(question=QUESTION), answer_id="a", trace_id="trace-4"
        )
        names = []
        async for chunk in stream:
            (event,) = _events([chunk])
            names.append(event.json()["name"])
            if names[-1] == "search_started":
                break
        await stream.aclose()  # back at once: the search it cancels never answers
        return names

    names = asyncio.run(scenario())
    assert names[0] == "request_received"
    stored = rig.traces.get("team-default", "trace-4")
    assert stored is not None
    assert stored["events"][-1]["name"] == "error"
    assert stored["events"][-1]["payload"]["code"] == "cancelled"
    assert rig.opened == rig.closed == 1


def test_the_response_closes_its_events_as_soon_as_the_client_is_gone() -> None:
    closed: list[bool] = []

    async def events() -> Any:
        try:
            yield frame("trace_event", {"name": "request_received"})
            yield frame("final", {})
        finally:
            closed.append(True)

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            raise OSError("the client went away")

    async def receive() -> Message:
        await asyncio.sleep(60)
        return {"type": "http.disconnect"}

    async def scenario() -> bool:
        response = EventStreamResponse(events())
        with pytest.raises(ClientDisconnect):
            await response({"type": "http", "asgi": {"spec_version": "2.4"}}, receive, send)
        return bool(closed)  # before the event loop's shutdown would finalise the generator

    assert asyncio.run(scenario())
