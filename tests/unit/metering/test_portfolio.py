"""Jobs held as one portfolio: simultaneous jobs hold their means plus the margin of their sum, which
their sum passes about 5 % of the time; the month's budget is never passed; a running job's hold follows
what it still needs (docs/usage.md, "The portfolio")."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from functions.metering.budget import BudgetExceeded, Budgets, portfolio_margin, quote_terms
from functions.metering.estimate import HIGH_QUANTILE_Z, CostModel, remaining_spread
from functions.metering.meter import Meter
from functions.metering.prices import DEFAULT_PRICES
from functions.metering.recorder import StepRun, UsageRecorder
from functions.metering.store import TOTALS, UsageKey, UsageStore

TEAM = "team-portfolio"
MODEL = CostModel(DEFAULT_PRICES, llm_configured=False)
RAPID_PLAN = {"queries": [{}, {}, {}], "target_sources": 10}
QUOTE = MODEL.quote(RAPID_PLAN)


def _month() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


def _totals(store: UsageStore) -> tuple[float, float]:
    totals = store.get(UsageKey(TEAM, _month(), TOTALS))
    if totals is None:
        return 0.0, 0.0
    return totals.count("committed_usd"), totals.count("hold_margin_sq")


def _quote(mean: float, sd: float, low: float, high: float) -> dict[str, Any]:
    """A quote with these figures (the hold reads only them and the planned extractions)."""
    return {"low_usd": low, "high_usd": high, "basis": {"mean_usd": mean, "sd_usd": sd, "extractions": 10}}


def _hold_all(budgets: Budgets, jobs: int, quote: dict[str, Any]) -> list[float]:
    shares = []
    for index in range(jobs):
        try:
            share = budgets.hold(TEAM, f"job-{index}", quote)
        except BudgetExceeded:
            continue
        assert share is not None
        shares.append(share)
    return shares


def test_simultaneous_jobs_hold_their_means_plus_the_margin_of_their_sum(store: UsageStore) -> None:
    budgets = Budgets(store, MODEL, team_budget=lambda team: 1.0)  # room for all
    terms = quote_terms(QUOTE)
    shares = _hold_all(budgets, 10, QUOTE)
    committed, pooled_sq = _totals(store)
    assert shares[0] == pytest.approx(terms.high)  # alone: its high figure (below mean + margin)
    first_cut = terms.mean + terms.margin - terms.high
    assert committed == pytest.approx(10 * terms.mean + math.sqrt(10) * terms.margin - first_cut, rel=1e-6)
    assert pooled_sq == pytest.approx(10 * terms.margin**2, rel=1e-6)
    assert committed < 10 * terms.mean + 10 * terms.margin


def test_a_portfolio_admits_n_minus_one_of_n_when_the_quotes_spread_allows_it(store: UsageStore) -> None:
    # N * middle >= (N - 1) * mean + sqrt(N - 1) * margin: here 21 >= 19 + 4.36 * 0.33
    quote = _quote(mean=1.0, sd=0.2, low=0.8, high=1.3)
    jobs = 20
    budget = jobs * (0.8 + 1.3) / 2
    budgets = Budgets(store, MODEL, team_budget=lambda team: budget)
    shares = _hold_all(budgets, jobs, quote)
    assert len(shares) >= jobs - 1
    assert _totals(store)[0] <= budget + 1e-9


def test_the_portfolio_refuses_a_job_whose_floor_the_month_cannot_pay(store: UsageStore) -> None:
    terms = quote_terms(QUOTE)
    floor = min(terms.low, MODEL.least_job_cost())
    budget = 20 * (terms.low + terms.high) / 2
    budgets = Budgets(store, MODEL, team_budget=lambda team: budget)
    shares = _hold_all(budgets, 20, QUOTE)
    committed = _totals(store)[0]
    assert committed <= budget + 1e-9  # the month's hard limit, whatever the margins
    assert len(shares) < 20 and budget - committed < floor  # refused only once its floor no longer fits
    # as many as the portfolio's arithmetic allows: the k-th fits while k means and sqrt(k) margins do
    fits = max(k for k in range(1, 21) if k * terms.mean + math.sqrt(k) * terms.margin <= budget)
    assert fits <= len(shares) <= fits + 1


def test_the_portfolio_bound_is_passed_about_one_time_in_twenty() -> None:
    """The jobs' costs drawn from the quote's own law (its mixture of log-normals): their sum passes
    the pooled hold in about 5 % of draws (the normal approximation of a sum of 18 skewed costs)."""
    parts, _ = MODEL.job_parts(3, 10)
    weights = np.array([weight for weight, _ in parts])
    laws = np.array([moments.log_normal() for _, moments in parts])
    rng = np.random.default_rng(31)
    jobs, draws = 18, 40_000
    chosen = rng.choice(len(parts), size=(draws, jobs), p=weights / weights.sum())
    costs = np.exp(rng.normal(laws[chosen, 0], laws[chosen, 1]))
    terms = quote_terms(QUOTE)
    bound = jobs * terms.mean + math.sqrt(jobs) * terms.margin
    passed = float((costs.sum(axis=1) > bound).mean())
    assert 0.02 < passed < 0.065


def _record(store: UsageStore, job_id: str, step: str, seconds: float) -> None:
    meter = Meter()
    UsageRecorder(store, DEFAULT_PRICES).record_step(StepRun(TEAM, job_id, step, seconds, 1024, meter))


def test_a_running_jobs_hold_follows_its_remaining_cost_and_its_part_of_the_pool(store: UsageStore) -> None:
    budgets = Budgets(store, MODEL, team_budget=lambda team: 1.0)
    for job in ("job-a", "job-b"):
        budgets.hold(TEAM, job, QUOTE)
        budgets.open_job(TEAM, job, {"discovery_depth": "rapid"})
    initial_sq = _totals(store)[1]
    for step in ("plan", "search", "screen"):
        _record(store, "job-a", step, MODEL.profiles[step].seconds_mean)
    store.select_extractions(TEAM, "job-a", 10)  # the screening chose: the count's spread is gone
    budgets.true_up(TEAM, "job-a")
    pooled_at_a = _totals(store)[1]  # job-a's remaining margin and job-b's margin as it was held
    budgets.true_up(TEAM, "job-b")
    a, b = store.job(TEAM, "job-a"), store.job(TEAM, "job-b")
    assert a is not None and b is not None and a.held_usd is not None
    committed, pooled_sq = _totals(store)
    # the pool counts each job's remaining margin once, and the further job's is the smaller
    assert pooled_sq == pytest.approx(a.hold_margin_sq + b.hold_margin_sq)
    assert a.hold_margin_sq < b.hold_margin_sq and pooled_sq < initial_sq
    remaining = MODEL.remaining_cost(a.counters, 10, high=False, selected=10)
    margin_sq = (HIGH_QUANTILE_Z * remaining_spread(MODEL, a.counters, 10, selected=10)) ** 2
    assert a.hold_margin_sq == pytest.approx(margin_sq)
    expected = a.committed_usd + remaining + portfolio_margin(margin_sq, pooled_at_a)
    assert a.held_usd == pytest.approx(expected, rel=1e-6)
    assert committed == pytest.approx(a.held_usd + (b.held_usd or 0.0), rel=1e-6)
