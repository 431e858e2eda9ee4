"""Fused search: every planned search at once, each reported as it finishes, papers fused across searches
by reciprocal rank."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from functions.common.errors import DomainError, InvalidInput, UpstreamError
from functions.common.models import Paper
from functions.research.planning.plan import AnswerSettings, ResearchPlan
from functions.research.trace import RETRIEVER, TraceRecorder
from functions.search.models import PaperQuery, SearchOutcome

RRF_K = 60


class Searcher(Protocol):
    """What runs one query at the search service (a job's Search state needs no more)."""

    async def search(self, query: PaperQuery) -> SearchOutcome: ...


class SearchPort(Searcher, Protocol):
    @property
    def connector_names(self) -> list[str]: ...

    def connector_prefix(self, name: str) -> str: ...


@dataclass
class FusedResults:
    fused: list[tuple[Paper, float]]  # best first, with the fused score
    connectors_used: list[str] = field(default_factory=list)
    failed_connectors: dict[str, str] = field(default_factory=dict)  # failed everywhere they were asked

    def merged(self, more: FusedResults) -> FusedResults:
        used = [*self.connectors_used, *(n for n in more.connectors_used if n not in self.connectors_used)]
        failed = {
            k: v for k, v in {**self.failed_connectors, **more.failed_connectors}.items() if k not in used
        }
        return FusedResults(merge_fused(self.fused, more.fused), used, failed)


def search_queries(plan: ResearchPlan[AnswerSettings], connector_names: Sequence[str]) -> list[PaperQuery]:
    answer = plan.settings
    connectors = answer.connectors or connector_names
    return [
        PaperQuery(
            query=search.text or plan.goal,
            concepts=search.concepts or None,
            year_start=answer.year_start,
            year_end=answer.year_end,
            per_connector=answer.per_connector,
            max_results=answer.per_connector * max(1, len(connectors)),
            connectors=answer.connectors,
            team_id=answer.team_id,
        )
        for search in answer.searches
    ]


async def fused_search(
    search: SearchPort,
    plan: ResearchPlan[AnswerSettings],
    trace: TraceRecorder,
    on_results: Callable[[list[Paper]], None] | None = None,
) -> FusedResults:
    """Every planned search concurrently, each reported as it finishes (`on_results` gets its ranked
    papers then); papers fused by reciprocal rank across searches. Raises only when every search failed."""
    queries = search_queries(plan, search.connector_names)
    for query in queries:
        await trace.emit(
            RETRIEVER, "search", "search_started", query=query.query, connectors=query.connectors or "all"
        )

    async def one(query: PaperQuery) -> SearchOutcome | Exception:
        try:
            outcome = await search.search(query)
        except InvalidInput:
            raise
        except Exception as exc:  # one failed search leaves the others' results
            await trace.emit(RETRIEVER, "search", "search_completed", query=query.query, error=str(exc))
            return exc
        await trace.emit(
            RETRIEVER,
            "search",
            "search_completed",
            query=query.query,
            result_count=len(outcome.papers),
            connectors_used=outcome.connectors_used,
            failed_connectors=outcome.failed_connectors,
            elapsed_ms=round(outcome.query_time_ms, 1),
        )
        if on_results is not None:
            on_results(ranked_papers(outcome))
        return outcome

    outcomes = await asyncio.gather(*(one(query) for query in queries))
    return fuse(outcomes)


def fuse(outcomes: Sequence[SearchOutcome | Exception]) -> FusedResults:
    answered = [outcome for outcome in outcomes if not isinstance(outcome, Exception)]
    errors = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    fused = merge_fused(
        *(
            [(paper, 1 / (RRF_K + rank)) for rank, paper in enumerate(ranked_papers(outcome), start=1)]
            for outcome in answered
        )
    )
    used: list[str] = []
    failed: dict[str, str] = {}
    for outcome in answered:
        used += [name for name in outcome.connectors_used if name not in used]
        failed.update(outcome.failed_connectors)
    if not fused and errors and len(errors) == len(outcomes):
        first = errors[0]
        if isinstance(first, DomainError):
            raise first
        raise UpstreamError(f"search failed: {type(first).__name__}")
    return FusedResults(fused, used, {name: reason for name, reason in failed.items() if name not in used})


def ranked_papers(outcome: SearchOutcome) -> list[Paper]:
    return sorted(outcome.papers, key=lambda p: outcome.rrf_scores.get(p.canonical_id, 0.0), reverse=True)


def merge_fused(*rankings: Sequence[tuple[Paper, float]]) -> list[tuple[Paper, float]]:
    """Reciprocal-rank fusion: a paper's scores summed over the rankings (first record kept), best first."""
    merged: dict[str, tuple[Paper, float]] = {}
    for paper, score in (item for ranking in rankings for item in ranking):
        previous = merged.get(paper.canonical_id)
        merged[paper.canonical_id] = (
            previous[0] if previous else paper,
            (previous[1] if previous else 0.0) + score,
        )
    return sorted(merged.values(), key=lambda item: -item[1])
