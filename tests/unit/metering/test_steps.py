"""The step Lambdas' metering hook: every invocation measured and recorded, never failing the step."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from functions.common.errors import StepDeferred
from functions.common.outbound.invocation_time import waiting
from functions.metering import wiring
from functions.metering.meter import current_meter
from functions.metering.steps import metered_step, step_ids
from functions.metering.store import TOTALS, JobTerms, UsageKey, jobs_dimension
from tests.support.fakes.usage_store import InMemoryUsageStore

TEAM = "team-alpha"
CONTEXT = SimpleNamespace(memory_limit_in_mb=128, aws_request_id="req-1")


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryUsageStore]:
    memory = InMemoryUsageStore()
    monkeypatch.setattr(wiring, "usage_store", lambda: memory)
    monkeypatch.setattr(wiring, "team_monthly_budget", lambda team: 25.0)
    yield memory


def _month() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


def test_step_ids_are_read_wherever_the_state_machine_put_them() -> None:
    assert step_ids({"job_id": "j", "team_id": "team-a"}) == ("team-a", "j")
    assert step_ids({"input": {"job_id": "j", "team_id": "team-a"}, "execution_name": "x"}) == ("team-a", "j")
    assert step_ids({"state": {"input": {"job_id": "j", "team_id": "team-a"}}}) == ("team-a", "j")
    assert step_ids({"execution_name": "scheduled-1"}) == ("team-default", "scheduled-1")


def test_the_plan_opens_the_ledger_and_every_step_is_charged(store: InMemoryUsageStore) -> None:
    seen: list[Any] = []

    def run(step: str, event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(current_meter())
        with waiting():  # an upstream's answer: billed
            time.sleep(0.02)
        return {"job_id": "job-1"}

    plan_event = {
        "input": {
            "job_id": "job-1",
            "team_id": TEAM,
            "scope_parameters": {"discovery_depth": "focused", "max_cost_usd": 0.5},
        },
        "execution_name": "job-1",
    }
    metered_step("plan", plan_event, CONTEXT, run)
    metered_step("search", {"job_id": "job-1", "team_id": TEAM, "query": {}}, CONTEXT, run)
    assert all(meter is not None for meter in seen) and seen[0] is not seen[1]
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None
    assert (ledger.depth, ledger.max_cost_usd, ledger.monthly_budget_usd) == ("focused", 0.5, 25.0)
    assert ledger.counters["steps_plan"] == 1 and ledger.counters["steps_search"] == 1
    # memory from the registry (plan and search: 512 MB), not the context's 128 MB; at least 20 ms each
    assert ledger.counters["lambda_gb_seconds"] >= 2 * 0.02 * 0.5
    assert ledger.counters["sfn_transitions"] == 3 and ledger.cost_usd > 0


def test_a_failing_step_is_charged_and_still_fails(store: InMemoryUsageStore) -> None:
    def run(step: str, event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("upstream broke")

    with pytest.raises(RuntimeError, match="upstream broke"):
        metered_step("extract", {"job_id": "job-1", "team_id": TEAM}, CONTEXT, run)
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.counters["steps_extract"] == 1


def test_a_deferred_step_is_charged_as_a_deferral_and_still_raises(store: InMemoryUsageStore) -> None:
    def run(step: str, event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise StepDeferred("arxiv_pdf: no turn within 2.0 s, deferred")

    with pytest.raises(StepDeferred):
        metered_step("extract", {"job_id": "job-1", "team_id": TEAM}, CONTEXT, run)
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.cost_usd > 0
    assert ledger.counters["deferred_extract"] == 1 and "steps_extract" not in ledger.counters


def test_a_job_is_counted_once_when_its_final_step_moved_it(store: InMemoryUsageStore) -> None:
    def finished(moved: bool) -> Any:
        return lambda step, event, context: {"job_id": "job-1", "status": "COMPLETED", "moved": moved}

    store.open_job(JobTerms(TEAM, "job-1", depth="rapid", max_cost_usd=None, monthly_budget_usd=None))
    metered_step("finalize", {"job_id": "job-1", "team_id": TEAM}, CONTEXT, finished(True))
    metered_step("finalize", {"job_id": "job-1", "team_id": TEAM}, CONTEXT, finished(False))  # a retry
    counted = store.get(UsageKey(TEAM, _month(), jobs_dimension("rapid", "COMPLETED")))
    assert counted is not None and counted.count("jobs") == 1
    totals = store.get(UsageKey(TEAM, _month(), TOTALS))
    assert totals is not None and totals.count("steps_finalize") == 2


def test_metering_that_fails_never_fails_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Any:
        raise RuntimeError("usage table unreachable")

    monkeypatch.setattr(wiring, "usage_store", broken)
    result = metered_step(
        "plan", {"input": {"job_id": "j", "team_id": TEAM}}, CONTEXT, lambda s, e, c: {"ok": True}
    )
    assert result == {"ok": True}


def test_metering_can_be_switched_off(monkeypatch: pytest.MonkeyPatch, store: InMemoryUsageStore) -> None:
    monkeypatch.setenv("USAGE_METERING", "false")
    from functions.common.settings import reset_settings_cache

    reset_settings_cache()
    metered_step("search", {"job_id": "job-1", "team_id": TEAM}, CONTEXT, lambda s, e, c: {})
    assert store.job(TEAM, "job-1") is None
