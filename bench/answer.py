"""Benchmark: the answer API on the local runtime, served over HTTP by uvicorn as `make run` serves it,
against a simulated scholarly web with the latencies of bench/workflow.py, versus the same pipeline with
its search and full-text calls made one at a time (the seed's plan did everything in sequence).

    .venv/bin/python -m bench.answer [--rounds 3] [--sequential-rounds 1] [--seed 11]

Measured per round: `/v1/query` for each preset, `/api/v1/ask`, and `/v1/query/stream` (preset fast:
the time to its first event and to its final one). The simulated web answers the four search APIs after
0.3-1.5 s and serves each PDF after 1-4 s; a latency is drawn per request path from the seed, the round
and the run's label, so the concurrent run and the sequential one wait alike for the same request.
Every call starts cold: the search cache and the extraction cache are emptied before it.

  - concurrent: the answer function as deployed (functions/answer/wiring.py) behind the gateway;
  - sequential: the same AnswerPipeline (same Retriever, scorer and adapters), called in-process, with
    its search and full-text ports wrapped so that one call runs at a time (an asyncio.Lock each). A
    search call still asks its connectors concurrently, as the search service always does.

The slowest search call of a run is the longest `search_completed` elapsed time in its trace (one
search = one planned query sent to every connector). Targets: fast and ask within 1.3x their slowest
search call; comprehensive under 20 s typically (p50) and under API Gateway's 29 s always; the first
streamed event under 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Unpack

import boto3
import httpx

from functions.answer.service import AnswerService, Listeners
from functions.answer.wiring import UploadedDocuments, relevance_scorer
from functions.common.documents import DynamoDocumentRepository
from functions.common.models import ExtractedPaper, ExtractOptions, FullTextPort
from functions.common.settings import get_settings
from functions.common.tenancy import DEFAULT_TEAM
from functions.common.traces import InMemoryTraceStore
from functions.extract.service import ExtractionService
from functions.local_runtime.aws import EmbeddedAws
from functions.research.pipeline import AnswerPipeline, AnswerRequest
from functions.research.retrieval.fusion import SearchPort
from functions.research.retrieval.retriever import Retriever
from functions.search.models import PaperQuery, SearchOutcome
from functions.search.service import SearchService
from tests.e2e.answer_topic import QUESTION, answer_papers, gateway_server
from tests.e2e.scholarly_topic import NO_POLITENESS, environment, figure, serve
from tests.support.scholarly_web import RecordedRequest, Reply, ScholarlyWeb

PRESETS = ("fast", "comprehensive", "contracrow", "academic", "tutorial")
ASK, STREAM = "ask", "stream"
SEARCH_LATENCY = (0.3, 1.5)
PDF_LATENCY = (1.0, 4.0)
FAST_FACTOR = 1.3
COMPREHENSIVE_TYPICAL, COMPREHENSIVE_LIMIT = 20.0, 29.0
FIRST_EVENT_TARGET = 0.3
# Where a run's time goes, from its trace: the event that ends each stage (the previous one starts it).
STAGES = (
    ("plan", "plan_created"),
    ("search", "search_completed"),
    ("rank sources", "sources_ranked"),
    ("read full text", "full_text_read"),
    ("evidence", "retrieval_completed"),
    ("write+verify", "decision"),
)


class SimulatedWeb:
    """The served literature behind latency drawn from (seed, current label, request path and query)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.label = "warm-up"
        self.web = ScholarlyWeb().start()
        serve(self.web, answer_papers())
        routes: dict[str, Any] = self.web._routes  # wrap the canned replies and PDF handlers
        for path in (
            ScholarlyWeb.ARXIV_PATH,
            ScholarlyWeb.SEMANTIC_SCHOLAR_PATH,
            ScholarlyWeb.OPENALEX_PATH,
            ScholarlyWeb.CROSSREF_PATH,
        ):
            self.web.set_handler(path, self._delayed(_constant(routes[path]), *SEARCH_LATENCY))
        for prefix, handler in list(self.web._prefix_handlers.items()):
            self.web.set_handler(prefix, self._delayed(handler, *PDF_LATENCY), prefix=True)

    def _delayed(
        self, handler: Callable[[RecordedRequest], Reply], low: float, high: float
    ) -> Callable[[RecordedRequest], Reply]:
        def delayed(request: RecordedRequest) -> Reply:
            key = request.path + "?" + "&".join(f"{k}={v}" for k, v in sorted(request.query.items()))
            time.sleep(random.Random(f"{self.seed}:{self.label}:{key}").uniform(low, high))
            return handler(request)

        return delayed

    def stop(self) -> None:
        self.web.stop()


