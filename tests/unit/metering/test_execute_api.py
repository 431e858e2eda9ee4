"""POST /api/agent/execute: the cost quote, the monthly-budget refusal (402), max_cost_usd validation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.common.storage import InMemoryBlobStore
from functions.metering import wiring
from functions.metering.budget import Budgets
from functions.metering.estimate import CostModel
from functions.metering.prices import DEFAULT_PRICES
from functions.orchestrate.app import app
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.jobs import JobService
from functions.orchestrate.routes import get_job_service
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter
from tests.support.fakes.usage_store import InMemoryUsageStore

GOAL = "What are recent advances in transformer architectures?"
BUDGETS = {"team-poor": 0.0005, "team-rich": 100.0}


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setattr(
        wiring, "request_usage_store", lambda: InMemoryUsageStore()
    )  # the middleware's writes
    budgets = Budgets(
        InMemoryUsageStore(), CostModel(DEFAULT_PRICES, llm_configured=False), team_budget=BUDGETS.get
    )
    service = JobService(
        jobs=InMemoryJobStore(),
        starter=RecordingStarter(),
        artifacts=InMemoryBlobStore(),
        settings=WorkflowSettings(),
        costs=budgets,
    )
    app.dependency_overrides[get_job_service] = lambda: service
    with TestClient(app) as test_client:
        yield test_client
    app.dependency_overrides.clear()


def test_execute_returns_a_cost_estimate(client: TestClient) -> None:
    response = client.post(
        "/api/agent/execute",
        json={
            "research_goal": GOAL,
            "scope_parameters": {"discovery_depth": "comprehensive", "max_cost_usd": 0.5},
        },
        headers={"x-team-id": "team-rich"},
    )
    assert response.status_code == 202
    estimate = response.json()["cost_estimate"]
    assert set(estimate) == {"low_usd", "high_usd", "currency", "basis"}
    assert estimate["currency"] == "USD" and 0 < estimate["low_usd"] < estimate["high_usd"]
    assert estimate["basis"]["target_sources"] == 30


def test_a_job_beyond_the_monthly_budget_is_refused_with_402(client: TestClient) -> None:
    response = client.post(
        "/api/agent/execute",
        json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "exhaustive"}},
        headers={"x-team-id": "team-poor", "Idempotency-Key": "k-1"},
    )
    assert response.status_code == 402
    body = response.json()
    assert body["error"] == "BUDGET_EXCEEDED"
    assert body["remaining_budget_usd"] == 0.0005 and body["monthly_budget_usd"] == 0.0005
    assert (
        body["cost_estimate"]["low_usd"] > 0.0005 and "left of the team's monthly budget" in body["message"]
    )
    assert "Location" not in response.headers


@pytest.mark.parametrize("value", ["0", "-1", '"lots"', "1e400"])
def test_max_cost_usd_must_be_a_positive_number(client: TestClient, value: str) -> None:
    body = f'{{"research_goal": "{GOAL}", "scope_parameters": {{"max_cost_usd": {value}}}}}'
    response = client.post("/api/agent/execute", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["field"] == "scope_parameters.max_cost_usd"
