"""GET /api/usage (JSON), /api/usage.csv (charge-back) and /api/usage/jobs/{job_id} on the orchestrate app."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from functions.metering import wiring
from functions.metering.budget import Budgets
from functions.metering.estimate import CostModel
from functions.metering.meter import Meter
from functions.metering.prices import DEFAULT_PRICES
from functions.metering.recorder import StepRun, UsageRecorder
from functions.metering.report import UsageReports
from functions.metering.routes import get_reports
from functions.metering.store import HoldRequest, JobTerms
from functions.orchestrate.app import app
from tests.support.fakes.usage_store import InMemoryUsageStore

NOW = datetime(2026, 5, 14, tzinfo=UTC)
ALPHA = {"x-team-id": "team-alpha"}


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryUsageStore]:
    memory = InMemoryUsageStore()
    monkeypatch.setattr(
        wiring, "request_usage_store", lambda: InMemoryUsageStore()
    )  # the middleware's writes
    budgets = Budgets(
        memory,
        CostModel(DEFAULT_PRICES, llm_configured=False),
        team_budget=lambda team: 1.0 if team == "team-alpha" else None,
        clock=lambda: NOW,
    )
    app.dependency_overrides[get_reports] = lambda: UsageReports(
        memory, DEFAULT_PRICES, budgets, clock=lambda: NOW
    )
    recorder = UsageRecorder(memory, DEFAULT_PRICES, clock=lambda: NOW)
    memory.open_job(
        JobTerms("team-alpha", "job-1", depth="comprehensive", max_cost_usd=0.05, monthly_budget_usd=1.0)
    )
    meter = Meter()
    meter.count_call("s3", "PutObject")
    meter.add_source(True)
    recorder.record_step(StepRun("team-alpha", "job-1", "extract", 2.0, 2048, meter))
    recorder.record_step(StepRun("team-alpha", "job-1", "finalize", 0.3, 1024, Meter(), outcome="COMPLETED"))
    recorder.record_request("team-alpha", "POST", "/api/agent/execute", 202, Meter())
    recorder.record_request("team-beta", "POST", "/api/agent/execute", 202, Meter())
    yield memory
    app.dependency_overrides.clear()


def test_usage_of_the_month_as_json(store: InMemoryUsageStore) -> None:
    with TestClient(app) as client:
        body = client.get("/api/usage?month=2026-05", headers=ALPHA).json()
        default_month = client.get("/api/usage", headers=ALPHA).json()
    assert default_month["month"] == "2026-05"
    assert body["team_id"] == "team-alpha" and body["month"] == "2026-05"
    assert body["requests_by_route"] == [
        {"route": "POST /api/agent/execute", "requests": 1, "client_errors": 0, "server_errors": 0}
    ]
    assert body["jobs_by_depth_and_outcome"] == [
        {"depth": "comprehensive", "outcome": "COMPLETED", "jobs": 1}
    ]
    assert (body["sources_fetched"], body["sources_parsed"]) == (1, 1)
    cost = body["aws_cost_usd"]
    assert cost["total_usd"] == pytest.approx(
        cost["lambda_usd"]
        + cost["step_functions_usd"]
        + cost["s3_usd"]
        + cost["dynamodb_usd"]
        + cost["llm_usd"]
    )
    assert body["usage"]["lambda_gb_seconds"] == pytest.approx(4.3)
    (job,) = body["jobs"]
    assert (
        job["job_id"] == "job-1"
        and job["outcome"] == "COMPLETED"
        and job["steps"] == {"extract": 1, "finalize": 1}
    )
    assert job["cost_usd"] == pytest.approx(cost["total_usd"])
    assert body["budget"]["monthly_budget_usd"] == 1.0
    assert body["budget"]["remaining_usd"] == pytest.approx(1.0 - cost["total_usd"])


def test_usage_as_csv_one_row_per_metric(store: InMemoryUsageStore) -> None:
    with TestClient(app) as client:
        response = client.get("/api/usage.csv?month=2026-05", headers=ALPHA)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    by_metric = {(row["metric"], row["dimension"]): row for row in rows}
    assert by_metric[("requests", "POST /api/agent/execute")]["quantity"] == "1"
    assert by_metric[("jobs", "comprehensive/COMPLETED")]["quantity"] == "1"
    assert by_metric[("lambda_gb_seconds", "")]["unit"] == "GB-second"
    total = float(by_metric[("cost_usd", "total")]["cost_usd"])
    assert float(by_metric[("job_cost_usd", "job-1")]["cost_usd"]) == pytest.approx(total)
    assert {row["team_id"] for row in rows} == {"team-alpha"} and {row["month"] for row in rows} == {
        "2026-05"
    }


def test_one_job_and_its_budget(store: InMemoryUsageStore) -> None:
    with TestClient(app) as client:
        job = client.get("/api/usage/jobs/job-1", headers=ALPHA).json()
        other_team = client.get("/api/usage/jobs/job-1", headers={"x-team-id": "team-beta"})
    assert job["max_cost_usd"] == 0.05 and job["depth"] == "comprehensive"
    assert job["committed_usd"] == pytest.approx(job["cost_usd"])
    assert 0 < job["max_step_cost_usd"] < job["cost_usd"]
    assert job["final"] is True  # its Finalize step is recorded
    assert other_team.status_code == 404 and other_team.json()["error"] == "JOB_NOT_FOUND"


def test_a_job_is_final_once_its_last_step_is_recorded_and_its_hold_settled(
    store: InMemoryUsageStore,
) -> None:
    recorder = UsageRecorder(store, DEFAULT_PRICES, clock=lambda: NOW)
    store.open_job(JobTerms("team-alpha", "job-2", depth="rapid", max_cost_usd=0.05, monthly_budget_usd=1.0))
    store.hold(HoldRequest("team-alpha", "job-2", "2026-05", 0.01, month_limit=1.0, monthly_budget_usd=1.0))

    def final() -> bool:
        with TestClient(app) as client:
            return bool(client.get("/api/usage/jobs/job-2", headers=ALPHA).json()["final"])

    recorder.record_step(StepRun("team-alpha", "job-2", "plan", 0.2, 1024, Meter()))
    running = final()
    recorder.record_step(StepRun("team-alpha", "job-2", "finalize", 0.2, 1024, Meter(), outcome="COMPLETED"))
    billed_unsettled = final()  # the Finalize step is recorded, its hold not yet given back
    store.settle("team-alpha", "job-2")
    assert (running, billed_unsettled, final()) == (False, False, True)


@pytest.mark.parametrize("month", ["2026-13", "May", "2026-5", "20260501"])
def test_a_bad_month_is_400_in_the_agent_error_format(store: InMemoryUsageStore, month: str) -> None:
    with TestClient(app) as client:
        for path in ("/api/usage", "/api/usage.csv"):
            response = client.get(path, params={"month": month}, headers=ALPHA)
            assert response.status_code == 400
            assert response.json() == {
                "error": "INVALID_INPUT",
                "message": "month must be YYYY-MM, e.g. 2026-05",
                "field": "month",
            }


def test_another_team_sees_only_its_own_usage(store: InMemoryUsageStore) -> None:
    with TestClient(app) as client:
        beta = client.get("/api/usage?month=2026-05", headers={"x-team-id": "team-beta"}).json()
    assert beta["jobs"] == [] and beta["requests_total"] == 1 and "monthly_budget_usd" in beta["budget"]
    assert beta["budget"]["monthly_budget_usd"] is None
