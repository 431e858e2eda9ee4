"""The cost quote of a plan, and the cost of a running job's next unit."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from functions.metering.estimate import (
    HIGH_QUANTILE_Z,
    LOW_QUANTILE_Z,
    CostModel,
    CountProfile,
    Moments,
    mixture_quantile,
)
from functions.metering.prices import DEFAULT_PRICES, load_price_table
from functions.research.planning.job import build_plan
from functions.research.planning.request import ScopeParameters


def _plan(depth: str) -> dict[str, object]:
    scope = ScopeParameters.model_validate({"discovery_depth": depth})
    plan = build_plan(
        "What are recent advances in transformer architectures?", scope, now=datetime(2026, 5, 1, tzinfo=UTC)
    )
    return plan.to_dict()


def test_a_quote_has_a_range_and_its_basis() -> None:
    plan = _plan("comprehensive")
    quote = CostModel(DEFAULT_PRICES, llm_configured=False).quote(plan)
    assert quote["currency"] == "USD"
    basis = quote["basis"]
    assert 0 < quote["low_usd"] < basis["mean_usd"] < quote["high_usd"]
    assert basis["queries"] == len(plan["queries"])  # type: ignore[arg-type]
    assert basis["target_sources"] == basis["extractions"] == 30
    assert basis["steps_most"]["extract"] == 30 and basis["steps_most"]["search"] == 3  # iterations
    assert 0 < basis["expected_steps"]["extract"] <= 30
    assert basis["llm_tokens_in"] == {"low": 0, "high": 0}
    assert basis["prices"]["region"] == "us-east-1"
    assert basis["step_memory_mb"]["extract"] == 2048


def test_the_interval_is_the_15th_to_95th_percentile_of_a_mixture_of_log_normal_costs() -> None:
    one = Moments(0.004, 0.001**2)
    mu, sigma = one.log_normal()
    assert math.exp(mu + sigma**2 / 2) == pytest.approx(0.004)  # the log-normal's mean...
    assert math.exp(2 * mu + sigma**2) * math.expm1(sigma**2) == pytest.approx(0.001**2)  # ...variance
    for z in (LOW_QUANTILE_Z, HIGH_QUANTILE_Z):
        assert mixture_quantile([(1.0, one)], z) == pytest.approx(math.exp(mu + z * sigma), rel=1e-6)
    cheap = Moments(0.001, 0.0001**2)  # a quarter of jobs find nothing to extract
    low = mixture_quantile([(0.25, cheap), (0.75, one)], LOW_QUANTILE_Z)
    assert 0.001 < low < math.exp(mu + LOW_QUANTILE_Z * sigma)
    assert mixture_quantile([(0.25, cheap), (0.75, one)], 0.0) > 0.002  # the median is an expensive job's


def test_a_count_capped_by_the_plan_has_a_lower_mean_and_spread() -> None:
    count = CountProfile(20.0, 4.0)
    assert count.capped(1000) == pytest.approx((20.0, 4.0), rel=1e-2)
    mean, sd = count.capped(16)
    assert mean < 16 and sd < 4.0
    assert CountProfile(1.0, 0.0).capped(3) == (1.0, 0.0)


def test_what_a_running_job_may_still_spend_follows_its_phase() -> None:
    model = CostModel(DEFAULT_PRICES, llm_configured=False)
    cost = {step: model.step_cost(step, high=True) for step in model.profiles}
    fresh = model.remaining_cost({"steps_plan": 1}, 10)
    assert fresh == pytest.approx(
        3 * cost["search"] + 2 * cost["screen"] + 10 * cost["extract"] + cost["synthesize"] + cost["finalize"]
    )
    extracting = {"steps_plan": 1, "steps_search": 1, "steps_screen": 1, "steps_extract": 4}
    assert model.remaining_cost(extracting, 10) == pytest.approx(
        6 * cost["extract"] + cost["synthesize"] + cost["finalize"]
    )  # no search or screening once it extracts
    synthesized = {**extracting, "steps_synthesize": 1}
    assert model.remaining_cost(synthesized, 10) == pytest.approx(cost["finalize"])


def test_deeper_jobs_and_a_model_cost_more() -> None:
    without_llm = CostModel(DEFAULT_PRICES, llm_configured=False)
    with_llm = CostModel(DEFAULT_PRICES, llm_configured=True)
    rapid, comprehensive = without_llm.quote(_plan("rapid")), without_llm.quote(_plan("comprehensive"))
    assert comprehensive["low_usd"] >= rapid["low_usd"]  # a goal that finds nothing costs the same
    assert comprehensive["basis"]["mean_usd"] > rapid["basis"]["mean_usd"]
    assert comprehensive["high_usd"] > rapid["high_usd"]
    quote = with_llm.quote(_plan("comprehensive"))
    assert quote["low_usd"] > comprehensive["low_usd"]
    assert 0 < quote["basis"]["llm_tokens_in"]["low"] < quote["basis"]["llm_tokens_in"]["high"]
    assert quote["basis"]["llm_tokens_out"]["high"] >= 400


def test_the_price_table_prices_the_quote() -> None:
    plan = _plan("focused")
    base = CostModel(DEFAULT_PRICES, llm_configured=False).quote(plan)
    doubled = load_price_table(
        '{"lambda_gb_second": 2.66668e-5, "lambda_request": 4e-7, "sfn_state_transition": 5e-5, '
        '"s3_tier1_request": 1e-5, "s3_tier2_request": 8e-7, "dynamodb_write_request": 1.25e-6, '
        '"dynamodb_read_request": 2.5e-7}'
    )
    assert CostModel(doubled, llm_configured=False).quote(plan)["low_usd"] == pytest.approx(
        2 * base["low_usd"], rel=1e-3
    )


def test_a_unit_reserves_its_high_figure_and_closing_covers_finishing() -> None:
    model = CostModel(DEFAULT_PRICES, llm_configured=False)
    assert (
        model.unit_cost("extract")
        == model.step_cost("extract", high=True)
        > model.step_cost("extract", high=False)
    )
    assert model.closing_cost("search") > model.closing_cost("extract") > model.closing_cost("synthesize") > 0
    assert model.closing_cost("synthesize") == model.step_cost("finalize", high=True)
    llm = CostModel(DEFAULT_PRICES, llm_configured=True)
    assert llm.unit_cost("synthesize", sources=30) > llm.unit_cost("synthesize", sources=0)


def test_a_running_job_reserves_its_own_pace_once_it_has_measured_a_unit() -> None:
    model = CostModel(DEFAULT_PRICES, llm_configured=False)
    high = model.unit_cost("extract")
    assert model.unit_estimate("extract", {}) == high  # nothing measured yet: the high profile
    spread = math.sqrt(model.step_moments("extract").variance)
    fast = {"steps_extract": 4.0, "cost_step_extract_usd": 4 * 0.00005}
    assert model.unit_estimate("extract", fast) == pytest.approx(0.00005 + 2 * spread)
    assert 0.00005 + 2 * spread < high
    slow = {"steps_extract": 2.0, "cost_step_extract_usd": 2 * 0.002, "cost_usd": 0.004}
    assert model.measured_ratio(slow) > 1
    assert model.unit_estimate("extract", slow) == pytest.approx(model.measured_ratio(slow) * high)


def test_a_job_that_chases_citations_is_quoted_its_chase_step_and_the_sources_it_adds() -> None:
    from functions.metering.estimate import CHASE_PROFILE, chase_moments

    model = CostModel(DEFAULT_PRICES, llm_configured=False)
    plan = {"queries": [{}] * 6, "target_sources": 30}
    off = model.quote({**plan, "citation_chasing": "off", "chase_seeds": 5})
    both = model.quote({**plan, "citation_chasing": "both", "chase_seeds": 5})
    chase = both["basis"]["chase"]
    assert chase["seeds"] == 5 and chase["graph_requests"] == {"semantic_scholar": 6.0, "openalex": 10.0}
    assert chase["chased_sources"] == CHASE_PROFILE.selected(5)[0]
    assert off["basis"]["chase"]["graph_requests"] == {} and off["basis"]["expected_steps"]["chase"] == 1
    # the Chase step and the chased extractions raise every figure of the interval
    step = chase_moments(DEFAULT_PRICES, 5).mean - chase_moments(DEFAULT_PRICES, 0).mean
    assert both["basis"]["mean_usd"] - off["basis"]["mean_usd"] > step
    assert both["low_usd"] > off["low_usd"] and both["high_usd"] > off["high_usd"]
    assert both["basis"]["expected_steps"]["extract"] > off["basis"]["expected_steps"]["extract"]
