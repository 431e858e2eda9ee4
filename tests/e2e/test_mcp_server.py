"""`/mcp` spoken for real: the official MCP SDK's client over HTTP against the local runtime's gateway
(uvicorn on a loopback port, `AUTH=required`), each tool answered by the REST route it mirrors, on a
local scholarly web and the tiny textbook.

Tool listing with schemas, every tool's happy path (its structured content validated against its output
schema, and equal to what the REST route answers the same team), both protocol revisions (the current
one and a 2025-06-18 `initialize`), 401 without a valid token, another team's job as an unknown one,
invalid arguments, 10 concurrent sessions, a job artifact read as a resource, and progress.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from functions.common.storage import InMemoryBlobStore
from functions.local_runtime.aws import EmbeddedAws
from functions.mcp.tools import TOOLS
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.rag.app import memo
from functions.rag.index import build_index, load_knowledge_base, write_index
from functions.rag.loader import set_knowledge_base
from tests.e2e.answer_topic import QUESTION, answer_papers, gateway_server
from tests.e2e.scholarly_topic import GOAL, TopicPaper, environment, serve
from tests.support.mcp_client import (
    CURRENT,
    HANDSHAKE,
    create_team,
    jsonrpc,
    mcp_client,
    output_schemas,
    structured,
)
from tests.support.scholarly_web import ScholarlyWeb
from tests.unit.rag.tiny_book import tiny_book

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

ADMIN_TOKEN = "mcp-admin-secret"
TOOL_NAMES = {tool.name for tool in TOOLS}  # the ten: tests/unit/mcp/test_tools.py
TERMINAL = {"COMPLETED", "PARTIAL", "FAILED", "REFUSED"}


@dataclass
class Team:
    team_id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class Live:
    base_url: str
    papers: list[TopicPaper]
    a: Team
    b: Team
    job_id: str = ""  # team a's job, started through start_research


def _team(base_url: str, name: str) -> Team:
    return Team(*create_team(base_url, ADMIN_TOKEN, name))


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    store = InMemoryBlobStore()
    write_index(store, build_index(tiny_book()))
    set_knowledge_base(load_knowledge_base(store))
    memo.clear()
    papers = answer_papers()
    with ScholarlyWeb() as web:
        serve(web, papers)
        reset_workflow_settings_cache()
        env = environment(web, AUTH="required", ADMIN_TOKEN=ADMIN_TOKEN)
        with EmbeddedAws(extra_environment=env), gateway_server() as base_url:
            yield Live(base_url, papers, _team(base_url, "MCP A"), _team(base_url, "MCP B"))
    reset_workflow_settings_cache()
    set_knowledge_base(None)
    memo.clear()


def _run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def _rest(live: Live, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, f"{live.base_url}{path}", headers=live.a.headers, timeout=240, **kwargs)


def test_tools_are_listed_with_input_and_output_schemas(live: Live) -> None:
    async def listing() -> Any:
        async with mcp_client(live.base_url, live.a.token) as client:
            return (await client.list_tools()).tools

    tools = _run(listing())
    assert {tool.name for tool in tools} == TOOL_NAMES
    for tool in tools:
        assert tool.description
        assert tool.input_schema["type"] == "object" and tool.input_schema["properties"], tool.name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
    search = next(tool for tool in tools if tool.name == "search_papers")
    assert search.input_schema["properties"]["max_results"]["maximum"] == 100
    assert set(search.input_schema["properties"]) == {"query", "max_results", "year_start", "year_end"}


def test_without_a_valid_token_mcp_answers_401(live: Live) -> None:
    body = jsonrpc("tools/list")
    missing = httpx.post(f"{live.base_url}/mcp", json=body, timeout=30)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = httpx.post(
        f"{live.base_url}/mcp", json=body, headers={"Authorization": "Bearer nope"}, timeout=30
    )
    assert wrong.status_code == 401
    assert "invalid_token" in wrong.headers["www-authenticate"]


def test_search_read_ask_and_the_knowledge_base_mirror_their_routes(live: Live) -> None:
    paper = next(item for item in live.papers if item.sample.arxiv_id)

    async def calls() -> dict[str, Any]:
        async with mcp_client(live.base_url, live.a.token) as client:
            schemas = await output_schemas(client)
            return {
                "search": structured(
                    await client.call_tool("search_papers", {"query": "sparse attention", "max_results": 5}),
                    schemas["search_papers"],
                ),
                "read": structured(
                    await client.call_tool("read_paper", {"source_url": f"arxiv:{paper.sample.arxiv_id}"}),
                    schemas["read_paper"],
                ),
                "ask": structured(
                    await client.call_tool("ask", {"question": QUESTION, "preset": "fast"}), schemas["ask"]
                ),
                "kb_search": structured(
                    await client.call_tool("kb_search", {"query": "inventory policy", "k": 3}),
                    schemas["kb_search"],
                ),
                "kb_entity": structured(
                    await client.call_tool("kb_entity", {"entity_type": "algorithm", "number": "2.1"}),
                    schemas["kb_entity"],
                ),
            }

    got = _run(calls())
    assert 0 < len(got["search"]["results"]) <= 5
    rest_search = _rest(
        live, "POST", "/api/tools/search", json={"query": "sparse attention", "max_results": 5}
    )
    assert [hit["url"] for hit in got["search"]["results"]] == [
        hit["url"] for hit in rest_search.json()["results"]
    ]
    assert got["read"]["metadata"]["extraction_success"] is True
    assert got["read"]["extracted_content"]["title"] == paper.sample.title
    quotes = got["read"]["extracted_content"]["evidence"]
    assert quotes and all(
        " ".join(quote["quote"].split()) in " ".join(paper.text.split()) for quote in quotes
    )
    assert got["ask"]["refusal"] is False and got["ask"]["citations"]
    assert all("page" in citation and citation["snippet"] for citation in got["ask"]["citations"])
    assert got["kb_search"]["results"]
    rest_entity = _rest(live, "GET", "/entity/algorithm/2.1")
    assert got["kb_entity"] == rest_entity.json()


def _job_started(live: Live) -> str:
    if live.job_id:
        return live.job_id

    async def start() -> str:
        async with mcp_client(live.base_url, live.a.token) as client:
            schemas = await output_schemas(client)
            started = structured(
                await client.call_tool(
                    "start_research",
                    {"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}},
                ),
                schemas["start_research"],
            )
            return str(started["job_id"])

    live.job_id = _run(start())
    return live.job_id


def test_a_research_job_through_its_tools_and_its_artifact_resource(live: Live) -> None:
    job_id = _job_started(live)

    async def follow() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with mcp_client(live.base_url, live.a.token) as client:
            schemas = await output_schemas(client)
            deadline = time.monotonic() + 240
            status: dict[str, Any] = {}
            while time.monotonic() < deadline:
                status = structured(
                    await client.call_tool("research_status", {"job_id": job_id}), schemas["research_status"]
                )
                if status["status"] in TERMINAL:
                    break
                await asyncio.sleep(0.5)
            results = structured(
                await client.call_tool("research_results", {"job_id": job_id}), schemas["research_results"]
            )
            templates = await client.list_resource_templates()
            assert [item.uri_template for item in templates.resource_templates] == [
                "research://jobs/{job_id}/{artifact}"
            ]
            report = await client.read_resource(f"research://jobs/{job_id}/report.md")
            return status, results, report

    status, results, report = _run(follow())
    assert status["status"] in {"COMPLETED", "PARTIAL"}, status
    assert results["job_id"] == job_id and results["sources"]
    rest_results = _rest(live, "GET", f"/api/agent/results/{job_id}").json()
    # the same body, the artifacts' presigned links aside (each read signs them anew)
    assert (
        results.keys() == rest_results.keys()
        and results["artifacts"].keys() == rest_results["artifacts"].keys()
    )
    assert {k: v for k, v in results.items() if k != "artifacts"} == {
        k: v for k, v in rest_results.items() if k != "artifacts"
    }
    [contents] = report.contents
    assert contents.mime_type.startswith("text/markdown")
    assert contents.text == _rest(live, "GET", f"/api/agent/results/{job_id}/artifacts/report.md").text


def test_another_teams_job_reads_as_an_unknown_one(live: Live) -> None:
    job_id = _job_started(live)
    unknown = job_id[:-4] + ("0000" if not job_id.endswith("0000") else "1111")

    async def as_b() -> tuple[Any, Any, str]:
        async with mcp_client(live.base_url, live.b.token) as client:
            theirs = await client.call_tool("research_status", {"job_id": job_id})
            nobodys = await client.call_tool("research_status", {"job_id": unknown})
            try:
                await client.read_resource(f"research://jobs/{job_id}/report.md")
            except MCPError as exc:
                return theirs, nobodys, exc.error.message
            raise AssertionError("another team's artifact was read")

    theirs, nobodys, refused = _run(as_b())
    assert theirs.is_error and nobodys.is_error
    assert theirs.structured_content is None
    assert theirs.content[0].text.replace(job_id, "<id>") == nobodys.content[0].text.replace(unknown, "<id>")
    assert "404" in theirs.content[0].text and "not found" in theirs.content[0].text
    assert "not found" in refused


def test_invalid_arguments_and_route_refusals_are_error_results(live: Live) -> None:
    async def calls() -> list[Any]:
        async with mcp_client(live.base_url, live.a.token) as client:
            return [
                await client.call_tool("search_papers", {"query": "attention", "max_results": 500}),
                await client.call_tool("search_papers", {"query": "attention", "colour": "blue"}),
                await client.call_tool("ask", {}),
                await client.call_tool("kb_entity", {"entity_type": "formula", "number": "99.99"}),
                await client.call_tool(
                    "search_papers", {"query": "attention", "year_start": 2030, "year_end": 2020}
                ),
            ]

    too_many, unknown_field, missing, no_entity, backwards = _run(calls())
    assert too_many.is_error and "max_results" in too_many.content[0].text
    assert unknown_field.is_error and "colour" in unknown_field.content[0].text
    assert missing.is_error and "question" in missing.content[0].text
    rest_entity = _rest(live, "GET", "/entity/formula/99.99")
    assert no_entity.is_error and rest_entity.json()["detail"] in no_entity.content[0].text
    rest_backwards = _rest(
        live,
        "POST",
        "/api/tools/search",
        json={"query": "attention", "filters": {"year_range": {"start": 2030, "end": 2020}}},
    )
    assert rest_backwards.status_code == 400
    assert backwards.is_error and rest_backwards.json()["message"] in backwards.content[0].text


def test_ten_concurrent_sessions(live: Live) -> None:
    job_id = _job_started(live)

    async def one(index: int) -> str:
        mode = CURRENT if index % 2 else HANDSHAKE
        async with mcp_client(live.base_url, live.a.token, mode=mode) as client:
            listed = await client.list_tools()
            assert len(listed.tools) == len(TOOL_NAMES)
            result = await client.call_tool("research_status", {"job_id": job_id})
            assert not result.is_error, result.content
            return str(result.structured_content["job_id"])

    async def all_of_them() -> list[str]:
        return await asyncio.gather(*(one(index) for index in range(10)))

    assert _run(all_of_them()) == [job_id] * 10


def test_both_protocol_revisions(live: Live) -> None:
    async def current() -> tuple[str, Any]:
        async with mcp_client(live.base_url, live.a.token, mode=CURRENT) as client:
            return client.protocol_version, await client.call_tool(
                "kb_entity", {"entity_type": "algorithm", "number": "2.1"}
            )

    version, result = _run(current())
    assert version == CURRENT and not result.is_error

    # A client of the 2025-06-18 revision: its initialize handshake, then calls naming that revision.
    accept = {"Accept": "application/json, text/event-stream", **live.a.headers}
    initialize = jsonrpc(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "old-client", "version": "1"},
        },
    )
    answer = _sse_json(httpx.post(f"{live.base_url}/mcp", json=initialize, headers=accept, timeout=60))
    assert answer["result"]["protocolVersion"] == "2025-06-18"
    assert answer["result"]["capabilities"]["tools"] is not None
    pinned = {**accept, "MCP-Protocol-Version": "2025-06-18"}
    called = _sse_json(
        httpx.post(
            f"{live.base_url}/mcp",
            json=jsonrpc(
                "tools/call",
                {"name": "kb_entity", "arguments": {"entity_type": "algorithm", "number": "2.1"}},
                2,
            ),
            headers=pinned,
            timeout=60,
        )
    )
    assert called["result"]["isError"] is False
    assert called["result"]["structuredContent"]["number"] == "2.1"


def _sse_json(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, whether JSON or one Server-Sent Event."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [
        line.removeprefix("data:").strip() for line in response.text.splitlines() if line.startswith("data:")
    ]
    return dict(json.loads(data[-1]))


def test_progress_notifications_for_long_calls(live: Live) -> None:
    paper = next(item for item in live.papers if item.sample.arxiv_id)

    async def with_progress() -> tuple[Any, list[str], Any, list[str]]:
        asked: list[str] = []
        read: list[str] = []

        async def on_ask(progress: float, total: float | None, message: str | None) -> None:
            asked.append(message or "")

        async def on_read(progress: float, total: float | None, message: str | None) -> None:
            read.append(message or "")

        async with mcp_client(live.base_url, live.a.token) as client:
            schemas = await output_schemas(client)
            answer = await client.call_tool(
                "ask", {"question": QUESTION, "preset": "fast"}, progress_callback=on_ask
            )
            paper_read = await client.call_tool(
                "read_paper", {"source_url": f"arxiv:{paper.sample.arxiv_id}"}, progress_callback=on_read
            )
            structured(answer, schemas["ask"])
            structured(paper_read, schemas["read_paper"])
            return answer, asked, paper_read, read

    answer, asked, _, read = _run(with_progress())
    # the streamed answer: its events, between the call's start and its end
    assert len(asked) > 3 and asked[0].endswith("started") and asked[-1].endswith("done")
    assert any(message.startswith("writing") for message in asked)
    assert answer.structured_content["citations"]
    assert read[0].endswith("started") and read[-1].endswith("done")
