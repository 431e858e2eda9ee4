"""The in-process REST client against a real ASGI app: headers and body as uvicorn would pass them, and a
streamed body read event by event while the app is still writing it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from functions.mcp.rest import InProcessRest, RestCall, forwarded, parse_events

app = FastAPI()
release = asyncio.Event()


@app.post("/echo/{name}")
async def _echo(name: str, request: Request) -> dict[str, Any]:
    return {
        "name": name,
        "body": await request.json(),
        "query": dict(request.query_params),
        "authorization": request.headers.get("authorization"),
    }


@app.get("/events")
async def _events() -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        yield b'event: trace_event\ndata: {"stage": "plan"}\n\n'
        await release.wait()  # the second event waits until the reader has seen the first
        yield b'event: final\ndata: {"answer": "yes"}\n\n'

    return StreamingResponse(body(), media_type="text/event-stream")


def test_a_call_reaches_the_app_with_its_headers_body_and_query() -> None:
    rest = InProcessRest(app)
    call = RestCall("POST", "/echo/a%20b", json={"x": [1, 2]}, query={"k": "v"})
    reply = asyncio.run(rest.send(call, {"authorization": "Bearer t"}))
    assert reply.ok and reply.content_type == "application/json"
    assert reply.json() == {
        "name": "a b",
        "body": {"x": [1, 2]},
        "query": {"k": "v"},
        "authorization": "Bearer t",
    }


def test_streamed_events_arrive_while_the_app_writes() -> None:
    async def read() -> list[tuple[str, Any]]:
        release.clear()
        seen: list[tuple[str, Any]] = []
        async with InProcessRest(app).stream(RestCall("GET", "/events"), {}) as reply:
            assert (reply.status, reply.content_type) == (200, "text/event-stream")
            async for event in reply.events():
                seen.append((event.event, event.data))
                release.set()
        return seen

    assert asyncio.run(read()) == [("trace_event", {"stage": "plan"}), ("final", {"answer": "yes"})]


def test_events_split_across_chunks_and_comments() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for chunk in (b": keep-alive\n\nevent: answer_del", b'ta\r\ndata: {"text": "a', b'b"}\r\n\r\n'):
            yield chunk

    async def read() -> list[Any]:
        return [(event.event, event.data) async for event in parse_events(chunks())]

    assert asyncio.run(read()) == [("answer_delta", {"text": "ab"})]


def test_only_the_credentials_request_id_and_caller_are_passed_on() -> None:
    headers = {
        "Authorization": "Bearer t",
        "X-Api-Key": "k",
        "X-Team-Id": "team-x",
        "Cookie": "c",
        "X-Request-Id": "r",
    }
    assert forwarded(headers, "10.0.0.7") == {
        "authorization": "Bearer t",
        "x-api-key": "k",
        "x-request-id": "r",
        "x-forwarded-for": "10.0.0.7",
    }
    behind_a_proxy = forwarded({"X-Forwarded-For": "203.0.113.9, 10.0.0.1"}, "10.0.0.1")
    assert behind_a_proxy == {"x-forwarded-for": "203.0.113.9, 10.0.0.1"}
