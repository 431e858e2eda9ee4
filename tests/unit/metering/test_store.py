"""The usage store: atomic ADDs per team and month, job ledgers, budget reservations."""

from __future__ import annotations

import threading

import pytest

from functions.metering.store import (
    TOTALS,
    JobTerms,
    ReserveRequest,
    UsageKey,
    UsageStore,
    job_dimension,
    jobs_dimension,
    route_dimension,
)

TEAM, OTHER, MONTH = "team-alpha", "team-beta", "2026-05"


def test_add_accumulates_counters_and_labels(store: UsageStore) -> None:
    store.add(UsageKey(TEAM, MONTH, TOTALS), {"requests": 1, "cost_usd": 0.25})
    store.add(UsageKey(TEAM, MONTH, TOTALS), {"requests": 2, "cost_usd": 0.5, "committed_usd": -0.125})
    store.add(UsageKey(TEAM, MONTH, job_dimension("job-1")), {"cost_usd": 0.1}, {"depth": "rapid"})
    store.add(
        UsageKey(TEAM, MONTH, job_dimension("job-1")),
        {"cost_usd": 0.1},
        {"depth": "rapid", "outcome": "PARTIAL"},
    )
    totals = store.get(UsageKey(TEAM, MONTH, TOTALS))
    assert totals is not None
    assert totals.counters == {"requests": 3.0, "cost_usd": 0.75, "committed_usd": -0.125}
    job = store.get(UsageKey(TEAM, MONTH, job_dimension("job-1")))
    assert job is not None and job.count("cost_usd") == pytest.approx(0.2)
    assert job.labels == {"depth": ["rapid"], "outcome": ["PARTIAL"]}


def test_month_lists_one_team_and_month_only(store: UsageStore) -> None:
    store.add(UsageKey(TEAM, MONTH, route_dimension("get", "/api/usage")), {"requests": 1})
    store.add(UsageKey(TEAM, MONTH, jobs_dimension("rapid", "COMPLETED")), {"jobs": 1})
    store.add(UsageKey(TEAM, "2026-04", TOTALS), {"requests": 9})
    store.add(UsageKey(OTHER, MONTH, TOTALS), {"requests": 7})
    dimensions = [item.dimension for item in store.month(TEAM, MONTH)]
    assert dimensions == ["JOBS#rapid#COMPLETED", "ROUTE#GET /api/usage"]
    assert store.get(UsageKey(OTHER, MONTH, route_dimension("GET", "/api/usage"))) is None
    assert store.month(TEAM, "2026-06") == []


def test_a_job_ledger_is_opened_once_and_charged_by_adds(store: UsageStore) -> None:
    assert store.job(TEAM, "job-1") is None
    store.open_job(JobTerms(TEAM, "job-1", depth="comprehensive", max_cost_usd=0.5, monthly_budget_usd=None))
    store.open_job(
        JobTerms(TEAM, "job-1", depth="rapid", max_cost_usd=9.0, monthly_budget_usd=3.0)
    )  # no change...
    ledger = store.charge_job(TEAM, "job-1", {"cost_usd": 0.01, "steps_plan": 1, "committed_usd": 0.01})
    ledger = store.charge_job(TEAM, "job-1", {"cost_usd": 0.02, "steps_search": 1, "committed_usd": 0.02})
    assert ledger.depth == "comprehensive" and ledger.max_cost_usd == 0.5
    assert ledger.monthly_budget_usd == 3.0  # ...but what was unset is set
    assert ledger.cost_usd == pytest.approx(0.03) and ledger.committed_usd == pytest.approx(0.03)
    assert ledger.counters["steps_plan"] == 1 and ledger.counters["steps_search"] == 1
    assert store.job(OTHER, "job-1") is None  # another team's job has no ledger


def test_the_largest_step_cost_is_kept(store: UsageStore) -> None:
    store.open_job(JobTerms(TEAM, "job-1", depth="rapid", max_cost_usd=None, monthly_budget_usd=None))
    for usd in (0.002, 0.005, 0.001):
        store.raise_max_step(TEAM, "job-1", usd)
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.max_step_usd == pytest.approx(0.005)
    assert "max_step_usd" not in ledger.counters


def test_reserve_adds_to_both_or_refuses_naming_the_limit(store: UsageStore) -> None:
    store.open_job(JobTerms(TEAM, "job-1", depth="rapid", max_cost_usd=1.0, monthly_budget_usd=2.0))
    assert store.reserve(ReserveRequest(TEAM, "job-1", MONTH, 0.4, job_limit=0.5, month_limit=None)) is None
    assert store.reserve(ReserveRequest(TEAM, "job-1", MONTH, 0.4, job_limit=0.5, month_limit=1.0)) is None
    assert store.reserve(ReserveRequest(TEAM, "job-1", MONTH, 0.4, job_limit=0.5, month_limit=1.0)) == "job"
    store.add(UsageKey(TEAM, MONTH, TOTALS), {"committed_usd": 1.0})  # another job of the team spent
    assert store.reserve(ReserveRequest(TEAM, "job-1", MONTH, 0.1, job_limit=None, month_limit=1.5)) == "team"
    ledger, totals = store.job(TEAM, "job-1"), store.get(UsageKey(TEAM, MONTH, TOTALS))
    assert ledger is not None and ledger.committed_usd == pytest.approx(0.8)  # refusals changed nothing
    assert totals is not None and totals.count("committed_usd") == pytest.approx(1.8)


def test_concurrent_reservations_never_pass_the_limit(store: UsageStore) -> None:
    store.open_job(JobTerms(TEAM, "job-1", depth="rapid", max_cost_usd=1.0, monthly_budget_usd=None))
    store.charge_job(TEAM, "job-1", {"committed_usd": 0.0})
    results: list[str | None] = []
    lock = threading.Lock()

    def reserve() -> None:
        outcome = store.reserve(ReserveRequest(TEAM, "job-1", MONTH, 0.1, job_limit=0.95, month_limit=None))
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=reserve) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(None) == 10  # 0.0, 0.1, ..., 0.9 <= 0.95: ten reservations, then refused
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.committed_usd == pytest.approx(1.0)


def test_concurrent_adds_are_exact(store: UsageStore) -> None:
    def add() -> None:
        for _ in range(20):
            store.add(UsageKey(TEAM, MONTH, TOTALS), {"requests": 1, "cost_usd": 0.001})

    threads = [threading.Thread(target=add) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    totals = store.get(UsageKey(TEAM, MONTH, TOTALS))
    assert totals is not None
    assert totals.count("requests") == 160 and totals.count("cost_usd") == pytest.approx(0.16)
