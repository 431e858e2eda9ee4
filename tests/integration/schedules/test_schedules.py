"""Scheduled research on the embedded runtime: the /api/schedules routes over moto's EventBridge
Scheduler, the local scheduler firing a due schedule, and a fired job visible through the status API."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from functions.common.tenancy import DEFAULT_TEAM
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.scheduler import LocalScheduler
from functions.orchestrate.app import app
from functions.schedules.adapters import schedule_name
from functions.schedules.service import job_input
from functions.schedules.wiring import schedule_store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

GOAL = "How do transformer architectures handle long documents?"


@pytest.fixture
def client() -> Iterator[TestClient]:
    with EmbeddedAws(), TestClient(app) as test_client:
        yield test_client


def _create(client: TestClient, **overrides: Any) -> dict[str, Any]:
    body = {
        "schedule_expression": "cron(0 7 ? * MON *)",
        "research_goal": GOAL,
        "scope_parameters": {"discovery_depth": "rapid"},
        "timezone": "Europe/Berlin",
        "description": "weekly transformer digest",
        **overrides,
    }
    response = client.post("/api/schedules", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def test_schedules_are_created_listed_read_and_deleted(client: TestClient) -> None:
    created = _create(client)
    assert created["state"] == "ENABLED" and created["timezone"] == "Europe/Berlin"
    next_run = datetime.fromisoformat(created["next_run_at"])
    assert next_run > datetime.now(UTC) and next_run.astimezone(UTC).hour in (5, 6)  # 07:00 Berlin
    schedule_id = created["schedule_id"]

    listed = client.get("/api/schedules").json()
    assert listed["count"] == 1 and listed["schedules"][0]["schedule_id"] == schedule_id
    assert client.get(f"/api/schedules/{schedule_id}").json() == created

    # the Scheduler target is the research state machine, with the job input the first step expects
    scheduler = boto3.client("scheduler", region_name="us-east-1")
    target = scheduler.get_schedule(Name=schedule_name(DEFAULT_TEAM, schedule_id), GroupName="default")[
        "Target"
    ]
    assert target["Arn"].endswith(":stateMachine:research")
    assert json.loads(target["Input"]) == job_input(
        DEFAULT_TEAM, schedule_id, GOAL, {"discovery_depth": "rapid"}
    )

    assert client.delete(f"/api/schedules/{schedule_id}").status_code == 204
    missing = client.get(f"/api/schedules/{schedule_id}")
    assert missing.status_code == 404 and "not found" in missing.json()["message"]
    assert missing.json()["error"] == "SCHEDULE_NOT_FOUND"
    assert client.delete(f"/api/schedules/{schedule_id}").status_code == 404


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"schedule_expression": "every monday"}, "schedule_expression"),
        ({"schedule_expression": "cron(0 7 * * MON *)"}, "schedule_expression"),
        ({"schedule_expression": "at(2001-01-01T00:00:00)"}, "schedule_expression"),
        ({"research_goal": "short"}, "research_goal"),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
    ],
)
def test_bad_schedules_are_refused_naming_the_field(
    client: TestClient, overrides: dict[str, Any], field: str
) -> None:
    body = {"schedule_expression": "rate(1 day)", "research_goal": GOAL, **overrides}
    response = client.post("/api/schedules", json=body)
    assert 400 <= response.status_code < 500
    assert response.json()["field"].startswith(field)
    assert client.get("/api/schedules").json()["count"] == 0


def _wait_terminal(client: TestClient, job_id: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status: dict[str, Any] = client.get(f"/api/agent/status/{job_id}", headers=headers).json()
        if status.get("status") in ("COMPLETED", "PARTIAL", "FAILED", "REFUSED"):
            return status
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish")


def test_the_local_scheduler_starts_a_due_schedule_as_a_normal_job(client: TestClient) -> None:
    created = _create(client, schedule_expression="rate(15 minutes)", timezone="UTC")
    now = [datetime.now(UTC)]
    scheduler = LocalScheduler(store=schedule_store(), clock=lambda: now[0])

    assert scheduler.tick() == []  # first look: nothing is due yet
    now[0] += timedelta(minutes=7)
    assert scheduler.tick() == []
    now[0] += timedelta(minutes=9)  # past the first period since creation
    (job_id,) = scheduler.tick()
    assert scheduler.tick() == []  # a fire starts one job only

    status = client.get(f"/api/agent/status/{job_id}")
    assert status.status_code == 200, status.text
    assert status.json()["job_id"] == job_id
    final = _wait_terminal(client, job_id)  # no scholarly web here: the job ends, but it ends visibly
    assert final["job_id"] == job_id and final["source"] == "schedule"
    assert created["schedule_id"]


def test_a_scheduler_fire_on_aws_creates_its_own_job_record(client: TestClient) -> None:
    """What EventBridge Scheduler does on AWS: start the machine directly with the schedule's input."""
    created = _create(client, schedule_expression="rate(1 hour)", timezone="UTC")
    target = boto3.client("scheduler", region_name="us-east-1").get_schedule(
        Name=schedule_name(DEFAULT_TEAM, created["schedule_id"]), GroupName="default"
    )["Target"]
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    execution_name = "scheduler-fire-0001"
    sfn.start_execution(stateMachineArn=target["Arn"], name=execution_name, input=target["Input"])

    final = _wait_terminal(client, execution_name)  # the job id is the execution name
    assert final["job_id"] == execution_name
    assert final["source"] == "schedule"


