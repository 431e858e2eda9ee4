"""The steps' budget hooks over in-memory adapters: skipped searches, extractions and synthesis,
and the BUDGET_REACHED decision; the job service's cost quote and monthly-budget refusal."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from functions.common.models import ExtractedPaper
from functions.common.storage import InMemoryBlobStore, get_json
from functions.metering.budget import BudgetExceeded, Budgets, Refusal
from functions.metering.estimate import CostModel, Unit
from functions.metering.job_budget import JobBudget
from functions.metering.meter import Meter, metering
from functions.metering.prices import DEFAULT_PRICES
from functions.metering.store import TOTALS, UsageKey
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.contracts import ExtractInput, SearchInput, SynthesizeInput
from functions.orchestrate.jobs import JobService
from functions.orchestrate.models import JobRecord
from functions.orchestrate.steps.extract import Extract
from functions.orchestrate.steps.finalize import budget_reached
from functions.orchestrate.steps.search import Search
from functions.orchestrate.steps.synthesize import Synthesize
from functions.research.planning.request import ExecuteRequest
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter
from tests.support.fakes.usage_store import InMemoryUsageStore

TEAM = "team-alpha"
GOAL = "What are recent advances in transformer architectures?"
MODEL = CostModel(DEFAULT_PRICES, llm_configured=False)


class Gate:
    """Refuses the units it is told to."""

    def __init__(self, refuse: set[str]) -> None:
        self.refuse = refuse
        self.asked: list[tuple[str, int]] = []

    def admit(
        self,
        team_id: str,
        job_id: str,
        unit: Unit,
        *,
        sources: int = 0,
        pending: int = 0,
    ) -> Refusal | None:
        self.asked.append((unit, sources))
        return (
            Refusal("job", "the job's budget of $0.001000 (max_cost_usd) would be exceeded")
            if unit in self.refuse
            else None
        )


class NeverCalled:
    async def search(self, query: Any) -> Any:
        raise AssertionError("a skipped search must not run")

    async def extract(self, source_url: str, **options: Any) -> ExtractedPaper:
        raise AssertionError("a skipped extraction must not run")


@dataclass
class Steps:
    """The steps that ask the budget, over one job's in-memory adapters."""

    jobs: InMemoryJobStore
    data: InMemoryBlobStore
    gate: Any
    extraction_service: Any = NeverCalled

    def search(self, event: dict[str, Any]) -> dict[str, Any]:
        step = Search(
            jobs=self.jobs,
            data=self.data,
            search_service=NeverCalled,
            settings=WorkflowSettings(),
            budget=JobBudget(self.gate),
        )
        return step(SearchInput.model_validate(event)).model_dump(mode="json")

    def extract(self, event: dict[str, Any]) -> dict[str, Any]:
        step = Extract(
            jobs=self.jobs,
            data=self.data,
            extraction_service=self.extraction_service,
            settings=WorkflowSettings(),
            budget=JobBudget(self.gate),
        )
        return step(ExtractInput.model_validate(event)).model_dump(mode="json")

    def synthesize(self, event: dict[str, Any]) -> dict[str, Any]:
        step = Synthesize(
            jobs=self.jobs, data=self.data, settings=WorkflowSettings(), budget=JobBudget(self.gate)
        )
        return step(SynthesizeInput.model_validate(event)).model_dump(mode="json")


def _flow(gate: Any, costs: Any = None) -> tuple[Steps, JobService, str]:
    jobs, artifacts = InMemoryJobStore(), InMemoryBlobStore()
    service = JobService(
        jobs=jobs, starter=RecordingStarter(), artifacts=artifacts, settings=WorkflowSettings(), costs=costs
    )
    job_id = service.submit(TEAM, ExecuteRequest(research_goal=GOAL))[0]["job_id"]
    return Steps(jobs, InMemoryBlobStore(), gate), service, job_id


def _job(flow: Steps, job_id: str) -> dict[str, Any]:
    job = flow.jobs.get(TEAM, job_id)
    assert job is not None
    return job


def test_a_refused_search_is_skipped_and_counted() -> None:
    flow, _, job_id = _flow(Gate({"search"}))
    query = _job(flow, job_id)["plan"]["queries"][0]
    state = flow.search({"job_id": job_id, "team_id": TEAM, "search": {"pending": [query]}})
    assert state["done"] and not state["pending"]
    outcome = state["results"][0]
    assert outcome["error"] == "BUDGET_REACHED" and outcome["budget_skipped"] and outcome["key"] is None
    job = _job(flow, job_id)
    assert job["budget_skipped_queries"] == 1 and job["queries_done"] == 1
    assert job["audit"][-1]["event"] == "BUDGET_SKIPPED" and "max_cost_usd" in job["audit"][-1]["detail"]


