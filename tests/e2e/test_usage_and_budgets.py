"""Metering and money end to end on the embedded runtime (docs/usage.md): the quote of a comprehensive
job against what the job then records, a job's hard budget (`max_cost_usd`), a team's monthly budget.

The real workflow runs: the HTTP API, the state machine, real search and extraction against the local
scholarly web, every step measured by its metering hook and recorded in the usage table."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import ARXIV_PDF_PREFIX, DOI_PREFIX, GOAL, environment, serve, topic_papers
from tests.support.llm_server import LlmServer, UsageLedger
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
    reset_workflow_settings_cache()


def _runtime(web: ScholarlyWeb, **extra: str) -> EmbeddedAws:
    reset_workflow_settings_cache()
    return EmbeddedAws(extra_environment=environment(web, USAGE_METERING="true", **extra))


def _execute(client: TestClient, scope: dict[str, Any], team: str | None = None) -> Any:
    headers = {"x-team-id": team} if team else {}
    return client.post(
        "/api/agent/execute", json={"research_goal": GOAL, "scope_parameters": scope}, headers=headers
    )


def _finish(client: TestClient, job_id: str, team: str | None = None, timeout: float = 150) -> dict[str, Any]:
    """The job's final status, once its last step's usage is recorded too (just after the status moved)."""
    headers = {"x-team-id": team} if team else {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get(f"/api/agent/status/{job_id}", headers=headers).json()
        if status["status"] == JobStatus.FAILED:  # its last step is MarkFailed, never Finalize
            raise AssertionError(f"job {job_id} FAILED: {status.get('failure_reason')}")
        if JobStatus(status["status"]).terminal:
            usage = client.get(f"/api/usage/jobs/{job_id}", headers=headers)
            if usage.status_code == 200 and usage.json()["final"]:
                return dict(status)
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {status['status']}")


def test_the_quote_of_a_comprehensive_job_is_within_2x_of_what_it_records(client: TestClient) -> None:
    papers = topic_papers(34, off_topic=4)  # more than the 30 sources a comprehensive job extracts
    with ScholarlyWeb() as web:
        serve(web, papers)
        # Upstreams answer as slowly as real ones (the step durations the quote assumes).
        for path in (web.ARXIV_PATH, web.SEMANTIC_SCHOLAR_PATH, web.OPENALEX_PATH, web.CROSSREF_PATH):
            web.set_latency(path, 0.8)
        web.set_latency(ARXIV_PDF_PREFIX, 2.0)
        web.set_latency(DOI_PREFIX, 2.0)
        with _runtime(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="6", RESEARCH_EXTRACT_BUDGET_SECONDS="15"):
            response = _execute(client, {"discovery_depth": "comprehensive"})
            assert response.status_code == 202, response.text
            job_id, quote = response.json()["job_id"], response.json()["cost_estimate"]
            final = _finish(client, job_id)
            job = client.get(f"/api/usage/jobs/{job_id}").json()
            month = client.get("/api/usage").json()
            rows = list(csv.DictReader(io.StringIO(client.get("/api/usage.csv").text)))

    assert final["status"] == "COMPLETED", final
    recorded = job["cost_usd"]
    low, high = quote["low_usd"], quote["high_usd"]
    middle = (low + high) / 2
    print(f"quote {low:.6f}-{high:.6f} USD, recorded {recorded:.6f} USD ({job['usage']})")
    assert max(middle, recorded) / min(middle, recorded) <= 2, (quote, job)
    assert low / 2 <= recorded <= 2 * high
    # What it recorded is what it used: every step, measured.
    assert job["steps"]["extract"] == quote["basis"]["extractions"] == 30
    # the job's queries share their Search iterations (one when every query had its turn at once)
    assert 1 <= job["steps"]["search"] <= quote["basis"]["steps_most"]["search"]
    assert job["usage"]["lambda_requests"] == sum(job["steps"].values())
    assert job["usage"]["sfn_transitions"] > job["usage"]["lambda_requests"]  # Map and Choice states too
    assert job["usage"]["s3_tier1_requests"] > 0 and job["usage"]["dynamodb_write_requests"] > 0
    assert job["committed_usd"] == pytest.approx(recorded)  # nothing left reserved
    # ...and the team's month shows it.
    (listed,) = [item for item in month["jobs"] if item["job_id"] == job_id]
    assert listed["cost_usd"] == pytest.approx(recorded) and listed["outcome"] == "COMPLETED"
    assert {"depth": "comprehensive", "outcome": "COMPLETED", "jobs": 1} in month["jobs_by_depth_and_outcome"]
    assert month["sources_fetched"] >= 30 and month["sources_parsed"] >= 30
    assert month["aws_cost_usd"]["total_usd"] == pytest.approx(recorded)
    routes = {item["route"]: item["requests"] for item in month["requests_by_route"]}
    assert routes["POST /api/agent/execute"] == 1 and routes["GET /api/agent/status/{job_id}"] >= 1
    (job_row,) = [row for row in rows if row["metric"] == "job_cost_usd"]
    assert job_row["dimension"] == job_id and float(job_row["cost_usd"]) == pytest.approx(recorded)


def test_a_small_job_budget_ends_partial_with_budget_reached(client: TestClient) -> None:
    with ScholarlyWeb() as web:
        serve(web, topic_papers(12, off_topic=2))
        with _runtime(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4", RESEARCH_EXTRACT_BUDGET_SECONDS="5"):
            quote = _execute(client, {"discovery_depth": "rapid"}).json()
            _finish(client, quote["job_id"])
            budget = round(quote["cost_estimate"]["basis"]["mean_usd"] * 0.6, 6)
            response = _execute(client, {"discovery_depth": "rapid", "max_cost_usd": budget})
            assert response.status_code == 202, response.text
            job_id = response.json()["job_id"]
            final = _finish(client, job_id)
            usage = client.get(f"/api/usage/jobs/{job_id}").json()
            results = client.get(f"/api/agent/results/{job_id}").json()

    assert final["status"] == "PARTIAL", final
    (reached,) = [d for d in final["autonomous_decisions"] if d["decision_type"] == "BUDGET_REACHED"]
    print(reached)
    assert "max_cost_usd" in reached["reasoning"]
    assert "not extracted" in reached["action_taken"] or "not run" in reached["action_taken"]
    print(
        f"budget {budget:.6f} USD, recorded {usage['cost_usd']:.6f}, largest step {usage['max_step_cost_usd']:.6f}"
    )
    assert usage["max_cost_usd"] == budget
    assert usage["cost_usd"] <= budget + usage["max_step_cost_usd"]
    assert usage["committed_usd"] == pytest.approx(usage["cost_usd"])
    skipped = [
        s for s in results["sources"] if s["failure_reason"] == "not extracted: the budget was reached"
    ]
    assert skipped and results["status"] == "PARTIAL"
    assert set(results["artifacts"]) >= {"report.md", "search_report.md"}  # it still reports what it did


def test_a_team_monthly_budget_refuses_what_cannot_fit_and_caps_running_jobs(client: TestClient) -> None:
    from functions.teams.wiring import team_service

    with ScholarlyWeb() as web:
        serve(web, topic_papers(12, off_topic=2))
        with _runtime(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4", RESEARCH_EXTRACT_BUDGET_SECONDS="5"):
            team, _, _ = team_service().create_team("Budgeted team", "basic")
            before = _execute(client, {"discovery_depth": "rapid"}, team.team_id).json()  # no budget yet
            _finish(client, before["job_id"], team.team_id)
            spent = client.get("/api/usage", headers={"x-team-id": team.team_id}).json()["aws_cost_usd"]
            # What is left this month fits one more rapid job's quote, not two.
            monthly = round(spent["total_usd"] + 1.2 * before["cost_estimate"]["low_usd"], 6)
            team_service().set_monthly_budget(team.team_id, monthly)

            first = _execute(client, {"discovery_depth": "rapid"}, team.team_id)
            assert first.status_code == 202, first.text
            final = _finish(client, first.json()["job_id"], team.team_id)
            refused = _execute(client, {"discovery_depth": "rapid"}, team.team_id)
            month = client.get("/api/usage", headers={"x-team-id": team.team_id}).json()
            job = client.get(
                f"/api/usage/jobs/{first.json()['job_id']}", headers={"x-team-id": team.team_id}
            ).json()

    assert final["status"] in ("COMPLETED", "PARTIAL")
    assert job["monthly_budget_usd"] == monthly
    spent_total = month["aws_cost_usd"]["total_usd"]
    print(
        f"monthly budget {monthly:.6f} USD, spent {spent_total:.6f}, largest step {job['max_step_cost_usd']:.6f}"
    )
    assert spent_total <= monthly + job["max_step_cost_usd"]
    assert refused.status_code == 402, refused.text
    body = refused.json()
    assert body["error"] == "BUDGET_EXCEEDED" and body["monthly_budget_usd"] == monthly
    assert body["remaining_budget_usd"] == pytest.approx(
        max(0.0, monthly - month["budget"]["committed_usd"]), abs=1e-6
    )
    assert body["remaining_budget_usd"] < body["cost_estimate"]["low_usd"]
    assert month["budget"]["monthly_budget_usd"] == monthly


@pytest.mark.llm
def test_the_synthesis_llm_tokens_are_metered_and_priced(client: TestClient, llm_server: LlmServer) -> None:
    with ScholarlyWeb() as web, UsageLedger(llm_server) as ledger:
        serve(web, topic_papers(10, off_topic=1))
        llm = ledger.env()
        # How many of the writer's and the judge's calls finish inside the step's model budget depends on
        # the machine's speed (a slow one gives way to the extractive writer): the test compares the
        # metered tokens with what the server reported for the calls it served, however many those are.
        with _runtime(
            web,
            **llm,
            RESEARCH_EXTRACT_MAX_CONCURRENCY="4",
            RESEARCH_SYNTHESIS_LLM_BUDGET_SECONDS="40",
        ):
            response = _execute(client, {"discovery_depth": "rapid"})
            quote = response.json()["cost_estimate"]
            job_id = response.json()["job_id"]
            _finish(client, job_id, timeout=200)
            job = client.get(f"/api/usage/jobs/{job_id}").json()
            month = client.get("/api/usage").json()

    assert quote["basis"]["llm_configured"] and quote["basis"]["llm_tokens_in"]["low"] > 0
    usage, served = job["usage"], ledger.served
    # The writer always asks the model (the job has evidence); what it was served is what is metered.
    assert served.requested >= 1
    print(
        f"LLM calls asked {served.requested}, served {served.calls}, tokens in/out {usage['llm_tokens_in']}/{usage['llm_tokens_out']}, "
        f"cost {job['cost']['llm_usd']}"
    )
    assert (usage["llm_tokens_in"], usage["llm_tokens_out"]) == (
        served.prompt_tokens,
        served.completion_tokens,
    )
    expected = usage["llm_tokens_in"] * 0.25e-6 + usage["llm_tokens_out"] * 1.25e-6  # the default prices
    assert job["cost"]["llm_usd"] == pytest.approx(expected, rel=1e-3)
    assert month["llm_tokens_in"] >= usage["llm_tokens_in"]
