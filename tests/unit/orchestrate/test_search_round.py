"""The Search loop over in-memory adapters: queries that wait past their deadline stay pending, then are
reported as not run; only coverage lost or an upstream's errors make a job PARTIAL."""

from __future__ import annotations

import asyncio
from typing import Any

from functions.common.errors import UpstreamError
from functions.common.storage import InMemoryBlobStore
from functions.metering.job_budget import JobBudget
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.contracts import PlanInput, SearchInput, SearchState
from functions.orchestrate.jobs import JobService
from functions.orchestrate.search_round import uncovered_concepts, upstream_failures
from functions.orchestrate.steps.plan import Plan
from functions.orchestrate.steps.search import Search
from functions.research.planning.request import ExecuteRequest
from functions.search.models import SearchOutcome
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter
from tests.unit.orchestrate.fixtures import paper

TEAM = "team-default"
GOAL = "How do graph neural networks with attention mechanisms help drug discovery?"


class ScriptedSearch:
    """Answers each connector as scripted: papers, an upstream error, or "not run" (no turn in time)."""

    def __init__(self, script: dict[str, str]) -> None:
        self.script = script
        self.asked: list[tuple[str, int, float | None]] = []

    async def search(self, query: Any) -> SearchOutcome:
        connector = query.connectors[0]
        self.asked.append((connector, query.priority, query.deadline))
        kind = self.script.get(connector, "papers")
        if kind == "error":
            raise UpstreamError(f"{connector}: HTTP 500 from {connector}: down")
        if kind == "not_run":
            raise UpstreamError(f"{connector}: not run: rate budget", not_run=True)
        return SearchOutcome(
            papers=[paper(1)],
            total_found=1,
            connectors_used=[connector],
            failed_connectors={},
            query_time_ms=1,
        )


def _search_step(search: ScriptedSearch, **settings: Any) -> tuple[Search, str, dict[str, Any]]:
    jobs, artifacts = InMemoryJobStore(), InMemoryBlobStore()
    workflow_settings = WorkflowSettings(**settings)
    service = JobService(
        jobs=jobs, starter=RecordingStarter(), artifacts=artifacts, settings=workflow_settings
    )
    job_id = service.submit(TEAM, ExecuteRequest(research_goal=GOAL))[0]["job_id"]
    plan = Plan(
        jobs=jobs, new_record=service.records.new_record, settings=workflow_settings, budget=JobBudget()
    )
    planned = plan(PlanInput.model_validate({"input": {"job_id": job_id, "team_id": TEAM}}))
    step = Search(
        jobs=jobs,
        data=InMemoryBlobStore(),
        search_service=lambda: search,
        settings=workflow_settings,
        budget=JobBudget(),
    )
    return step, job_id, planned.search.model_dump(mode="json")


def _search(step: Search, event: dict[str, Any]) -> dict[str, Any]:
    return step(SearchInput.model_validate(event)).model_dump(mode="json")


def test_queries_run_in_order_of_value_with_the_iterations_deadline() -> None:
    search = ScriptedSearch({})
    step, job_id, state = _search_step(search)
    after = _search(step, {"job_id": job_id, "team_id": TEAM, "search": state})
    assert after["done"] and not after["pending"] and after["round"] == 1
    assert len(after["results"]) == len(state["pending"])
    arxiv = [(priority, deadline) for connector, priority, deadline in search.asked if connector == "arxiv"]
    assert [priority for priority, _ in arxiv] == sorted(priority for priority, _ in arxiv)
    assert all(deadline is not None for _, deadline in arxiv)


def test_a_query_without_a_turn_stays_pending_and_is_reported_not_run_when_time_is_spent() -> None:
    search = ScriptedSearch({"arxiv": "not_run"})
    step, job_id, state = _search_step(search, search_seconds_by_depth={"rapid": 60.0})
    first = _search(step, {"job_id": job_id, "team_id": TEAM, "search": state})
    assert not first["done"] and {q["connector"] for q in first["pending"]} == {"arxiv"}
    assert first["wait_seconds"] >= 1
    # the job's search time is spent: what still waits is not run, and that is no failure
    spent = {**first, "started_at": first["started_at"] - 120}
    last = _search(step, {"job_id": job_id, "team_id": TEAM, "search": spent})
    assert last["done"] and not last["pending"]
    not_run = [r for r in last["results"] if r.get("not_run")]
    assert not_run and all(r["connector"] == "arxiv" for r in not_run)
    assert upstream_failures(SearchState.model_validate(last).results) == {}
    job = step.jobs.get(TEAM, job_id)
    assert job is not None and any(a["event"] == "QUERIES_NOT_RUN" for a in job["audit"])


def test_only_an_upstreams_errors_or_a_concept_found_nowhere_count_as_coverage_lost() -> None:
    search = ScriptedSearch({"semantic_scholar": "error"})
    step, job_id, state = _search_step(search)
    after = _search(step, {"job_id": job_id, "team_id": TEAM, "search": state})
    results = SearchState.model_validate(after).results
    failed = upstream_failures(results)
    assert set(failed) == {"semantic_scholar"} and "HTTP 500" in failed["semantic_scholar"]
    concepts = ["graph neural networks", "attention mechanisms", "drug discovery"]
    assert uncovered_concepts(concepts, results) == []
    only_first = [r for r in results if r.terms == ["graph neural networks"]]
    assert uncovered_concepts(concepts, only_first) == ["attention mechanisms", "drug discovery"]


class CountingSearch(ScriptedSearch):
    """Holds each query until the next loop turn and counts how many of one connector wait at once."""

    def __init__(self) -> None:
        super().__init__({})
        self.waiting: dict[str, int] = {}
        self.most_waiting: dict[str, int] = {}

    async def search(self, query: Any) -> SearchOutcome:
        connector = query.connectors[0]
        self.waiting[connector] = self.waiting.get(connector, 0) + 1
        self.most_waiting[connector] = max(self.most_waiting.get(connector, 0), self.waiting[connector])
        await asyncio.sleep(0.01)  # waiting for its turn at the provider
        self.waiting[connector] -= 1
        return await super().search(query)


def test_a_connectors_queries_all_wait_for_their_turns_at_once() -> None:
    """Not one after the other: a query that waits only once the one before it was answered misses its
    team's turns at a provider other teams share."""
    search = CountingSearch()
    step, job_id, state = _search_step(search)
    per_connector: dict[str, int] = {}
    for item in state["pending"]:
        per_connector[item["connector"]] = per_connector.get(item["connector"], 0) + 1
    after = _search(step, {"job_id": job_id, "team_id": TEAM, "search": state})
    assert after["done"] and len(after["results"]) == len(state["pending"])
    several = {name: count for name, count in per_connector.items() if count > 1}
    assert several  # the plan sends some connector several queries
    assert all(search.most_waiting[name] == count for name, count in several.items())
