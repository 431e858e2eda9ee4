"""AnswerService: runs the one answer pipeline for both faces, keeps its trace, and shapes each face's body.

The pipeline (functions/research/pipeline.py) does the work; this module decides what a request means
(connectors, freshness, effort), records the trace of every run (failed or cancelled runs included, with
an error event), and maps an `AnswerResult` to the multi-source body (`to_research_response`) or the
trust body (`to_query_response`). Errors are raised as domain errors; the app's faces map them to HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from functions.answer.errors import InternalFailure, NoResults, SearchUnavailable
from functions.answer.schemas import TrustSearchRequest
from functions.common.errors import DomainError, InvalidInput, NotFound, UpstreamError
from functions.common.observability import get_logger
from functions.common.tenancy import DEFAULT_TEAM
from functions.common.traces import TraceStore
from functions.research.pipeline import AnswerPipeline, AnswerRequest, AnswerResult, CitationsListener
from functions.research.presets import PRESETS
from functions.research.retrieval.evidence import published_at, source_id_for
from functions.research.retrieval.fusion import SearchPort
from functions.research.trace import DECISION, PLANNER, TraceEvent, TraceRecorder
from functions.research.writing.writer import Delta
from functions.search.models import PaperQuery, SearchOutcome
from functions.search.text import snippet_from

logger = get_logger("answer")

NO_CONNECTORS = "No search connectors configured"
ALL_CONNECTORS = "all"
TRACE_KIND = "answer"
FRESHNESS_YEARS = {"day": 0, "week": 0, "month": 0, "year": 1}  # years before the current one

PipelineFactory = Callable[[], AbstractAsyncContextManager[AnswerPipeline]]
TraceListener = Callable[[dict[str, Any]], Awaitable[None]]
ClientAdmission = Callable[[str], Awaitable[None]]


def new_answer_id() -> str:
    return f"ans-{uuid.uuid4().hex}"


def new_trace_id() -> str:
    return f"trace-{uuid.uuid4().hex}"


class GuardedSearch:
    """The search port as the pipeline sees it: a search that cannot reach any connector raises
    SearchUnavailable, so that "no connector answered" is told apart from every other upstream error."""

    def __init__(self, inner: SearchPort) -> None:
        self.inner = inner

    @property
    def connector_names(self) -> list[str]:
        return self.inner.connector_names

    def connector_prefix(self, name: str) -> str:
        return self.inner.connector_prefix(name)

    async def search(self, query: PaperQuery) -> SearchOutcome:
        if not self.inner.connector_names:
            raise SearchUnavailable(NO_CONNECTORS)
        try:
            return await self.inner.search(query)
        except SearchUnavailable:
            raise
        except UpstreamError as exc:
            raise SearchUnavailable(f"No search connector available ({exc.message})") from exc


@dataclass(frozen=True)
class Listeners:
    """What a streaming caller hears while the pipeline runs."""

    on_trace: TraceListener | None = None
    on_delta: Delta | None = None
    on_citations: CitationsListener | None = None


def trace_event_body(event: TraceEvent | dict[str, Any]) -> dict[str, Any]:
    """The seed's AgentTraceEvent, plus the event's name."""
    raw = event.to_dict() if isinstance(event, TraceEvent) else event
    return {
        "event_id": raw["event_id"],
        "agent": raw["agent"],
        "event_type": raw["event_type"],
        "timestamp": raw["timestamp"],
        "payload": raw.get("payload") or {},
        "name": raw.get("name", ""),
    }


def freshness_year_start(freshness: str | None, now: datetime | None = None) -> int | None:
    """Scholarly records carry a publication year, not a date, so freshness is as fine as a year:
    day, week and month keep this year's works, year keeps this year's and last year's (about the last
    twelve months)."""
    if freshness is None:
        return None
    return (now or datetime.now(UTC)).year - FRESHNESS_YEARS[freshness]


def error_payload(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, asyncio.CancelledError):
        return {"code": "cancelled", "message": "the client went away before the answer was finished"}
    if isinstance(exc, DomainError):
        return {"code": exc.code.lower(), "message": exc.message}
    return {"code": "internal_error", "message": type(exc).__name__}


class AnswerService:
    def __init__(
        self,
        pipelines: PipelineFactory,
        traces: TraceStore,
        search: SearchPort,
        *,
        llm_configured: bool = False,
        admit: ClientAdmission | None = None,
    ) -> None:
        self._pipelines = pipelines
        self.traces = traces
        self.search_port = GuardedSearch(search)
        self.llm_configured = llm_configured
        self._admit = admit

    async def admit(self, client_id: str) -> None:
        """The per-client rate limit; raises RateLimited when the client must wait."""
        if self._admit is not None:
            await self._admit(client_id)

    @property
    def connector_names(self) -> list[str]:
        return self.search_port.connector_names

    def connectors_for(self, provider: str | None, field: str) -> list[str] | None:
        """A `search_provider` as connector names: None (every connector) for null or "all"."""
        if provider is None or provider.strip().lower() == ALL_CONNECTORS:
            return None
        name = provider.strip().lower()
        if name not in self.connector_names:
            available = ", ".join([*self.connector_names, ALL_CONNECTORS])
            raise InvalidInput(
                f"{field}: unknown search provider {provider!r} (available: {available})", field
            )
        return [name]

    def check_connectors(self, connectors: Sequence[str] | None, field: str = "connectors") -> None:
        if connectors is None:
            return
        if not connectors:
            raise InvalidInput(f"{field}: must name at least one connector", field)
        unknown = [name for name in connectors if name not in self.connector_names]
        if unknown:
            available = ", ".join(self.connector_names)
            raise InvalidInput(f"{field}: unknown connector {unknown[0]!r} (available: {available})", field)

    async def answer(
        self,
        request: AnswerRequest,
        *,
        trace_id: str,
        listeners: Listeners | None = None,
        received: dict[str, Any] | None = None,
    ) -> AnswerResult:
        """Run the pipeline; its trace is stored whatever happens (a failure adds an `error` event)."""
        heard = listeners or Listeners()

        async def forward(event: TraceEvent) -> None:
            if heard.on_trace is not None:
                await heard.on_trace(trace_event_body(event))

        trace = TraceRecorder(trace_id, forward)
        await trace.emit(
            PLANNER,
            "plan",
            "request_received",
            trace_id=trace_id,
            question=request.question,
            **(received or {}),
        )
        try:
            async with self._pipelines() as pipeline:
                result = await pipeline.run(
                    request, trace, on_delta=heard.on_delta, on_citations=heard.on_citations
                )
        except BaseException as exc:
            with contextlib.suppress(Exception):
                await trace.emit(DECISION, "finalize", "error", **error_payload(exc))
            await self._persist(trace, request)
            if isinstance(exc, Exception) and not isinstance(exc, DomainError):
                logger.exception("answer pipeline failed", trace_id=trace_id)
                raise InternalFailure(type(exc).__name__) from exc
            raise
        await self._persist(trace, request)
        return result

    async def _persist(self, trace: TraceRecorder, request: AnswerRequest) -> None:
        events = [event.to_dict() for event in trace.events]
        team_id = request.team_id or DEFAULT_TEAM
        try:
            # In a thread: the write completes even when this task is being cancelled.
            await asyncio.shield(
                asyncio.to_thread(
                    self.traces.put, team_id, trace.trace_id, request.question, events, TRACE_KIND
                )
            )
        except Exception:  # the answer is worth more than its trace
            logger.exception("trace not stored", trace_id=trace.trace_id)

    def trace(self, team_id: str, trace_id: str) -> dict[str, Any]:
        """The team's trace (an answer's or a job's); another team's id is not found, like an unknown one."""
        found = self.traces.get(team_id, trace_id)
        if found is None:
            raise NotFound(f"trace {trace_id} not found")
        return {
            "trace_id": found["trace_id"],
            "query": found["query"],
            "events": [trace_event_body(event) for event in found["events"]],
        }

    async def search(
        self, team_id: str, request: TrustSearchRequest, now: datetime | None = None
    ) -> list[dict[str, Any]]:
        """Ranked sources for `/v1/search`: the connectors' papers in the search service's order
        (relevance to the query, then reciprocal-rank fusion)."""
        connectors = self.connectors_for(request.search_provider, "search_provider")
        year_start = freshness_year_start(request.freshness, now)
        outcome = await self.search_port.search(
            PaperQuery(
                query=request.query,
                year_start=year_start,
                year_end=(now or datetime.now(UTC)).year if year_start else None,
                per_connector=request.max_results,
                max_results=request.max_results,
                connectors=connectors,
                team_id=team_id,
            )
        )
        results: dict[str, dict[str, Any]] = {}
        for paper in outcome.papers:
            source_id = source_id_for(self.search_port.connector_prefix(paper.source), paper.url)
            results.setdefault(
                source_id,
                {
                    "source_id": source_id,
                    "title": paper.title,
                    "url": paper.url,
                    "published_at": published_at(paper.year),
                    "snippet": snippet_from(paper.abstract, fallback=paper.title),
                },
            )
        return list(results.values())


# ---- mapping to the two faces -------------------------------------------------------------------


def nothing_found(result: AnswerResult) -> bool:
    """No source at all, not even one judged irrelevant (that would be a refusal, not a 404)."""
    return not result.sources and not result.quality_gate.get("filtered_sources")


def _refusal(result: AnswerResult) -> dict[str, Any]:
    decision = result.decision
    return {
        "refusal": decision.refusal,
        "refusal_reason": decision.reason if decision.refusal else None,
        "refusal_code": decision.reason_code if decision.refusal else None,
    }


def to_research_response(request: AnswerRequest, result: AnswerResult) -> dict[str, Any]:
    """The multi-source body (`/api/v1/research`, `/api/v1/ask`); raises NoResults when nothing was found."""
    if nothing_found(result):
        raise NoResults()
    return {
        "query": request.question,
        "content": result.answer,
        "citations": [
            {
                "id": citation.source_id,
                "title": citation.title,
                "url": citation.url,
                "number": citation.number,
                "snippet": citation.snippet,
            }
            for citation in result.citations
        ],
        "sources": [
            {
                "id": source.source_id,
                "title": source.title,
                "url": source.url,
                "content": source.snippet,
                "score": source.score,
                "connector": source.connector,
                "published_at": source.published_at,
                "relevance": source.relevance,
            }
            for source in result.sources
        ],
        "connectors_used": result.connectors_used,
        "model": result.model,
        "usage": result.usage,
        "preset_used": result.preset.display_name if result.preset.name in PRESETS else None,
        "focus_mode_used": request.focus_mode,
        "quality_gate": result.quality_gate,
        "contradictions": [contradiction.to_dict() for contradiction in result.contradictions],
        "rcs_summaries": result.rcs_summaries,
        **_refusal(result),
        "confidence_score": result.decision.confidence,
        "claim_verifications": [claim.to_dict() for claim in result.claim_verifications],
        "failed_connectors": result.failed_connectors,
        "trace_id": result.trace_id,
    }


QUERY_CITATION_FIELDS = (
    "citation_id",
    "source_id",
    "title",
    "url",
    "published_at",
    "snippet",
    "chunk_start",
    "chunk_end",
    "chunk_id",
    "page",
    "origin",
)


def query_citation(citation: dict[str, Any]) -> dict[str, Any]:
    """A pipeline citation (`Citation.to_dict()`) as the trust face's Citation."""
    return {name: citation[name] for name in QUERY_CITATION_FIELDS}


def cited_sources(result: AnswerResult) -> list[dict[str, Any]]:
    """The sources the answer cites, in the order first cited, with what a reader cites them by."""
    by_id = {source.source_id: source for source in result.sources}
    cited = dict.fromkeys(c.source_id for c in result.citations if c.source_id in by_id)
    fields = ("source_id", "title", "url", "published_at", "authors", "venue", "doi")
    return [{name: getattr(by_id[source_id], name) for name in fields} for source_id in cited]


def to_query_response(answer_id: str, result: AnswerResult) -> dict[str, Any]:
    """The trust body (`/v1/query`, the `final` event of `/v1/query/stream`)."""
    return {
        "answer_id": answer_id,
        "query": result.question,
        "answer": result.answer,
        "citations": [query_citation(citation.to_dict()) for citation in result.citations],
        "claim_verifications": [claim.to_dict() for claim in result.claim_verifications],
        "confidence_score": result.decision.confidence,
        "refusal": result.decision.refusal,
        "trace_id": result.trace_id,
        "refusal_reason": result.decision.reason if result.decision.refusal else None,
        "refusal_code": result.decision.reason_code if result.decision.refusal else None,
        "sources": cited_sources(result),
        "failed_connectors": result.failed_connectors,
    }
