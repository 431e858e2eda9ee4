from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.common.storage import InMemoryBlobStore
from functions.orchestrate.app import app
from functions.orchestrate.checkpoints.service import CheckpointService
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.jobs import JobService
from functions.orchestrate.routes import get_checkpoint_service, get_job_service
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter

GOAL = "What are recent advances in transformer architectures?"


@pytest.fixture
def client() -> Iterator[TestClient]:
    service = JobService(
        jobs=InMemoryJobStore(),
        starter=RecordingStarter(),
        artifacts=InMemoryBlobStore(),
        settings=WorkflowSettings(),
    )
    app.dependency_overrides[get_job_service] = lambda: service
    checkpoints = CheckpointService(
        jobs=service.jobs, find_job=service.job, data=InMemoryBlobStore(), tokens=None
    )
    app.dependency_overrides[get_checkpoint_service] = lambda: checkpoints
    with TestClient(app) as test_client:
        yield test_client
    app.dependency_overrides.clear()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"research_goal": "too short"}, "research_goal"),
        ({"research_goal": "x" * 501}, "research_goal"),
        ({}, "research_goal"),
        (
            {"research_goal": GOAL, "scope_parameters": {"discovery_depth": "deep"}},
            "scope_parameters.discovery_depth",
        ),
        (
            {
                "research_goal": GOAL,
                "scope_parameters": {"temporal_boundary": {"publication_window_years": 11}},
            },
            "scope_parameters.temporal_boundary.publication_window_years",
        ),
        (
            {"research_goal": GOAL, "scope_parameters": {"quality_threshold": {"impact_level": "viral"}}},
            "scope_parameters.quality_threshold.impact_level",
        ),
    ],
)
def test_invalid_requests_name_the_field(client: TestClient, body: dict[str, object], field: str) -> None:
    response = client.post("/api/agent/execute", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == "INVALID_INPUT" and response.json()["field"] == field


def test_an_unknown_citation_chasing_value_is_a_400_naming_the_allowed_values(client: TestClient) -> None:
    body = {"research_goal": GOAL, "scope_parameters": {"citation_chasing": "sideways"}}
    response = client.post("/api/agent/execute", json=body)
    assert response.status_code == 400
    error = response.json()
    assert error["error"] == "INVALID_INPUT" and error["field"] == "scope_parameters.citation_chasing"
    assert all(value in error["message"] for value in ("'off'", "'backward'", "'forward'", "'both'"))


def test_execute_status_results_contract(client: TestClient) -> None:
    response = client.post(
        "/api/agent/execute", json={"research_goal": GOAL}, headers={"Idempotency-Key": "k"}
    )
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"job_id", "status", "autonomous_analysis", "execution_plan"}
    assert body["execution_plan"]["estimated_sources"] == 15  # default depth: focused
    assert [p["phase"] for p in body["execution_plan"]["phases"]] == [
        "Autonomous Exploration",
        "Intelligent Validation",
        "Deep Extraction",
        "Meta-Analysis & Synthesis",
    ]
    replay = client.post("/api/agent/execute", json={"research_goal": GOAL}, headers={"Idempotency-Key": "k"})
    assert replay.json()["job_id"] == body["job_id"] and replay.headers["Idempotent-Replayed"] == "true"

    status = client.get(f"/api/agent/status/{body['job_id']}").json()
    assert status["status"] == "INITIALIZED"
    assert set(status["current_phase"]) == {
        "phase_name",
        "phase_description",
        "progress_percentage",
        "intelligent_actions_taken",
    }
    assert set(status["quality_metrics"]) >= {
        "sources_discovered",
        "sources_validated",
        "sources_accepted",
        "sources_rejected",
        "average_quality_score",
    }
    early = client.get(f"/api/agent/results/{body['job_id']}")
    assert early.status_code == 409 and early.json()["status"] == "INITIALIZED"
    missing = client.get("/api/agent/status/0b5c1f4e-0000-4000-8000-000000000000")
    assert missing.status_code == 404 and missing.json()["error"] == "JOB_NOT_FOUND"
    assert client.get("/api/agent/results/0b5c1f4e-0000-4000-8000-000000000000").status_code == 404
    not_waiting = client.post(f"/api/agent/checkpoint/{body['job_id']}/approve")
    assert not_waiting.status_code == 409


def test_the_team_lists_its_jobs_waiting_at_a_checkpoint(client: TestClient) -> None:
    started = [client.post("/api/agent/execute", json={"research_goal": GOAL}).json()["job_id"] for _ in "ab"]
    other = client.post(
        "/api/agent/execute", json={"research_goal": GOAL}, headers={"x-team-id": "team-other0001"}
    ).json()["job_id"]
    jobs = app.dependency_overrides[get_job_service]().jobs
    for team, job_id, since in (
        ("team-default", started[1], "2026-01-01T00:00:00+00:00"),
        ("team-default", started[0], "2026-01-02T00:00:00+00:00"),
        ("team-other0001", other, "2026-01-01T00:00:00+00:00"),
    ):
        waiting = {"awaiting_checkpoint": True, "checkpoint_phase": "plan", "checkpoint_started_at": since}
        jobs.update(team, job_id, set_fields=waiting)
    jobs.update("team-default", started[0], set_fields={"checkpoint_phase": "screening"})

    listed = client.get("/api/agent/checkpoints")

    assert listed.status_code == 200, listed.text
    assert listed.json() == {
        "checkpoints": [
            {
                "job_id": started[1],
                "phase": "plan",
                "waiting_since": "2026-01-01T00:00:00+00:00",
                "goal": GOAL,
            },
            {
                "job_id": started[0],
                "phase": "screening",
                "waiting_since": "2026-01-02T00:00:00+00:00",
                "goal": GOAL,
            },
        ]
    }
    assert [
        entry["job_id"]
        for entry in client.get("/api/agent/checkpoints", headers={"x-team-id": "team-other0001"}).json()[
            "checkpoints"
        ]
    ] == [other]
    schema = client.get("/openapi.json").json()
    documented = schema["paths"]["/api/agent/checkpoints"]["get"]["responses"]["200"]["content"]
    assert documented["application/json"]["schema"]["$ref"].endswith("/WaitingCheckpoints")
