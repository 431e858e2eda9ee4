"""Schedules belong to a team: the EventBridge Scheduler store and the run memory on moto, the service on
top. Another team's schedule id is not found, exactly like an unknown one; a list holds the team's own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from functions.common.errors import InvalidInput
from functions.schedules.adapters import EventBridgeScheduleStore, schedule_name, team_prefix
from functions.schedules.runs import DynamoDbScheduleRunStore, ScheduleRun
from functions.schedules.service import ScheduleNotFound, ScheduleRequest, ScheduleService
from tests.support.tables import create_table

TEAM_A, TEAM_B = "team-aaaaaaaaaaaa", "team-bbbbbbbbbbbb"
GOAL = "How do transformer architectures handle long documents?"


@pytest.fixture
def service() -> Iterator[ScheduleService]:
    with mock_aws():
        client = boto3.client("scheduler", region_name="us-east-1")
        store = EventBridgeScheduleStore(
            client=client,
            group_name="default",
            target_arn="arn:aws:states:us-east-1:123456789012:stateMachine:research",
            role_arn="arn:aws:iam::123456789012:role/scheduler",
        )
        table = create_table("jobs_table", "jobs")
        yield ScheduleService(store=store, runs=DynamoDbScheduleRunStore(table))


def _request(**overrides: object) -> ScheduleRequest:
    return ScheduleRequest.model_validate(
        {"schedule_expression": "rate(1 day)", "research_goal": GOAL, **overrides}
    )


def test_another_teams_schedule_is_not_found_like_an_unknown_one(service: ScheduleService) -> None:
    mine = service.create(TEAM_A, _request(description="team A's weekly digest"))
    service.create(TEAM_B, _request())

    assert service.get(TEAM_A, mine.schedule_id) == mine
    with pytest.raises(ScheduleNotFound) as other:
        service.get(TEAM_B, mine.schedule_id)
    with pytest.raises(ScheduleNotFound) as unknown:
        service.get(TEAM_B, "0b9f4f9e-4c8b-4a39-9f67-2f0f1f7f3e11")
    assert other.value.message.replace(mine.schedule_id, "ID") == unknown.value.message.replace(
        "0b9f4f9e-4c8b-4a39-9f67-2f0f1f7f3e11", "ID"
    )
    with pytest.raises(ScheduleNotFound):
        service.delete(TEAM_B, mine.schedule_id)

    assert [s.schedule_id for s in service.list(TEAM_A)] == [mine.schedule_id]
    assert mine.schedule_id not in [s.schedule_id for s in service.list(TEAM_B)]
    assert len(service.list(TEAM_B)) == 1
    assert {s.team_id for s in service.store.list_all()} == {TEAM_A, TEAM_B}

    service.delete(TEAM_A, mine.schedule_id)  # still there: B's delete did nothing
    assert service.list(TEAM_A) == []


def test_the_scheduler_name_and_input_carry_the_team(service: ScheduleService) -> None:
    created = service.create(TEAM_A, _request(callback_url="https://hooks.example.com/research"))
    name = schedule_name(TEAM_A, created.schedule_id)
    assert name.startswith(team_prefix(TEAM_A)) and len(name) <= 64
    assert team_prefix(TEAM_A) != team_prefix(TEAM_B)
    target = boto3.client("scheduler", region_name="us-east-1").get_schedule(Name=name, GroupName="default")[
        "Target"
    ]
    assert json.loads(target["Input"]) == {
        "research_goal": GOAL,
        "scope_parameters": {},
        "source": "schedule",
        "schedule_id": created.schedule_id,
        "team_id": TEAM_A,
        "callback_url": "https://hooks.example.com/research",
    }
    assert created.callback_url == "https://hooks.example.com/research"


def test_a_schedule_shows_its_last_run_and_forgets_it_when_deleted(service: ScheduleService) -> None:
    created = service.create(TEAM_A, _request())
    assert created.last_run is None
    assert service.runs is not None
    service.runs.remember(
        TEAM_A,
        created.schedule_id,
        ScheduleRun(
            "job-1", "COMPLETED", f"teams/{TEAM_A}/jobs/job-1/results.json", "2030-01-01T00:00:00.000000Z"
        ),
    )
    shown = service.get(TEAM_A, created.schedule_id).last_run
    assert shown is not None and (shown.job_id, shown.status) == ("job-1", "COMPLETED")
    service.delete(TEAM_A, created.schedule_id)
    assert service.runs.last_run(TEAM_A, created.schedule_id) is None


def test_run_memory_only_moves_forward(service: ScheduleService) -> None:
    runs = service.runs
    assert runs is not None
    later = ScheduleRun("job-2", "COMPLETED", "k2", "2030-01-02T00:00:00.000000Z")
    earlier = ScheduleRun("job-1", "COMPLETED", "k1", "2030-01-01T00:00:00.000000Z")
    assert runs.remember(TEAM_A, "s", later)
    assert not runs.remember(TEAM_A, "s", earlier)  # a late retry of an older run
    remembered = runs.last_run(TEAM_A, "s")
    assert remembered is not None and remembered.job_id == "job-2"
    assert runs.last_run(TEAM_B, "s") is None


@pytest.mark.parametrize(
    "callback_url", ["http://hooks.example.com/x", "https://10.1.2.3/x", "https://u:p@hooks.example.com/"]
)
def test_a_schedule_with_a_bad_callback_is_refused(service: ScheduleService, callback_url: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        service.create(TEAM_A, _request(callback_url=callback_url))
    assert caught.value.field == "callback_url"
    assert service.list(TEAM_A) == []


def test_malformed_ids_are_not_found(service: ScheduleService) -> None:
    for schedule_id in ("../x", "x" * 200, ""):
        with pytest.raises(ScheduleNotFound):
            service.get(TEAM_A, schedule_id)
        with pytest.raises(ScheduleNotFound):
            service.delete(TEAM_A, schedule_id)


def test_schedules_made_before_teams_belong_to_the_default_team(service: ScheduleService) -> None:
    store = service.store
    assert isinstance(store, EventBridgeScheduleStore)
    store.client.create_schedule(
        Name="0b9f4f9e-4c8b-4a39-9f67-2f0f1f7f3e11",
        GroupName="default",
        ScheduleExpression="rate(1 day)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={
            "Arn": store.target_arn,
            "RoleArn": store.role_arn,
            "Input": json.dumps({"research_goal": GOAL, "scope_parameters": {}, "source": "schedule"}),
        },
    )
    (legacy,) = store.list_all()
    assert legacy.team_id == "team-default" and legacy.created_at <= datetime.now(UTC)
