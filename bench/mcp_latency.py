"""Benchmark: each MCP tool's latency next to its REST twin's, on the same work.

    .venv/bin/python -m bench.mcp_latency [--rounds 5]

The local runtime's gateway served by uvicorn on a loopback port (as `make run` serves it), with
`AUTH=required` and one team; the scholarly web of the end-to-end tests (local, no provider spacing) and
the tiny textbook as the knowledge base. Per tool and round: the REST route called with httpx, and the
tool called with the official MCP SDK's client over an open session (the current protocol revision, JSON
answers) with the same arguments, in alternating order (REST first in even rounds). Both see the same
caches: one untimed warm-up call of each precedes the rounds, so neither pays the first fetch.
`start_research` starts a job per call (rapid depth), measured last so that those jobs slow no other
figure; the status and results tools read one finished job.

Printed: the median of each (milliseconds), and MCP / REST; the target is within 1.2x.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # before the apps' loggers are made

from functions.common.storage import InMemoryBlobStore
from functions.local_runtime.aws import EmbeddedAws
from functions.rag.app import memo
from functions.rag.index import build_index, load_knowledge_base, write_index
from functions.rag.loader import set_knowledge_base
from tests.e2e.answer_topic import QUESTION, answer_papers, gateway_server
from tests.e2e.scholarly_topic import GOAL, NO_POLITENESS, TopicPaper, environment, serve
from tests.support.mcp_client import create_team, mcp_client
from tests.support.registry_web import RegistryWeb
from tests.support.scholarly_web import ScholarlyWeb
from tests.unit.rag.tiny_book import tiny_book

ADMIN_TOKEN = "bench-mcp-admin"
TARGET = 1.2
TERMINAL = {"COMPLETED", "PARTIAL", "FAILED", "REFUSED"}


@dataclass(frozen=True)
class Twin:
    tool: str
    arguments: dict[str, Any]
    method: str
    path: str
    body: dict[str, Any] | None = None


def _checks(papers: list[TopicPaper]) -> list[Twin]:
    """`verify_claim` on a paper's measured result, named by its arXiv id, and `check_references` on a
    formatted reference, a bare DOI, a real DOI under an invented title and an invented reference."""
    paper = next(item for item in papers if item.sample.arxiv_id)
    finding = next(s for s in paper.text.split(". ") if s.startswith("In our experiments")) + "."
    claim = {"claim": finding, "sources": [str(paper.sample.arxiv_id)]}
    real, other = [item.sample for item in papers if item.sample.doi][:2]
    references = {
        "references": [
            f"{', '.join(real.authors)}. {real.title}. {real.year}.",
            f"doi:{other.doi}",
            f"{real.authors[0]}. Deep reinforcement learning for glacier retreat forecasting. doi:{real.doi}",
            "Zhang Q, Ivanova P. Quantum annealing schedules for protein docking benchmarks. Nat Chem. 2018.",
        ]
    }
    return [
        Twin("verify_claim", claim, "POST", "/v1/claims/verify", claim),
        Twin("check_references", references, "POST", "/v1/references/check", references),
    ]


def twins(papers: list[TopicPaper], job_id: str) -> list[Twin]:
    arxiv_id = next(paper.sample.arxiv_id for paper in papers if paper.sample.arxiv_id)
    search = {"query": "sparse attention", "max_results": 5}
    ask = {"query": QUESTION, "options": {"preset": "fast"}}
    start = {"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}}
    return [
        Twin("search_papers", search, "POST", "/api/tools/search", search),
        Twin(
            "read_paper",
            {"source_url": f"arxiv:{arxiv_id}"},
            "POST",
            "/api/tools/extract",
            {"source_url": f"arxiv:{arxiv_id}"},
        ),
        Twin("ask", {"question": QUESTION, "preset": "fast"}, "POST", "/v1/query", ask),
        *_checks(papers),
        Twin("research_status", {"job_id": job_id}, "GET", f"/api/agent/status/{job_id}"),
        Twin("research_results", {"job_id": job_id}, "GET", f"/api/agent/results/{job_id}"),
        Twin(
            "kb_search",
            {"query": "inventory policy", "k": 3},
            "POST",
            "/search/semantic",
            {"query": "inventory policy", "k": 3},
        ),
        Twin("kb_entity", {"entity_type": "algorithm", "number": "2.1"}, "GET", "/entity/algorithm/2.1"),
        Twin("start_research", start, "POST", "/api/agent/execute", start),
    ]


async def _timed(call: Callable[[], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def measure(
    base_url: str, token: str, items: list[Twin], rounds: int
) -> list[tuple[str, float, float]]:
    headers = {"Authorization": f"Bearer {token}"}
    figures: list[tuple[str, float, float]] = []
    async with (
        httpx.AsyncClient(base_url=base_url, headers=headers, timeout=240) as http,
        mcp_client(base_url, token) as client,
    ):

        async def rest(twin: Twin) -> None:
            response = await http.request(twin.method, twin.path, json=twin.body)
            assert response.status_code < 300, (twin.path, response.status_code, response.text[:300])

        async def tool(twin: Twin) -> None:
            result = await client.call_tool(twin.tool, twin.arguments)
            assert not result.is_error, (twin.tool, result.content)

        await (
            client.list_tools()
        )  # as a client does first: the output schemas its results are checked against
        for twin in items:
            if twin.tool != "start_research":
                await rest(twin)
                await tool(twin)
            rest_ms: list[float] = []
            mcp_ms: list[float] = []
            for index in range(rounds):
                pair = [(rest_ms, functools.partial(rest, twin)), (mcp_ms, functools.partial(tool, twin))]
                for sink, call in pair if index % 2 == 0 else reversed(pair):
                    sink.append(await _timed(call))
            figures.append((twin.tool, statistics.median(rest_ms), statistics.median(mcp_ms)))
    return figures


async def finished_job(base_url: str, token: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    body = {"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as http:
        job_id = str((await http.post("/api/agent/execute", json=body)).json()["job_id"])
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = (await http.get(f"/api/agent/status/{job_id}")).json()["status"]
            if status in TERMINAL:
                return job_id
            await asyncio.sleep(0.5)
    raise SystemExit(f"job {job_id} did not finish")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    store = InMemoryBlobStore()
    write_index(store, build_index(tiny_book()))
    set_knowledge_base(load_knowledge_base(store))
    memo.clear()
    papers = answer_papers()
    with ScholarlyWeb() as web:
        serve(web, papers)
        RegistryWeb([paper.sample for paper in papers]).install(web)  # DOI lookups for the checks
        env = environment(web, AUTH="required", ADMIN_TOKEN=ADMIN_TOKEN)
        with EmbeddedAws(extra_environment=env), gateway_server() as base_url:
            _, token = create_team(base_url, ADMIN_TOKEN, "bench")
            job_id = asyncio.run(finished_job(base_url, token))
            figures = asyncio.run(measure(base_url, token, twins(papers, job_id), args.rounds))
    print(f"conditions: {NO_POLITENESS}; {args.rounds} rounds; medians in ms; AUTH=required")
    print(f"{'tool':<18} {'REST':>9} {'MCP':>9} {'MCP/REST':>9}")
    for name, rest_ms, mcp_ms in figures:
        ratio = mcp_ms / rest_ms
        flag = "" if ratio <= TARGET else f"  (over the {TARGET}x target)"
        print(f"{name:<18} {rest_ms:>9.1f} {mcp_ms:>9.1f} {ratio:>8.2f}x{flag}")


if __name__ == "__main__":
    main()
