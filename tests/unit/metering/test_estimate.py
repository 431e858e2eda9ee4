"""The cost quote of a plan, and the cost of a running job's next unit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.metering.estimate import CostModel
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
    assert 0 < quote["low_usd"] < quote["high_usd"] < 4 * quote["low_usd"]
    basis = quote["basis"]
    assert basis["queries"] == len(plan["queries"])  # type: ignore[arg-type]
    assert basis["target_sources"] == basis["extractions"] == 30
    assert basis["steps"]["low"]["extract"] == 30 and basis["steps"]["high"]["search"] == 3  # iterations
    assert basis["search_iterations"] == {"low": 1, "high": 3}
    assert basis["llm_tokens_in"] == {"low": 0, "high": 0}
    assert basis["prices"]["region"] == "us-east-1"
    assert basis["step_memory_mb"]["extract"] == 2048


def test_deeper_jobs_and_a_model_cost_more() -> None:
    without_llm = CostModel(DEFAULT_PRICES, llm_configured=False)
    with_llm = CostModel(DEFAULT_PRICES, llm_configured=True)
    rapid, comprehensive = without_llm.quote(_plan("rapid")), without_llm.quote(_plan("comprehensive"))
    assert comprehensive["low_usd"] > rapid["low_usd"]
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
