"""The deployed REST client (`HttpRest`, what the MCP function calls on AWS) over real loopback HTTP
through the guarded outbound client: a JSON call with the caller's token, a streamed answer read event
by event, and the guard's refusal of a host it may not reach."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from functions.common.errors import FetchBlocked
from functions.common.outbound.http import HttpClient
from functions.common.settings import Settings
from functions.mcp.rest import HttpRest, RestCall

pytestmark = pytest.mark.integration

app = FastAPI()


@app.post("/prod/v1/query")
async def _query(request: Request) -> Any:
    body = await request.json()
    if not body.get("options", {}).get("stream"):
        return {"answer": "yes", "authorization": request.headers.get("authorization")}

    async def events() -> AsyncIterator[bytes]:
        yield b'event: trace_event\ndata: {"stage": "plan"}\n\n'
        yield b'event: final\ndata: {"answer": "yes"}\n\n'

    return StreamingResponse(events(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    listener.close()


def _rest(host: str, allowed: str) -> HttpRest:
    client = HttpClient(Settings(fetch_allow_private_hosts=allowed), purpose="fetch")
    return HttpRest(f"http://{host}/prod/", client, timeout_seconds=30)


def test_a_call_and_a_streamed_call_with_the_callers_token(served: str) -> None:
    rest = _rest(served, served)
    call = RestCall("POST", "/v1/query", json={"query": "q"})

    async def both() -> tuple[Any, list[tuple[str, Any]]]:
        reply = await rest.send(call, {"authorization": "Bearer t"})
        streamed = RestCall("POST", "/v1/query", json={"query": "q", "options": {"stream": True}})
        async with rest.stream(streamed, {"authorization": "Bearer t"}) as answer:
            assert (answer.status, answer.content_type) == (200, "text/event-stream")
            events = [(event.event, event.data) async for event in answer.events()]
        return reply, events

    reply, events = asyncio.run(both())
    assert reply.ok and reply.json() == {"answer": "yes", "authorization": "Bearer t"}
    assert events == [("trace_event", {"stage": "plan"}), ("final", {"answer": "yes"})]


def test_a_host_the_guard_does_not_allow_is_refused(served: str) -> None:
    rest = _rest(served, "")
    with pytest.raises(FetchBlocked):
        asyncio.run(rest.send(RestCall("POST", "/v1/query", json={}), {}))