class _Looks:
    """The scheduler thread's clock: the time the test sets, and how many looks (ticks) have read it."""

    def __init__(self, now: datetime) -> None:
        self.now, self.count = now, 0
        self._changed = threading.Condition()

    def __call__(self) -> datetime:
        with self._changed:
            self.count += 1
            self._changed.notify_all()
            return self.now

    def wait_for(self, count: int, timeout: float = 60) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.count >= count, timeout), f"{self.count} looks"


def test_the_scheduler_thread_fires_a_one_time_schedule(client: TestClient) -> None:
    # an hour ahead on the wall clock, and the thread's clock moved past it once the schedule exists
    fire_at = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    _create(client, schedule_expression=f"at({fire_at.replace(tzinfo=None).isoformat()})", timezone="UTC")
    looks = _Looks(datetime.now(UTC))
    scheduler = LocalScheduler(store=schedule_store(), poll_seconds=0.05, clock=looks).start()
    try:
        looks.wait_for(3)  # the first look has ended: before the fire time, it started nothing
        assert scheduler.started_jobs == []
        looks.now = fire_at + timedelta(seconds=1)
        deadline = time.monotonic() + 60
        while not scheduler.started_jobs and time.monotonic() < deadline:
            time.sleep(0.05)
        looks.wait_for(looks.count + 3)  # later looks must not fire it again
    finally:
        scheduler.stop()
    (job_id,) = scheduler.started_jobs
    assert _wait_terminal(client, job_id)["source"] == "schedule"


TEAM_A = {"x-team-id": "team-aaaaaaaaaaaa"}  # what the local gateway sets after checking a token
TEAM_B = {"x-team-id": "team-bbbbbbbbbbbb"}


def test_another_teams_schedule_answers_404_like_an_unknown_one(client: TestClient) -> None:
    body = {"schedule_expression": "rate(1 day)", "research_goal": GOAL}
    mine = client.post("/api/schedules", json=body, headers=TEAM_A)
    assert mine.status_code == 201, mine.text
    schedule_id = mine.json()["schedule_id"]
    theirs = client.post("/api/schedules", json=body, headers=TEAM_B).json()["schedule_id"]

    unknown_id = "0b9f4f9e-4c8b-4a39-9f67-2f0f1f7f3e11"
    for method in ("GET", "DELETE"):
        other = client.request(method, f"/api/schedules/{schedule_id}", headers=TEAM_B)
        unknown = client.request(method, f"/api/schedules/{unknown_id}", headers=TEAM_B)
        assert other.status_code == unknown.status_code == 404
        assert other.json()["error"] == unknown.json()["error"] == "SCHEDULE_NOT_FOUND"
        assert other.json()["message"].replace(schedule_id, "ID") == unknown.json()["message"].replace(
            unknown_id, "ID"
        )

    listed_b = client.get("/api/schedules", headers=TEAM_B).json()
    assert [s["schedule_id"] for s in listed_b["schedules"]] == [theirs] and listed_b["count"] == 1
    listed_a = client.get("/api/schedules", headers=TEAM_A).json()
    assert [s["schedule_id"] for s in listed_a["schedules"]] == [schedule_id]
    assert client.get("/api/schedules").json()["count"] == 0  # the default team has none
    assert client.get(f"/api/schedules/{schedule_id}", headers=TEAM_A).status_code == 200  # B's delete: no-op
    assert client.delete(f"/api/schedules/{schedule_id}", headers=TEAM_A).status_code == 204


