"""The MCP server in process (the SDK's in-memory client), its REST client calling real apps in process:
the knowledge base's app on the tiny book, and a small app answering what no route of ours should
(a list, a 500 without JSON) so that those paths are exercised too."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse, StreamingResponse
from mcp.client.client import Client

from functions.common.errors import FetchTimeout
from functions.common.storage import InMemoryBlobStore
from functions.mcp.rest import InProcessRest, RestCall, RestReply
from functions.mcp.server import build_server, rest_message
from functions.rag.app import app as rag_app
from functions.rag.app import memo
from functions.rag.index import build_index, load_knowledge_base, write_index
from functions.rag.loader import set_knowledge_base
from tests.unit.rag.tiny_book import tiny_book


@pytest.fixture(scope="module")
def knowledge_base() -> Iterator[None]:
    store = InMemoryBlobStore()
    write_index(store, build_index(tiny_book()))
    set_knowledge_base(load_knowledge_base(store))
    memo.clear()
    yield
    set_knowledge_base(None)
    memo.clear()


def _call(app: Any, name: str, arguments: dict[str, Any]) -> Any:
    async def run() -> Any:
        async with Client(build_server(lambda: InProcessRest(app))) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(run())


def test_a_route_answer_is_the_structured_content(knowledge_base: None) -> None:
    result = _call(rag_app, "kb_entity", {"entity_type": "algorithm", "number": "2.1"})
    assert not result.is_error
    assert result.structured_content["title"] == "(s,S) inventory policy"
    assert result.content[0].text == "algorithm 2.1: (s,S) inventory policy"


def test_a_route_refusal_is_an_error_result_with_its_message(knowledge_base: None) -> None:
    result = _call(rag_app, "kb_entity", {"entity_type": "algorithm", "number": "99.9"})
    assert result.is_error and result.structured_content is None
    assert result.content[0].text.startswith("HTTP 404: ")
    bad_type = _call(rag_app, "kb_entity", {"entity_type": "planet", "number": "1.1"})
    assert bad_type.is_error
    assert (
        bad_type.content[0].text == "HTTP 400: entity_type must be one of: formula, algorithm, table, figure"
    )


def test_unknown_tools_and_invalid_arguments_are_error_results(knowledge_base: None) -> None:
    unknown = _call(rag_app, "delete_everything", {})
    assert unknown.is_error and "kb_entity" in unknown.content[0].text
    invalid = _call(rag_app, "kb_search", {"query": "x", "k": 1000})
    assert invalid.is_error and invalid.content[0].text.startswith("Invalid arguments for kb_search: k:")


odd = FastAPI()


@odd.get("/entity/{entity_type}/{number}")
def _listing(entity_type: str, number: str) -> Any:
    if entity_type == "list":
        return [1, 2, 3]
    return PlainTextResponse("upstream exploded", status_code=500)


@odd.post("/v1/query")
def _stream() -> StreamingResponse:
    async def events() -> Any:
        yield b'event: trace_event\ndata: {"stage": "plan"}\n\n'
        yield b'event: error\ndata: {"error": {"code": "refused", "message": "no connector answered"}}\n\n'

    return StreamingResponse(events(), media_type="text/event-stream")


def test_answers_that_are_no_json_object_are_error_results() -> None:
    listed = _call(odd, "kb_entity", {"entity_type": "list", "number": "1"})
    assert listed.is_error and "without a JSON object" in listed.content[0].text
    failed = _call(odd, "kb_entity", {"entity_type": "other", "number": "1"})
    assert failed.is_error and failed.content[0].text == "HTTP 500: upstream exploded"


def test_a_streamed_error_event_is_an_error_result_with_progress_before_it() -> None:
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async def run() -> Any:
        async with Client(build_server(lambda: InProcessRest(odd))) as client:
            return await client.call_tool(
                "ask", {"question": "Why?"}, progress_callback=on_progress, meta={"progress_token": "ask-1"}
            )

    result = asyncio.run(run())
    assert result.is_error and result.content[0].text == "no connector answered"
    assert seen[:2] == ["POST /v1/query: started", "plan"]


class _Unreachable:
    async def send(self, call: RestCall, headers: Any) -> RestReply:
        raise FetchTimeout(f"{call.method} {call.path} exceeded its 55 s budget")

    def stream(self, call: RestCall, headers: Any) -> Any:
        raise AssertionError("not streamed without a progress token")


def test_an_unreachable_route_is_an_error_result() -> None:
    async def run() -> Any:
        async with Client(build_server(lambda: _Unreachable())) as client:
            return await client.call_tool("research_status", {"job_id": "job-1"})

    result = asyncio.run(run())
    assert result.is_error
    assert result.content[0].text == (
        "GET /api/agent/status/{job_id} could not be reached: GET /api/agent/status/job-1 exceeded its 55 s budget"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"error": {"code": "not_found", "message": "job x not found", "details": {}}}', "job x not found"),
        (b'{"error": "not_found", "message": "job x not found"}', "job x not found"),
        (b'{"detail": "Not found"}', "Not found"),
        (b'{"detail": "No entity", "status_code": 404, "error_code": "NOT_FOUND"}', "No entity"),
        (b'{"error": "Rate limit exceeded", "retry_after": 3}', "Rate limit exceeded"),
    ],
)
def test_the_message_of_each_faces_error_body(body: bytes, message: str) -> None:
    assert rest_message(RestReply(404, "application/json", body)) == f"HTTP 404: {message}"
