"""Search: one iteration of the job's queries (functions/orchestrate/search_round.py), with one budget
check per iteration; the state machine loops while queries wait for their turn and search time is left."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from functions.orchestrate.contracts import SearchInput, SearchState
from functions.orchestrate.search_round import SearchRound
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import BudgetedStep
from functions.orchestrate.steps.deployed import deployed_adapters
from functions.orchestrate.wiring import shared_search_service
from functions.research.retrieval.fusion import Searcher


@dataclass(kw_only=True)
class Search(BudgetedStep):
    search_service: Callable[[], Searcher]

    def __call__(self, request: SearchInput) -> SearchState:
        progress = self.progress(request.team, request.job_id)
        state = request.search
        job = progress.job()
        seconds = self.settings.search_seconds(job.depth, refinement=state.phase == "refine")

        def over_budget(what: str) -> str | None:
            reason = self.budget.refusal(progress.team_id, progress.job_id, "search")
            if reason is not None:
                progress.budget_skipped("search", what, reason)
            return reason

        search_round = SearchRound(
            progress=progress,
            data=self.data,
            search_service=self.search_service,
            over_budget=over_budget,
            iteration_seconds=self.settings.search_iteration_seconds,
        )
        return asyncio.run(search_round.run(state, seconds))


def build() -> Search:
    return Search(search_service=shared_search_service, **deployed_adapters())


handler = step_handler("search", SearchInput, build)
