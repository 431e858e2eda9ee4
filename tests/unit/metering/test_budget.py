"""Budgets: the monthly check before a job, reservations before each unit of a running job."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.metering.budget import BudgetExceeded, Budgets
from functions.metering.estimate import CostModel
from functions.metering.meter import Meter, metering
from functions.metering.prices import DEFAULT_PRICES
from functions.metering.store import TOTALS, UsageKey, UsageStore

TEAM, MONTH = "team-alpha", "2026-05"
NOW = datetime(2026, 5, 14, 12, tzinfo=UTC)
MODEL = CostModel(DEFAULT_PRICES, llm_configured=False)


def _budgets(store: UsageStore, monthly: float | None = None) -> Budgets:
    return Budgets(store=store, costs=MODEL, team_budget=lambda team: monthly, clock=lambda: NOW)


def test_a_job_that_cannot_fit_the_month_is_refused_with_what_remains(store: UsageStore) -> None:
    budgets = _budgets(store, monthly=0.01)
    quote = {"low_usd": 0.004, "high_usd": 0.006, "currency": "USD", "basis": {}}
    assert budgets.hold(TEAM, "job-0", quote) == pytest.approx(0.006)  # 0.01 left: the high figure
    store.add(
        UsageKey(TEAM, MONTH, TOTALS), {"cost_usd": 0.0035, "committed_usd": 0.0035}
    )  # e.g. LLM answers
    assert 0.0005 < MODEL.least_job_cost() < 0.004  # 0.0005 left: not even the job's floor fits
    with pytest.raises(BudgetExceeded) as refused:
        budgets.hold(TEAM, "job-1", quote)
    details = refused.value.details()
    assert details["remaining_budget_usd"] == pytest.approx(0.0005)
    assert details["monthly_budget_usd"] == 0.01 and details["month"] == MONTH
    assert details["cost_estimate"] == quote
    assert "$0.000500 left" in refused.value.message
    assert budgets.monthly_status(TEAM) == {
        "month": MONTH,
        "monthly_budget_usd": 0.01,
        "committed_usd": 0.0095,
        "remaining_usd": 0.0005,
    }
    assert _budgets(store, monthly=None).hold(TEAM, "job-2", {"low_usd": 100.0}) is None  # no budget


def test_a_job_without_budgets_is_admitted_without_reserving(store: UsageStore) -> None:
    budgets = _budgets(store)
    budgets.open_job(TEAM, "job-1", {"discovery_depth": "rapid", "max_cost_usd": None})
    meter = Meter()
    with metering(meter):
        assert budgets.admit(TEAM, "job-1", "extract") is None
        assert budgets.admit(TEAM, "unknown-job", "extract") is None
    assert meter.reservations == []


def test_units_are_reserved_until_the_job_budget_would_be_passed(store: UsageStore) -> None:
    budgets = _budgets(store)
    unit, closing = MODEL.unit_cost("extract"), MODEL.closing_cost("extract")
    max_cost = closing + 3.5 * unit
    budgets.open_job(TEAM, "job-1", {"discovery_depth": "rapid", "max_cost_usd": max_cost})
    meter = Meter()
    with metering(meter):
        admitted = [budgets.admit(TEAM, "job-1", "extract") is None for _ in range(5)]
        refusal = budgets.admit(TEAM, "job-1", "extract")
    # committed before each: 0, 1u, 2u, 3u pass (<= 2.5u); 4u does not
    assert admitted == [True, True, True, False, False]
    assert refusal is not None and refusal.scope == "job"
    assert "max_cost_usd" in refusal.reason and "next extract" in refusal.reason
    assert [r.month for r in meter.reservations] == [MONTH] * 3
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.committed_usd == pytest.approx(3 * unit)


def test_the_team_month_caps_a_running_job(store: UsageStore) -> None:
    budgets = _budgets(store, monthly=0.05)
    budgets.open_job(TEAM, "job-1", {"discovery_depth": "rapid"})
    unit, closing = MODEL.unit_cost("search"), MODEL.closing_cost("search")
    store.add(UsageKey(TEAM, MONTH, TOTALS), {"committed_usd": 0.05 - closing - 1.5 * unit})
    with metering(Meter()):
        assert budgets.admit(TEAM, "job-1", "search") is None
        refusal = budgets.admit(TEAM, "job-1", "search")
    assert refusal is not None and refusal.scope == "team" and "monthly budget" in refusal.reason


def test_a_budget_below_one_unit_refuses_at_once(store: UsageStore) -> None:
    budgets = _budgets(store)
    budgets.open_job(TEAM, "job-1", {"max_cost_usd": 1e-6})
    with metering(Meter()):
        refusal = budgets.admit(TEAM, "job-1", "search")
    assert refusal is not None and refusal.scope == "job"


def test_without_a_meter_the_budget_is_checked_but_nothing_reserved(store: UsageStore) -> None:
    budgets = _budgets(store)
    unit, closing = MODEL.unit_cost("extract"), MODEL.closing_cost("extract")
    budgets.open_job(TEAM, "job-1", {"max_cost_usd": closing + 1.5 * unit})
    assert budgets.admit(TEAM, "job-1", "extract") is None
    assert budgets.admit(TEAM, "job-1", "extract") is None  # nothing was reserved
    store.charge_job(TEAM, "job-1", {"committed_usd": unit})
    assert budgets.admit(TEAM, "job-1", "extract") is not None
