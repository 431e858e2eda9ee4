"""EventBridge Scheduler behind the `ScheduleStore` port (real AWS, LocalStack, or moto on the local runtime)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from functions.schedules.service import StoredSchedule


@dataclass
class EventBridgeScheduleStore:
    """Schedules in one Scheduler group; goal and scope live in the target's Input, so nothing else is kept."""

    client: Any  # boto3 "scheduler" client (real AWS, LocalStack or moto)
    group_name: str
    target_arn: str  # the research state machine
    role_arn: str  # may only states:StartExecution on that machine

    def create(self, schedule: StoredSchedule) -> None:
        extra = {"Description": schedule.description} if schedule.description else {}
        self.client.create_schedule(
            Name=schedule.schedule_id,
            GroupName=self.group_name,
            ScheduleExpression=schedule.expression,
            ScheduleExpressionTimezone=schedule.timezone,
            **extra,
            State="ENABLED" if schedule.enabled else "DISABLED",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={
                "Arn": self.target_arn,
                "RoleArn": self.role_arn,
                "Input": json.dumps(schedule.job_input),
                "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
            },
        )

    def get(self, schedule_id: str) -> StoredSchedule | None:
        try:
            found = self.client.get_schedule(Name=schedule_id, GroupName=self.group_name)
        except self.client.exceptions.ResourceNotFoundException:
            return None
        return self._stored(found)

    def list(self) -> list[StoredSchedule]:
        schedules: list[StoredSchedule] = []
        for page in self.client.get_paginator("list_schedules").paginate(GroupName=self.group_name):
            for summary in page.get("Schedules", []):
                stored = self.get(summary["Name"])
                if stored is not None:
                    schedules.append(stored)
        return schedules

    def delete(self, schedule_id: str) -> bool:
        try:
            self.client.delete_schedule(Name=schedule_id, GroupName=self.group_name)
        except self.client.exceptions.ResourceNotFoundException:
            return False
        return True

    def _stored(self, found: dict[str, Any]) -> StoredSchedule:
        created_at = found.get("CreationDate") or datetime.now(UTC)
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=UTC)
        return StoredSchedule(
            schedule_id=found["Name"],
            expression=found["ScheduleExpression"],
            timezone=found.get("ScheduleExpressionTimezone") or "UTC",
            job_input=json.loads(found.get("Target", {}).get("Input") or "{}"),
            description=found.get("Description") or None,
            enabled=found.get("State", "ENABLED") == "ENABLED",
            created_at=created_at,
        )
