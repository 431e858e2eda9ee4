"""One iteration of the Search state: a job's pending queries, scheduled against a deadline.

A job's queries wait for turns at each provider (functions/common/outbound/upstream_turns.py), which the service
shares fairly between teams and jobs. Each connector's queries run in the plan's order of value; the
connectors run side by side. An iteration stops well inside the 45 s task limit: what has not had its
turn by then stays pending, and the state machine runs another iteration after a short Wait, until the
job's search time (by depth) is spent. What is still pending then was *not run*, for the provider's rate
budget: reported with its count, never as a failed connector.

The state machine carries this iteration's state (`SearchState`) from one iteration to the next: the
queries still pending, the results so far (small: the hits themselves are in the data bucket).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.common.errors import InvalidInput, UpstreamError
from functions.common.observability import get_logger
from functions.common.storage import BlobStore, put_json
from functions.orchestrate.contracts import ITERATION_WAIT_SECONDS, SearchState
from functions.orchestrate.payloads import search_key
from functions.orchestrate.progress import JobProgress
from functions.research.job.inputs import QueryResult
from functions.research.planning.plan import PlannedQuery
from functions.research.retrieval.fusion import Searcher

logger = get_logger("orchestrate")
BUDGET_REACHED = "BUDGET_REACHED"
# An iteration's share of the 45 s task: the rest is for recording and a slow last exchange.
DEFAULT_ITERATION_SECONDS = 26.0


def not_run_counts(results: list[QueryResult]) -> dict[str, int]:
    return dict(Counter(result.connector for result in results if result.not_run))


def upstream_failures(results: list[QueryResult]) -> dict[str, str]:
    """Connectors whose upstream answered errors (not our own scheduling, not the budget)."""
    failed: dict[str, str] = {}
    for result in results:
        if result.not_run or result.budget_skipped:
            continue
        for name, reason in result.failed_connectors.items():
            failed.setdefault(name, reason)
    return failed


def uncovered_concepts(concepts: list[str], queries: list[QueryResult]) -> list[str]:
    """The goal's concepts that no query with results was about (coverage lost)."""
    covered = {term for query in queries if query.count > 0 for term in query.terms}
    return [concept for concept in concepts if concept not in covered]