def _constant(reply: Reply) -> Callable[[RecordedRequest], Reply]:
    def answer(request: RecordedRequest) -> Reply:
        return reply

    return answer


def forget_caches() -> None:
    """Empty the search cache table and the extraction cache (parsed papers and PDFs)."""
    settings = get_settings()
    table = boto3.resource("dynamodb", region_name="us-east-1").Table(settings.cache_table)
    keys = [item["cache_key"] for item in table.scan(ProjectionExpression="cache_key").get("Items", [])]
    with table.batch_writer() as batch:
        for key in keys:
            batch.delete_item(Key={"cache_key": key})
    s3 = boto3.client("s3", region_name="us-east-1")
    for prefix in ("parsed/", "pdfs/"):
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=settings.data_bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                s3.delete_object(Bucket=settings.data_bucket, Key=item["Key"])


@dataclass
class Run:
    label: str  # preset, "ask" or "stream"
    round: int
    wall: float
    slowest_search: float
    refusal: bool
    first_event: float | None = None
    stages: dict[str, float] = field(default_factory=dict)


@dataclass
class Results:
    runs: list[Run] = field(default_factory=list)

    def of(self, label: str) -> list[Run]:
        return [run for run in self.runs if run.label == label]


def stages(events: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds per stage (from the previous stage's last event to this stage's last event)."""

    def at(event: dict[str, Any]) -> float:
        return datetime.strptime(event["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()

    last = {event["name"]: at(event) for event in events}
    previous = at(events[0])
    spent: dict[str, float] = {}
    for stage, name in STAGES:
        if name in last:
            spent[stage] = last[name] - previous
            previous = last[name]
    return spent


def slowest_search(events: list[dict[str, Any]]) -> float:
    elapsed = [
        float(event["payload"].get("elapsed_ms") or 0.0)
        for event in events
        if event["name"] == "search_completed"
    ]
    return max(elapsed, default=0.0) / 1000


# ---- concurrent: the deployed answer function over HTTP ----------------------------------------------


def concurrent_run(http: httpx.Client, web: SimulatedWeb, label: str, round_: int) -> Run:
    web.label = f"{round_}:{label}"
    forget_caches()
    started = time.perf_counter()
    if label == ASK:
        response = http.post("/api/v1/ask", json={"query": QUESTION})
        body = response.json()
        first = None
    elif label == STREAM:
        body, first = _stream(http, started)
    else:
        response = http.post("/v1/query", json={"query": QUESTION, "options": {"preset": label}})
        body = response.json()
        first = None
    wall = time.perf_counter() - started
    if "trace_id" not in body:
        raise RuntimeError(f"{label}: {body}")
    events = http.get(f"/v1/traces/{body['trace_id']}").json()["events"]
    return Run(label, round_, wall, slowest_search(events), bool(body["refusal"]), first, stages(events))


def _stream(http: httpx.Client, started: float) -> tuple[dict[str, Any], float]:
    first: float | None = None
    final: dict[str, Any] = {}
    body = {"query": QUESTION, "options": {"preset": "fast"}}
    with http.stream("POST", "/v1/query/stream", json=body) as response:
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                first = first if first is not None else time.perf_counter() - started
                if name == "final":
                    final = json.loads(line.removeprefix("data: "))
    if first is None or not final:
        raise RuntimeError("the stream ended without events or without its final event")
    return final, first


# ---- sequential: the same pipeline, one search or full-text call at a time -------------------------


class OneSearchAtATime:
    def __init__(self, inner: SearchPort) -> None:
        self.inner = inner
        self._lock = asyncio.Lock()

    @property
    def connector_names(self) -> list[str]:
        return self.inner.connector_names

    def connector_prefix(self, name: str) -> str:
        return self.inner.connector_prefix(name)

    async def search(self, query: PaperQuery) -> SearchOutcome:
        async with self._lock:
            return await self.inner.search(query)


class OneReadAtATime:
    def __init__(self, inner: FullTextPort) -> None:
        self.inner = inner
        self._lock = asyncio.Lock()

    async def extract(self, source_url: str, **options: Unpack[ExtractOptions]) -> ExtractedPaper:
        async with self._lock:
            return await self.inner.extract(source_url, **options)


def sequential_service() -> AnswerService:
    settings = get_settings()

    @asynccontextmanager
    async def pipeline() -> AsyncIterator[AnswerPipeline]:
        extraction = ExtractionService.from_settings(settings)
        try:
            retriever = Retriever(
                search=OneSearchAtATime(service.search_port),
                full_text=OneReadAtATime(extraction),
                documents=UploadedDocuments(DynamoDocumentRepository()),
                scorer=relevance_scorer(),
            )
            yield AnswerPipeline(retriever, llm=None)
        finally:
            await extraction.aclose()

    service = AnswerService(pipeline, InMemoryTraceStore(), SearchService.from_settings(settings))
    return service


async def sequential_run(service: AnswerService, web: SimulatedWeb, label: str, round_: int) -> Run:
    web.label = f"{round_}:{label}"
    await asyncio.to_thread(forget_caches)
    if label == ASK:
        request = AnswerRequest(question=QUESTION, reasoning_effort="low")
    else:
        request = AnswerRequest(question=QUESTION, preset="fast" if label == STREAM else label)
    first: list[float] = []
    started = time.perf_counter()

    async def on_trace(event: dict[str, Any]) -> None:
        if not first:
            first.append(time.perf_counter() - started)

    trace_id = f"sequential-{round_}-{label}"
    result = await service.answer(request, trace_id=trace_id, listeners=Listeners(on_trace=on_trace))
    wall = time.perf_counter() - started
    stored = service.traces.get(DEFAULT_TEAM, trace_id)
    assert stored is not None
    return Run(
        label,
        round_,
        wall,
        slowest_search(stored["events"]),
        result.decision.refusal,
        first[0] if label == STREAM else None,
        stages(stored["events"]),
    )


# ---- report ----------------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = share * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def report(concurrent: Results, sequential: Results, labels: list[str]) -> None:
    print(f"\n{'run':<14}{'round':>6}{'concurrent s':>14}{'slowest search s':>18}{'ratio':>7}", end="")
    figure(f"{'sequential s':>14}{'slowest search s':>18}{'first event ms':>16}")
    for label in labels:
        theirs_by_round = {run.round: run for run in sequential.of(label)}
        for ours in concurrent.of(label):
            ratio = ours.wall / ours.slowest_search if ours.slowest_search else float("nan")
            first = f"{ours.first_event * 1000:.0f}" if ours.first_event is not None else "-"
            refused = " (refused)" if ours.refusal else ""
            theirs = theirs_by_round.get(ours.round)
            sequential_columns = (
                f"{theirs.wall:>14.2f}{theirs.slowest_search:>18.2f}" if theirs else f"{'-':>14}{'-':>18}"
            )
            figure(
                f"{label:<14}{ours.round:>6}{ours.wall:>14.2f}{ours.slowest_search:>18.2f}{ratio:>7.2f}"
                f"{sequential_columns}{first:>16}{refused}"
            )
    figure(f"\n{'endpoint':<30}{'p50 s':>8}{'p95 s':>8}{'seq p50 s':>11}{'seq p95 s':>11}{'speed-up':>10}")
    for label in labels:
        walls = [run.wall for run in concurrent.of(label)]
        baseline = {run.round: run.wall for run in sequential.of(label)}
        # speed-up over the rounds run both ways (the same simulated latencies)
        matched = sum(run.wall for run in concurrent.of(label) if run.round in baseline)
        speed_up = f"{sum(baseline.values()) / matched:>9.1f}x" if matched else f"{'-':>10}"
        name = {ASK: "/api/v1/ask", STREAM: "/v1/query/stream (fast)"}.get(label, f"/v1/query {label}")
        seq = list(baseline.values())
        seq_columns = f"{percentile(seq, 0.5):>11.2f}{percentile(seq, 0.95):>11.2f}" if seq else f"{'-':>22}"
        figure(
            f"{name:<30}{percentile(walls, 0.5):>8.2f}{percentile(walls, 0.95):>8.2f}{seq_columns}{speed_up}"
        )
    names = [stage for stage, _ in STAGES]
    print(f"\nwhere the time goes, concurrent runs, p50 s (from the traces)\n{'run':<14}", end="")
    figure("".join(f"{name:>16}" for name in names))
    for label in labels:
        runs = concurrent.of(label)
        cells = []
        for name in names:
            spent = [run.stages[name] for run in runs if name in run.stages]
            cells.append(f"{percentile(spent, 0.5):>16.2f}" if spent else f"{'-':>16}")
        figure(f"{label:<14}{''.join(cells)}")
    figure("\ntargets (concurrent runs):")
    for label in ("fast", ASK):
        runs = concurrent.of(label)
        within = [run for run in runs if run.wall <= FAST_FACTOR * run.slowest_search]
        worst = max(run.wall / run.slowest_search for run in runs if run.slowest_search)
        figure(
            f"  {label:<14} within {FAST_FACTOR}x its slowest search call: {len(within)}/{len(runs)} "
            f"(worst {worst:.2f}x)"
        )
    walls = [run.wall for run in concurrent.of("comprehensive")]
    figure(
        f"  comprehensive  p50 {percentile(walls, 0.5):.1f} s (target < {COMPREHENSIVE_TYPICAL:.0f} s), "
        f"max {max(walls):.1f} s (target always < {COMPREHENSIVE_LIMIT:.0f} s)"
    )
    firsts = [run.first_event for run in concurrent.of(STREAM) if run.first_event is not None]
    figure(
        f"  first SSE event p50 {percentile(firsts, 0.5) * 1000:.0f} ms, max {max(firsts) * 1000:.0f} ms "
        f"(target < {FIRST_EVENT_TARGET * 1000:.0f} ms)"
    )


def main() -> None:
    print(f"conditions: {NO_POLITENESS}")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="concurrent runs of every endpoint")
    parser.add_argument(
        "--sequential-rounds", type=int, default=1, help="sequential runs of every endpoint (the baseline)"
    )
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    labels = [*PRESETS, ASK, STREAM]
    web = SimulatedWeb(args.seed)
    figure(
        f"simulated web: {len(answer_papers())} papers; search latency {SEARCH_LATENCY[0]}-{SEARCH_LATENCY[1]} s, "
        f"PDF latency {PDF_LATENCY[0]:.0f}-{PDF_LATENCY[1]:.0f} s; {args.rounds} round(s); cores: {os.cpu_count()}"
    )
    concurrent, sequential = Results(), Results()
    env = environment(web.web, CLIENT_RATE_LIMIT_PER_MINUTE="100000")
    try:
        with EmbeddedAws(extra_environment=env), gateway_server() as base_url:
            with httpx.Client(base_url=base_url, timeout=120) as http:
                concurrent_run(http, web, "fast", -1)  # warm the container, as a deployed one is
                for round_ in range(args.rounds):
                    for label in labels:
                        concurrent.runs.append(concurrent_run(http, web, label, round_))
            service = sequential_service()

            async def sequential_rounds() -> None:
                await sequential_run(service, web, "fast", -1)
                for round_ in range(min(args.sequential_rounds, args.rounds)):
                    for label in labels:
                        sequential.runs.append(await sequential_run(service, web, label, round_))

            asyncio.run(sequential_rounds())
    finally:
        web.stop()
    report(concurrent, sequential, labels)


if __name__ == "__main__":
    main()