def test_a_schedule_keeps_its_callback_and_refuses_a_bad_one(client: TestClient) -> None:
    created = _create(client, callback_url="https://hooks.example.com/research")
    assert created["callback_url"] == "https://hooks.example.com/research" and created["last_run"] is None
    refused = client.post(
        "/api/schedules",
        json={
            "schedule_expression": "rate(1 day)",
            "research_goal": GOAL,
            "callback_url": "http://x.example/",
        },
    )
    assert refused.status_code == 400 and refused.json()["field"] == "callback_url"


def test_the_local_scheduler_starts_each_teams_jobs_for_that_team(client: TestClient) -> None:
    body = {"schedule_expression": "rate(15 minutes)", "research_goal": GOAL, "timezone": "UTC"}
    schedule_id = client.post("/api/schedules", json=body, headers=TEAM_A).json()["schedule_id"]
    now = [datetime.now(UTC)]
    scheduler = LocalScheduler(store=schedule_store(), clock=lambda: now[0])
    scheduler.tick()
    now[0] += timedelta(minutes=16)
    (job_id,) = scheduler.tick()
    assert client.get(f"/api/agent/status/{job_id}", headers=TEAM_B).status_code == 404
    assert client.get(f"/api/agent/status/{job_id}").status_code == 404  # not the default team's either
    final = _wait_terminal(client, job_id, TEAM_A)
    assert final["source"] == "schedule" and schedule_id


@pytest.fixture
def capped_client() -> Iterator[TestClient]:
    with EmbeddedAws(extra_environment={"SCHEDULES_MAX_PER_TEAM": "2"}), TestClient(app) as test_client:
        yield test_client


def test_the_schedule_cap_and_minimum_interval_answer_4xx_in_the_api_format(
    capped_client: TestClient,
) -> None:
    body = {"schedule_expression": "rate(1 day)", "research_goal": GOAL}
    for _ in range(2):
        assert capped_client.post("/api/schedules", json=body, headers=TEAM_A).status_code == 201
    full = capped_client.post("/api/schedules", json=body, headers=TEAM_A)
    assert full.status_code == 409, full.text
    assert full.json()["error"] == "SCHEDULE_LIMIT_REACHED" and "delete one first" in full.json()["message"]
    assert capped_client.post("/api/schedules", json=body, headers=TEAM_B).status_code == 201

    often = capped_client.post(
        "/api/schedules", json={**body, "schedule_expression": "rate(1 minute)"}, headers=TEAM_B
    )
    assert often.status_code == 400, often.text
    assert often.json()["error"] == "INVALID_INPUT" and often.json()["field"] == "schedule_expression"
    assert "at most every 15 minutes" in often.json()["message"]


def _poor_team() -> dict[str, str]:
    from functions.teams.wiring import team_service

    team, _, _ = team_service().create_team("Poor scheduled team", "basic")
    team_service().set_monthly_budget(team.team_id, 0.0001)  # less than any job's quote
    return {"x-team-id": team.team_id}


def test_a_fire_the_budget_cannot_afford_is_recorded_as_a_failed_job(client: TestClient) -> None:
    poor = _poor_team()
    body = {"schedule_expression": "rate(15 minutes)", "research_goal": GOAL, "timezone": "UTC"}
    assert client.post("/api/schedules", json=body, headers=poor).status_code == 201
    now = [datetime.now(UTC)]
    scheduler = LocalScheduler(store=schedule_store(), clock=lambda: now[0])
    scheduler.tick()
    now[0] += timedelta(minutes=16)
    (job_id,) = scheduler.tick()  # the fire is not lost in a log: it is a job that says why
    status = client.get(f"/api/agent/status/{job_id}", headers=poor).json()
    assert status["status"] == "FAILED" and status["source"] == "schedule"
    assert status["failure_reason"].startswith("BUDGET_EXCEEDED: the job's estimated cost")


def test_a_scheduler_fire_on_aws_the_budget_cannot_afford_fails_at_its_plan_step(client: TestClient) -> None:
    poor = _poor_team()
    body = {"schedule_expression": "rate(1 hour)", "research_goal": GOAL, "timezone": "UTC"}
    created = client.post("/api/schedules", json=body, headers=poor).json()
    target = boto3.client("scheduler", region_name="us-east-1").get_schedule(
        Name=schedule_name(poor["x-team-id"], created["schedule_id"]), GroupName="default"
    )["Target"]
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    sfn.start_execution(stateMachineArn=target["Arn"], name="scheduler-fire-poor", input=target["Input"])

    final = _wait_terminal(client, "scheduler-fire-poor", poor)
    assert final["status"] == "FAILED" and final["source"] == "schedule"
    assert "BudgetExceeded" in final["failure_reason"] and "monthly budget" in final["failure_reason"]