@dataclass
class SearchRound:
    progress: JobProgress
    data: BlobStore
    search_service: Callable[[], Searcher]
    # what -> None when the budget allows the iteration's searches, else why not
    over_budget: Callable[[str], str | None]
    iteration_seconds: float = DEFAULT_ITERATION_SECONDS
    clock: Callable[[], float] = time.time

    async def run(self, state: SearchState, search_seconds: float) -> SearchState:
        """Run what fits of `state.pending` in this iteration; `search_seconds` is the job's search time
        for this phase, counted from its first iteration."""
        team_id, job_id = self.progress.team_id, self.progress.job_id
        now = self.clock()
        started = state.started_at if state.started_at is not None else now
        phase_end = started + search_seconds
        deadline = min(now + self.iteration_seconds, phase_end)
        if state.pending:
            # one budget check per iteration: its queries run together in this one step
            reason = await asyncio.to_thread(
                self.over_budget, f"{len(state.pending)} queries of search round {state.round + 1}"
            )
            if reason is not None:
                skipped = await asyncio.to_thread(self._budget_skipped, state.pending)
                return SearchState(
                    pending=[],
                    results=[*state.results, *skipped],
                    round=state.round + 1,
                    started_at=started,
                    phase=state.phase,
                    done=True,
                )
        by_connector: dict[str, list[PlannedQuery]] = {}
        for query in state.pending:
            by_connector.setdefault(query.connector, []).append(query)
        outcomes = await asyncio.gather(
            *(
                self._connector_queries(team_id, job_id, sorted(queries, key=lambda q: q.priority), deadline)
                for queries in by_connector.values()
            )
        )
        results = list(state.results)
        pending: list[PlannedQuery] = []
        for done, waiting in outcomes:
            results.extend(done)
            pending.extend(waiting)
        finished = not pending or self.clock() >= phase_end - ITERATION_WAIT_SECONDS
        if finished and pending:
            results.extend(await asyncio.to_thread(self._not_run, pending))
            pending = []
        return SearchState(
            pending=pending,
            results=results,
            round=state.round + 1,
            started_at=started,
            phase=state.phase,
            done=finished,
        )

    async def _connector_queries(
        self, team_id: str, job_id: str, queries: list[PlannedQuery], deadline: float
    ) -> tuple[list[QueryResult], list[PlannedQuery]]:
        """One connector's queries, all waiting for their turns at once: the provider's turns go to the
        job's most valuable query first (`priority`), and a query never misses its team's turn because
        the one before it was still being answered. Those whose turn did not come stay pending."""
        if self.clock() >= deadline:
            return [], queries
        results = await asyncio.gather(*(self._one(team_id, job_id, query, deadline) for query in queries))
        done = [result for result in results if result is not None]
        return done, [query for query, result in zip(queries, results, strict=True) if result is None]

    async def _one(
        self, team_id: str, job_id: str, query: PlannedQuery, deadline: float
    ) -> QueryResult | None:
        """One query's result, or None when its turn did not come before `deadline`."""
        from functions.search.models import PaperQuery

        base = _result_base(query)
        request = PaperQuery(
            query=query.query,
            concepts=query.concepts or None,
            year_start=query.year_start,
            year_end=query.year_end,
            max_results=query.max_results,
            per_connector=min(100, query.max_results),
            connectors=[query.connector],
            team_id=team_id,  # the library connector answers from this team's documents only
            job_id=job_id,
            priority=query.priority,
            deadline=deadline,
        )
        try:
            outcome = await self.search_service().search(request)
        except UpstreamError as exc:
            if exc.not_run:
                return None
            return await asyncio.to_thread(self._failed, query, base, exc.message)
        except InvalidInput as exc:
            return await asyncio.to_thread(self._failed, query, base, exc.message)
        if outcome.not_run:
            return None
        try:
            return await asyncio.to_thread(self._found, team_id, job_id, query, base, outcome)
        except Exception:
            # storing one query's hits failed (a bucket or table hiccup): that query is lost, not the job
            logger.exception("search results not stored", job_id=job_id, query_id=query.query_id)
            message = f"{query.connector}: the results could not be stored"
            return await asyncio.to_thread(self._failed, query, base, message)

    def _failed(self, query: PlannedQuery, base: QueryResult, message: str) -> QueryResult:
        self.progress.query_failed(query, message)
        return base.model_copy(update={"failed_connectors": {query.connector: message}, "error": message})

    def _found(
        self, team_id: str, job_id: str, query: PlannedQuery, base: QueryResult, outcome: Any
    ) -> QueryResult:
        key = search_key(team_id, job_id, query.query_id)
        put_json(self.data, key, [paper.model_dump(mode="json") for paper in outcome.papers])
        failed = dict(outcome.failed_connectors)
        self.progress.query_done(query, outcome, failed)
        return base.model_copy(update={"key": key, "count": len(outcome.papers), "failed_connectors": failed})

    def _budget_skipped(self, pending: list[PlannedQuery]) -> list[QueryResult]:
        """The iteration's queries, skipped for the budget (the refusal counted the first of them)."""
        if len(pending) > 1:
            self.progress.queries_skipped_for_budget(len(pending) - 1)
        return [
            _result_base(query).model_copy(update={"error": BUDGET_REACHED, "budget_skipped": True})
            for query in pending
        ]

    def _not_run(self, pending: list[PlannedQuery]) -> list[QueryResult]:
        self.progress.queries_not_run(Counter(query.connector for query in pending))
        return [
            _result_base(query).model_copy(
                update={"not_run": True, "error": f"not run: {query.connector}'s rate budget"}
            )
            for query in pending
        ]


def _result_base(query: PlannedQuery) -> QueryResult:
    return QueryResult(
        query_id=query.query_id,
        connector=query.connector,
        query=query.query,
        upstream_query=query.upstream_query,
        terms=list(query.terms),
        key=None,
        count=0,
        failed_connectors={},
        error=None,
    )
