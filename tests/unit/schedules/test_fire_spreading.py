"""Schedules at the same minute (the top of the hour) are spread over Scheduler's flexible window, so
that their jobs do not reach the upstream providers' queues at once."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
from moto import mock_aws

from functions.schedules.adapters import EventBridgeScheduleStore, schedule_name
from functions.schedules.service import StoredSchedule
from functions.schedules.settings import SchedulerSettings


def _stored(schedule_id: str) -> StoredSchedule:
    return StoredSchedule(
        team_id="team-a",
        schedule_id=schedule_id,
        expression="cron(0 * * * ? *)",
        timezone="UTC",
        job_input={"research_goal": "How do transformers handle long documents?", "team_id": "team-a"},
        description=None,
        enabled=True,
        created_at=datetime(2026, 11, 25, tzinfo=UTC),
    )


def test_fires_are_spread_over_the_flexible_window_unless_it_is_off() -> None:
    assert SchedulerSettings().schedule_flexible_window_minutes == 15
    with mock_aws():
        client = boto3.client("scheduler", region_name="us-east-1")
        for minutes, schedule_id in ((15, "spread"), (0, "exact")):
            EventBridgeScheduleStore(
                client=client,
                group_name="default",
                target_arn="arn:aws:states:us-east-1:123456789012:stateMachine:research",
                role_arn="arn:aws:iam::123456789012:role/scheduler",
                flexible_window_minutes=minutes,
            ).create(_stored(schedule_id))
        spread = client.get_schedule(Name=schedule_name("team-a", "spread"), GroupName="default")
        exact = client.get_schedule(Name=schedule_name("team-a", "exact"), GroupName="default")
    assert spread["FlexibleTimeWindow"] == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15}
    assert exact["FlexibleTimeWindow"] == {"Mode": "OFF"}
