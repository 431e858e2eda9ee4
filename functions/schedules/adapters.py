"""EventBridge Scheduler behind the `ScheduleStore` port (real AWS, LocalStack, or moto on the local runtime).

A schedule's Scheduler name carries its team: `s-<team tag>-<schedule_id>`, the tag being the first 12 hex
digits of the SHA-256 of the team id (Scheduler names are at most 64 characters of `[0-9A-Za-z._-]`; a
team id may not fit beside a UUID). Reading or deleting builds the name from the caller's team, so another
team's schedule id names nothing; a team's list asks Scheduler for its prefix only. The target's Input
holds the team id as well, and a schedule whose Input names another team is never returned.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from functions.common.tenancy import DEFAULT_TEAM
from functions.schedules.service import StoredSchedule

_TEAM_TAG_CHARS = 12


def team_prefix(team_id: str) -> str:
    return f"s-{hashlib.sha256(team_id.encode('utf-8')).hexdigest()[:_TEAM_TAG_CHARS]}-"


def schedule_name(team_id: str, schedule_id: str) -> str:
    """The Scheduler name of the team's schedule (at most 2 + 12 + 1 + 36 = 51 characters)."""
    return team_prefix(team_id) + schedule_id


@dataclass
class EventBridgeScheduleStore:
    """Schedules in one Scheduler group; goal, scope, team and callback live in the target's Input, so
    nothing else is kept."""

    client: Any  # boto3 "scheduler" client (real AWS, LocalStack or moto)
    group_name: str
    target_arn: str  # the research state machine
    role_arn: str  # may only states:StartExecution on that machine
    flexible_window_minutes: int = 0  # spread fires over this many minutes after their time

    def create(self, schedule: StoredSchedule) -> None:
        extra = {"Description": schedule.description} if schedule.description else {}
        self.client.create_schedule(
            Name=schedule_name(schedule.team_id, schedule.schedule_id),
            GroupName=self.group_name,
            ScheduleExpression=schedule.expression,
            ScheduleExpressionTimezone=schedule.timezone,
            **extra,
            State="ENABLED" if schedule.enabled else "DISABLED",
            FlexibleTimeWindow=(
                {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": self.flexible_window_minutes}
                if self.flexible_window_minutes
                else {"Mode": "OFF"}
            ),
            Target={
                "Arn": self.target_arn,
                "RoleArn": self.role_arn,
                "Input": json.dumps(schedule.job_input),
                "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
            },
        )

    def get(self, team_id: str, schedule_id: str) -> StoredSchedule | None:
        stored = self._get(schedule_name(team_id, schedule_id))
        return stored if stored is not None and stored.team_id == team_id else None

    def list_all(self) -> list[StoredSchedule]:
        return self._list(None)

    def delete(self, team_id: str, schedule_id: str) -> bool:
        if self.get(team_id, schedule_id) is None:
            return False
        try:
            self.client.delete_schedule(Name=schedule_name(team_id, schedule_id), GroupName=self.group_name)
        except self.client.exceptions.ResourceNotFoundException:
            return False
        return True

    def _get(self, name: str) -> StoredSchedule | None:
        try:
            found = self.client.get_schedule(Name=name, GroupName=self.group_name)
        except self.client.exceptions.ResourceNotFoundException:
            return None
        return self._stored(found)

    def _list(self, prefix: str | None) -> list[StoredSchedule]:
        schedules: list[StoredSchedule] = []
        options: dict[str, Any] = {"GroupName": self.group_name}
        if prefix is not None:
            options["NamePrefix"] = prefix
        for page in self.client.get_paginator("list_schedules").paginate(**options):
            for summary in page.get("Schedules", []):
                if prefix is not None and not str(summary["Name"]).startswith(prefix):
                    continue
                stored = self._get(summary["Name"])
                if stored is not None:
                    schedules.append(stored)
        return schedules

    def _stored(self, found: dict[str, Any]) -> StoredSchedule:
        created_at = found.get("CreationDate") or datetime.now(UTC)
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=UTC)
        job_input = json.loads(found.get("Target", {}).get("Input") or "{}")
        name = str(found["Name"])
        return StoredSchedule(
            # schedules made before teams: the default team's, under their bare name
            team_id=str(job_input.get("team_id") or DEFAULT_TEAM),
            schedule_id=str(job_input.get("schedule_id") or name),
            expression=found["ScheduleExpression"],
            timezone=found.get("ScheduleExpressionTimezone") or "UTC",
            job_input=job_input,
            description=found.get("Description") or None,
            enabled=found.get("State", "ENABLED") == "ENABLED",
            created_at=created_at,
        )

    # last: inside the class, `list` names this method from here on
    def list(self, team_id: str) -> list[StoredSchedule]:
        return [stored for stored in self._list(team_prefix(team_id)) if stored.team_id == team_id]
