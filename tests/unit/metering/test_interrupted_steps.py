"""What steps that died unrecorded had reserved is given back (`Budgets.release_unrecorded`): the local
runtime, restarting, calls it before a job goes on, so that the steps run again reserve anew without the
dead reservations counting against the job's cap or the month."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.metering.budget import Budgets
from functions.metering.estimate import CostModel
from functions.metering.meter import Meter, metering
from functions.metering.prices import DEFAULT_PRICES
from functions.metering.store import TOTALS, UsageKey, UsageStore

TEAM, MONTH = "team-alpha", "2026-05"
NOW = datetime(2026, 5, 14, 12, tzinfo=UTC)
MODEL = CostModel(DEFAULT_PRICES, llm_configured=False)


def _budgets(store: UsageStore, monthly: float | None) -> Budgets:
    return Budgets(store=store, costs=MODEL, team_budget=lambda team: monthly, clock=lambda: NOW)


def _month_committed(store: UsageStore) -> float:
    totals = store.get(UsageKey(TEAM, MONTH, TOTALS))
    return totals.count("committed_usd") if totals is not None else 0.0


def test_a_job_without_a_hold_gets_its_dead_reservations_back_on_its_ledger_and_the_month(
    store: UsageStore,
) -> None:
    budgets = _budgets(store, monthly=10.0)
    budgets.open_job(TEAM, "job-1", {"discovery_depth": "rapid", "max_cost_usd": 1.0})
    store.add(UsageKey(TEAM, MONTH, TOTALS), {"committed_usd": 0.5})  # the team's other spending
    store.charge_job(TEAM, "job-1", {"cost_usd": 0.002, "committed_usd": 0.002})  # a recorded step
    unit = MODEL.unit_cost("extract")
    with metering(Meter()):  # two steps reserve, then die with the runtime: never recorded
        assert budgets.admit(TEAM, "job-1", "extract") is None
        assert budgets.admit(TEAM, "job-1", "extract") is None
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.committed_usd == pytest.approx(0.002 + 2 * unit)
    assert _month_committed(store) == pytest.approx(0.5 + 2 * unit)

    assert budgets.release_unrecorded(TEAM, "job-1") == pytest.approx(2 * unit)
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.committed_usd == pytest.approx(0.002) == pytest.approx(
        ledger.cost_usd
    )
    assert _month_committed(store) == pytest.approx(0.5)
    assert budgets.release_unrecorded(TEAM, "job-1") == 0.0  # nothing left to give back
    assert budgets.release_unrecorded(TEAM, "unknown-job") == 0.0


def test_a_job_holding_part_of_the_month_reserved_on_its_ledger_only(store: UsageStore) -> None:
    budgets = _budgets(store, monthly=10.0)
    assert budgets.hold(TEAM, "job-2", {"low_usd": 0.01, "high_usd": 0.02}) == pytest.approx(0.02)
    budgets.open_job(TEAM, "job-2", {"discovery_depth": "rapid"})
    held = _month_committed(store)
    with metering(Meter()):
        assert budgets.admit(TEAM, "job-2", "synthesize", sources=3) is None
    assert _month_committed(store) == pytest.approx(held)  # the hold already counts on the month
    assert budgets.release_unrecorded(TEAM, "job-2") > 0
    ledger = store.job(TEAM, "job-2")
    assert ledger is not None and ledger.committed_usd == pytest.approx(0.0)
    assert _month_committed(store) == pytest.approx(held)  # the month keeps the hold, untouched
