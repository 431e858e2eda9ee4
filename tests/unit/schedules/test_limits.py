"""A team's schedules are limited: at most `max_per_team` of them (simultaneous creations included) and
none firing more often than `min_interval` (rate() and cron() alike). EventBridge Scheduler on moto."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import boto3
import pytest
from moto import mock_aws

from functions.common.errors import InvalidInput
from functions.schedules.adapters import EventBridgeScheduleStore
from functions.schedules.service import (
    ScheduleLimitReached,
    ScheduleRequest,
    ScheduleService,
    parse_expression,
)
from functions.schedules.settings import SchedulerSettings

TEAM_A, TEAM_B = "team-aaaaaaaaaaaa", "team-bbbbbbbbbbbb"
GOAL = "How do transformer architectures handle long documents?"
CAP = 3


@pytest.fixture
def service() -> Iterator[ScheduleService]:
    with mock_aws():
        store = EventBridgeScheduleStore(
            client=boto3.client("scheduler", region_name="us-east-1"),
            group_name="default",
            target_arn="arn:aws:states:us-east-1:123456789012:stateMachine:research",
            role_arn="arn:aws:iam::123456789012:role/scheduler",
        )
        yield ScheduleService(store=store, max_per_team=CAP, min_interval=timedelta(minutes=15))


def _request(expression: str = "rate(1 day)") -> ScheduleRequest:
    return ScheduleRequest.model_validate({"schedule_expression": expression, "research_goal": GOAL})


def test_the_documented_defaults() -> None:
    settings = SchedulerSettings()
    assert settings.schedules_max_per_team == 20 and settings.schedules_min_interval_minutes == 15


def test_a_team_keeps_at_most_its_cap_of_schedules(service: ScheduleService) -> None:
    for _ in range(CAP):
        service.create(TEAM_A, _request())
    with pytest.raises(ScheduleLimitReached) as refused:
        service.create(TEAM_A, _request())
    assert refused.value.code == "SCHEDULE_LIMIT_REACHED"
    assert f"already has {CAP} schedules" in refused.value.message
    assert len(service.list(TEAM_A)) == CAP
    service.create(TEAM_B, _request())  # another team's cap is its own
    service.delete(TEAM_A, service.list(TEAM_A)[0].schedule_id)
    service.create(TEAM_A, _request())  # room again once one is deleted


def test_simultaneous_creations_do_not_pass_the_cap(service: ScheduleService) -> None:
    attempts = 10
    barrier = threading.Barrier(attempts)

    def create(_: int) -> bool:
        barrier.wait()
        try:
            service.create(TEAM_A, _request())
        except ScheduleLimitReached:
            return False
        return True

    with ThreadPoolExecutor(max_workers=attempts) as pool:
        created = sum(pool.map(create, range(attempts)))
    remaining = len(service.list(TEAM_A))
    assert 1 <= created <= CAP and remaining == created


@pytest.mark.parametrize(
    "expression",
    [
        "rate(1 minute)",
        "rate(14 minutes)",
        "cron(*/5 * * * ? *)",
        "cron(0,10 8 * * ? *)",
        "cron(0 * * * ? *)",
    ],
)
def test_a_schedule_firing_more_often_than_the_minimum_interval_is_refused(
    service: ScheduleService, expression: str
) -> None:
    if expression == "cron(0 * * * ? *)":  # hourly: allowed at 15 minutes, refused at 2 hours
        service.min_interval = timedelta(hours=2)
    with pytest.raises(InvalidInput) as refused:
        service.create(TEAM_A, _request(expression))
    assert refused.value.field == "schedule_expression"
    assert "a schedule may fire at most every" in refused.value.message
    assert service.list(TEAM_A) == []


@pytest.mark.parametrize(
    "expression",
    [
        "rate(15 minutes)",
        "rate(1 hour)",
        "cron(0,30 8 * * ? *)",
        "cron(0 7 ? * MON *)",
        "at(2030-01-31T09:00:00)",
    ],
)
def test_schedules_at_or_above_the_minimum_interval_are_accepted(
    service: ScheduleService, expression: str
) -> None:
    assert service.create(TEAM_A, _request(expression)).schedule_expression == expression


def test_the_shortest_interval_of_a_cron_wraps_around_midnight() -> None:
    assert parse_expression("cron(50 23,0 * * ? *)").shortest_interval() == timedelta(minutes=60)
    assert parse_expression("cron(55 23 * * ? *)").shortest_interval() == timedelta(days=1)
    assert parse_expression("at(2030-01-31T09:00:00)").shortest_interval() is None
