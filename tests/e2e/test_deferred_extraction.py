"""An extraction whose turn at a provider is far off waits in the state machine, not in its Lambda.

On the embedded runtime, with the real workflow and metering: another caller holds the arXiv PDF host's
turn, so the job's extractions cannot fetch. Each waits `RESEARCH_EXTRACT_TURN_WAIT_SECONDS` in its
Lambda, raises StepDeferred and is retried by the Extract Map's Retry (docs/extract.md). Once the turn
is free, the job completes with every source extracted, billed for each extraction once plus its
deferred attempts apart (`deferred` in the job's usage)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from functions.search.turns import process_turns
from tests.e2e.scholarly_topic import GOAL, environment, serve, topic_papers
from tests.support.restart_scenario import until
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
    reset_workflow_settings_cache()


def test_an_extraction_waiting_for_a_far_off_turn_is_deferred_then_completes(client: TestClient) -> None:
    with ScholarlyWeb() as web:
        serve(web, topic_papers(4, off_topic=0))
        reset_workflow_settings_cache()
        env = environment(
            web,
            USAGE_METERING="true",
            SEARCH_ARXIV_PDF_MIN_INTERVAL_SECONDS="0.2",  # the host takes turns (0: no turns at all)
            RESEARCH_EXTRACT_TURN_WAIT_SECONDS="0.3",
        )
        with EmbeddedAws(extra_environment=env):
            turns = process_turns()
            held = turns.acquire("arxiv_pdf", team="team-other", job="another-job")
            try:
                started = client.post("/api/agent/execute", json={"research_goal": GOAL})
                assert started.status_code == 202, started.text
                job_id = started.json()["job_id"]

                def deferred() -> dict[str, Any] | None:
                    usage = client.get(f"/api/usage/jobs/{job_id}")
                    body: dict[str, Any] = usage.json() if usage.status_code == 200 else {}
                    return body if body.get("deferred", {}).get("extract") else None

                until(deferred, "no extraction was deferred while the turn was held")
            finally:
                turns.release(held)

            def billed() -> dict[str, Any] | None:
                status = client.get(f"/api/agent/status/{job_id}").json()
                if not JobStatus(status["status"]).terminal:
                    return None
                usage: dict[str, Any] = client.get(f"/api/usage/jobs/{job_id}").json()
                return usage if usage["final"] else None

            usage = until(billed, "the job never finished")
            status = client.get(f"/api/agent/status/{job_id}").json()
            results = client.get(f"/api/agent/results/{job_id}").json()

    assert status["status"] == "COMPLETED", status
    summary = results["execution_summary"]
    assert summary["extractions_successful"] >= 1 and summary["extractions_failed"] == 0, summary
    assert usage["deferred"]["extract"] >= 1
    # each Map iteration billed as an extraction once; its deferred attempts apart
    assert usage["steps"]["extract"] == summary["extractions_successful"]