def test_a_refused_extraction_is_skipped_as_unavailable() -> None:
    flow, _, job_id = _flow(Gate({"extract"}))
    source = {"source_id": "src-1", "url": "https://arxiv.org/abs/2501.00001"}
    outcome = flow.extract({"job_id": job_id, "team_id": TEAM, "source": source})
    assert outcome["success"] is False and outcome["unavailable"] and outcome["budget_skipped"]
    assert outcome["failure_reason"] == "not extracted: the budget was reached"
    job = _job(flow, job_id)
    assert job["budget_skipped_sources"] == 1 and job["extract_done"] == 1


def test_a_refused_synthesis_writes_an_empty_one_that_says_why() -> None:
    gate = Gate({"synthesize"})
    flow, _, job_id = _flow(gate)
    result = flow.synthesize({"job_id": job_id, "team_id": TEAM, "extractions": []})
    synthesis = get_json(flow.data, result["synthesis_key"])
    assert synthesis is not None and synthesis["refusal_reason"].startswith("Synthesis skipped: ")
    assert gate.asked == [("synthesize", 0)]
    assert _job(flow, job_id)["budget_skipped_synthesis"] == 1


def test_the_decision_names_what_was_skipped() -> None:
    job = {"job_id": "job-1", "team_id": TEAM, "status": "SYNTHESIZING"}
    assert budget_reached(JobRecord.model_validate(job)) == []
    (decision,) = budget_reached(
        JobRecord.model_validate(
            {
                **job,
                "budget_skipped_queries": 1,
                "budget_skipped_sources": 8,
                "budget_skipped_synthesis": 1,
                "budget_reason": "the team's monthly budget ... would be exceeded",
            }
        )
    )
    assert decision["decision_type"] == "BUDGET_REACHED"
    assert decision["reasoning"] == "the team's monthly budget ... would be exceeded"
    assert decision["action_taken"].startswith(
        "Skipped: 1 search query not run, 8 sources not extracted, synthesis skipped;"
    )


def test_with_real_budgets_extractions_stop_at_the_job_budget() -> None:
    store = InMemoryUsageStore()
    budgets = Budgets(store, MODEL, team_budget=lambda team: None)
    flow, _, job_id = _flow(budgets)
    unit, closing = MODEL.unit_cost("extract"), MODEL.closing_cost("extract")
    budgets.open_job(TEAM, job_id, {"max_cost_usd": closing + 2.5 * unit})
    flow.extraction_service = Quick
    outcomes = []
    for index in range(4):
        with metering(Meter()):  # one step invocation each (its reservation is left unsettled here)
            source = {"source_id": f"src-{index}", "url": f"https://arxiv.org/abs/2501.0000{index}"}
            outcomes.append(flow.extract({"job_id": job_id, "team_id": TEAM, "source": source}))
    # committed before each: 0 and 1 unit pass (<= 1.5 units), 2 units do not
    assert [bool(o.get("budget_skipped")) for o in outcomes] == [False, False, True, True]


class Quick:
    async def extract(self, source_url: str, **options: Any) -> ExtractedPaper:
        await asyncio.sleep(0)
        return ExtractedPaper(
            source_url=source_url, canonical_id=source_url, success=False, failure_reason="empty"
        )


def test_execute_quotes_the_plan() -> None:
    budgets = Budgets(InMemoryUsageStore(), MODEL, team_budget=lambda team: None)
    _, service, _ = _flow(None, costs=budgets)
    response, _ = service.submit(TEAM, ExecuteRequest(research_goal=GOAL))
    estimate = response["cost_estimate"]
    assert estimate["currency"] == "USD" and 0 < estimate["low_usd"] < estimate["high_usd"]
    assert estimate["basis"]["target_sources"] == 15  # focused


def test_a_job_that_cannot_fit_the_month_is_refused_and_its_key_released() -> None:
    store = InMemoryUsageStore()
    budget = {"usd": 10.0}
    budgets = Budgets(store, MODEL, team_budget=lambda team: budget["usd"])
    _, service, first = _flow(None, costs=budgets)
    assert budgets.release(TEAM, first) > 0  # it ended without spending: its hold is given back
    budget["usd"] = 0.0001
    jobs = service.jobs
    assert isinstance(jobs, InMemoryJobStore)
    before = len(jobs.items)
    with pytest.raises(BudgetExceeded) as refused:
        service.submit(TEAM, ExecuteRequest(research_goal=GOAL), idempotency_key="k-1", client_id="c")
    assert refused.value.remaining_budget_usd == pytest.approx(0.0001)
    assert len(jobs.items) == before and (TEAM, "c:k-1") not in jobs.keys  # nothing recorded, key free
    budget["usd"] = 20.0  # the platform raises the budget: the same request now goes through
    response, created = service.submit(
        TEAM, ExecuteRequest(research_goal=GOAL), idempotency_key="k-1", client_id="c"
    )
    assert created and response["status"] == "INITIALIZED"
    store.add(UsageKey(TEAM, _month(), TOTALS), {"committed_usd": 20.0})  # the month is now spent
    replay, created = service.submit(
        TEAM, ExecuteRequest(research_goal=GOAL), idempotency_key="k-1", client_id="c"
    )
    assert not created and replay["job_id"] == response["job_id"]  # a replay is never refused


def _month() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m")
