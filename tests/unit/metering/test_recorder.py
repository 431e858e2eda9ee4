"""Recording a step's and a request's usage on the job's ledger and the team's month."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.common.llm import Usage
from functions.metering.meter import Meter
from functions.metering.prices import DEFAULT_PRICES
from functions.metering.recorder import StepRun, UsageRecorder
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

TEAM, MONTH = "team-alpha", "2026-05"


def _recorder(store: UsageStore, month: int = 5) -> UsageRecorder:
    return UsageRecorder(store, DEFAULT_PRICES, clock=lambda: datetime(2026, month, 31, 23, 59, tzinfo=UTC))


def _meter(**calls: int) -> Meter:
    meter = Meter()
    for key, count in calls.items():
        service, operation = key.split("_", 1)
        for _ in range(count):
            meter.count_call(service, operation)
    return meter


def test_a_step_is_charged_to_the_job_and_the_month(store: UsageStore) -> None:
    store.open_job(JobTerms(TEAM, "job-1", depth="rapid", max_cost_usd=None, monthly_budget_usd=None))
    meter = _meter(s3_PutObject=2, s3_GetObject=1, dynamodb_UpdateItem=3, dynamodb_GetItem=1)
    meter.add_tokens(Usage(1000, 100))
    meter.add_source(True)
    cost = _recorder(store).record_step(StepRun(TEAM, "job-1", "extract", 1.5, 2048, meter))
    expected = (
        3.0 * DEFAULT_PRICES.lambda_gb_second
        + DEFAULT_PRICES.lambda_request
        + DEFAULT_PRICES.sfn_state_transition
        + 2 * DEFAULT_PRICES.s3_tier1_request
        + DEFAULT_PRICES.s3_tier2_request
        + 3 * DEFAULT_PRICES.dynamodb_write_request
        + DEFAULT_PRICES.dynamodb_read_request
        + 1000 * DEFAULT_PRICES.llm_input_token
        + 100 * DEFAULT_PRICES.llm_output_token
    )
    assert cost.total_usd == pytest.approx(expected)
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None
    assert ledger.cost_usd == pytest.approx(expected) and ledger.committed_usd == pytest.approx(expected)
    assert ledger.counters["lambda_gb_seconds"] == pytest.approx(3.0)
    assert ledger.counters["steps_extract"] == 1 and ledger.counters["sources_parsed"] == 1
    assert ledger.max_step_usd == pytest.approx(expected)
    totals = store.get(UsageKey(TEAM, MONTH, TOTALS))
    month_job = store.get(UsageKey(TEAM, MONTH, job_dimension("job-1")))
    assert totals is not None and month_job is not None
    assert totals.count("cost_usd") == pytest.approx(expected) and totals.count("llm_tokens_in") == 1000
    assert month_job.count("s3_tier1_requests") == 2 and month_job.labels == {"depth": ["rapid"]}
    assert "jobs" not in totals.counters


def test_reservations_are_replaced_by_the_cost(store: UsageStore) -> None:
    store.open_job(JobTerms(TEAM, "job-1", depth="rapid", max_cost_usd=1.0, monthly_budget_usd=None))
    meter = Meter()
    assert (
        store.reserve(ReserveRequest(TEAM, "job-1", "2026-04", 0.01, job_limit=1.0, month_limit=None)) is None
    )
    meter.reserve(0.01, "2026-04")  # reserved in April, recorded in May
    cost = _recorder(store).record_step(StepRun(TEAM, "job-1", "search", 0.5, 512, meter))
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.committed_usd == pytest.approx(cost.total_usd)
    april, may = store.get(UsageKey(TEAM, "2026-04", TOTALS)), store.get(UsageKey(TEAM, MONTH, TOTALS))
    assert april is not None and april.count("committed_usd") == pytest.approx(0.0)
    assert may is not None and may.count("committed_usd") == pytest.approx(cost.total_usd)


def test_the_step_that_finishes_a_job_counts_it_by_depth_and_outcome(store: UsageStore) -> None:
    store.open_job(JobTerms(TEAM, "job-1", depth="comprehensive", max_cost_usd=None, monthly_budget_usd=None))
    recorder = _recorder(store)
    recorder.record_step(StepRun(TEAM, "job-1", "finalize", 0.2, 1024, Meter(), outcome="PARTIAL"))
    recorder.record_step(StepRun(TEAM, "job-2", "fail", 0.1, 256, Meter(), outcome="FAILED"))
    by_kind = store.get(UsageKey(TEAM, MONTH, jobs_dimension("comprehensive", "PARTIAL")))
    assert by_kind is not None and by_kind.count("jobs") == 1
    unknown = store.get(
        UsageKey(TEAM, MONTH, jobs_dimension("unknown", "FAILED"))
    )  # a job failed before its plan
    assert unknown is not None and unknown.count("jobs") == 1
    totals = store.get(UsageKey(TEAM, MONTH, TOTALS))
    assert totals is not None and totals.count("jobs") == 2 and totals.count("sfn_transitions") == 4
    month_job = store.get(UsageKey(TEAM, MONTH, job_dimension("job-1")))
    assert month_job is not None and month_job.labels["outcome"] == ["PARTIAL"]


def test_a_request_counts_under_its_route_with_its_tokens(store: UsageStore) -> None:
    recorder = _recorder(store)
    meter = Meter()
    recorder.record_request(TEAM, "GET", "/api/agent/status/{job_id}", 200, meter)
    recorder.record_request(TEAM, "GET", "/api/agent/status/{job_id}", 404, meter)
    meter.add_tokens(Usage(500, 50))
    meter.add_source(False)
    recorder.record_request(TEAM, "POST", "/v1/answer", 503, meter)
    status = store.get(UsageKey(TEAM, MONTH, route_dimension("GET", "/api/agent/status/{job_id}")))
    answer = store.get(UsageKey(TEAM, MONTH, route_dimension("POST", "/v1/answer")))
    assert status is not None and status.counters == {"requests": 2, "client_errors": 1}
    assert answer is not None and answer.counters == {"requests": 1, "server_errors": 1}
    totals = store.get(UsageKey(TEAM, MONTH, TOTALS))
    llm = 500 * DEFAULT_PRICES.llm_input_token + 50 * DEFAULT_PRICES.llm_output_token
    assert totals is not None
    assert totals.count("llm_tokens_in") == 500 and totals.count("sources_failed") == 1
    assert totals.count("cost_llm_usd") == pytest.approx(llm) and totals.count(
        "committed_usd"
    ) == pytest.approx(llm)


def test_a_deferred_attempt_is_billed_apart_from_its_steps(store: UsageStore) -> None:
    from functions.metering.estimate import CostModel

    store.open_job(JobTerms(TEAM, "job-1", depth="rapid", max_cost_usd=None, monthly_budget_usd=None))
    recorder = _recorder(store)
    model = CostModel(DEFAULT_PRICES, llm_configured=False)
    step = recorder.record_step(StepRun(TEAM, "job-1", "extract", 4.0, 2048, Meter()))
    before = store.job(TEAM, "job-1")
    assert before is not None
    ratio = model.measured_ratio(before.counters)
    waited = recorder.record_step(StepRun(TEAM, "job-1", "extract", 2.0, 2048, Meter(), deferred=True))
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None
    assert ledger.cost_usd == pytest.approx(step.total_usd + waited.total_usd)  # billed in full
    assert ledger.counters["steps_extract"] == 1 and ledger.counters["deferred_extract"] == 1
    # an extraction's reservation and the job's pace follow its real units, not its waits
    assert ledger.counters["cost_step_extract_usd"] == pytest.approx(step.total_usd)
    assert model.measured_ratio(ledger.counters) == pytest.approx(ratio)
