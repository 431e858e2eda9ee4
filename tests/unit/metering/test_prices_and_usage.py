"""The price table and what quantities cost at it."""

from __future__ import annotations

import pytest

from functions.metering.prices import DEFAULT_PRICES, PriceTableError, load_price_table
from functions.metering.usage import Cost, Quantities, billed_gb_seconds, step_memory_mb


def test_defaults_are_the_documented_us_east_1_prices() -> None:
    assert load_price_table(None) is DEFAULT_PRICES
    assert DEFAULT_PRICES.region == "us-east-1" and DEFAULT_PRICES.as_of
    assert DEFAULT_PRICES.lambda_gb_second == 0.0000133334  # arm64
    assert DEFAULT_PRICES.sfn_state_transition == pytest.approx(0.000025)
    assert DEFAULT_PRICES.s3_tier1_request == pytest.approx(0.000005)
    assert DEFAULT_PRICES.dynamodb_write_request == pytest.approx(0.625e-6)


def test_an_override_changes_only_what_it_names() -> None:
    prices = load_price_table('{"llm_input_token": 3e-6, "llm_output_token": 1.5e-5}')
    assert prices.llm_input_token == 3e-6 and prices.llm_output_token == 1.5e-5
    assert prices.lambda_gb_second == DEFAULT_PRICES.lambda_gb_second


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[1, 2]",
        '{"lambda_gb_secnd": 1e-5}',
        '{"lambda_request": -1}',
        '{"sfn_state_transition": "x"}',
    ],
)
def test_an_invalid_table_is_refused(raw: str) -> None:
    with pytest.raises(PriceTableError):
        load_price_table(raw)


def test_lambda_bills_milliseconds_rounded_up_times_memory() -> None:
    assert billed_gb_seconds(1.0, 1024) == 1.0
    assert billed_gb_seconds(0.0001, 2048) == pytest.approx(0.002)  # 1 ms at 2 GB
    assert billed_gb_seconds(2.0004, 512) == pytest.approx(2.001 / 2)


def test_step_memory_comes_from_the_registry() -> None:
    assert step_memory_mb("extract") == 2048
    assert step_memory_mb("search") == 512
    assert step_memory_mb("no-such-step", default=128) == 128


def test_aws_calls_are_sorted_into_billing_classes() -> None:
    quantities = Quantities()
    for service, operation in [
        ("s3", "PutObject"),
        ("s3", "ListObjectsV2"),
        ("s3", "GetObject"),
        ("s3", "HeadObject"),
        ("s3", "DeleteObject"),  # free
        ("dynamodb", "UpdateItem"),
        ("dynamodb", "TransactWriteItems"),
        ("dynamodb", "GetItem"),
        ("dynamodb", "Query"),
        ("dynamodb", "DescribeTable"),  # not billed per request
        ("events", "PutEvents"),  # not metered
    ]:
        quantities.add_aws_call(service, operation)
    assert (quantities.s3_tier1_requests, quantities.s3_tier2_requests) == (2, 2)
    assert (quantities.dynamodb_write_requests, quantities.dynamodb_read_requests) == (2, 2)


def test_cost_is_each_quantity_at_its_price() -> None:
    quantities = Quantities(
        lambda_gb_seconds=10.0,
        lambda_requests=4,
        sfn_transitions=40,
        s3_tier1_requests=1000,
        s3_tier2_requests=1000,
        dynamodb_write_requests=1_000_000,
        dynamodb_read_requests=1_000_000,
        llm_tokens_in=1_000_000,
        llm_tokens_out=1_000_000,
    )
    cost = quantities.cost(DEFAULT_PRICES)
    assert cost.lambda_usd == pytest.approx(10 * 0.0000133334 + 4 * 0.2e-6)
    assert cost.step_functions_usd == pytest.approx(0.001)
    assert cost.s3_usd == pytest.approx(0.0054)
    assert cost.dynamodb_usd == pytest.approx(0.75)
    assert cost.llm_usd == pytest.approx(1.5)
    counters = cost.to_counters()
    assert counters["cost_usd"] == pytest.approx(cost.total_usd)
    assert Cost.from_counters(counters).to_dict() == cost.to_dict()
    assert Quantities.from_counters(quantities.to_counters()) == quantities
