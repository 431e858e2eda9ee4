"""Where schedules live (the Scheduler group and the role its schedules assume to start the state machine)
and the limits of a team's schedules (docs/infra.md, "Scheduled research")."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# Locally (moto) any role ARN is accepted; on AWS the stack sets the role that may only start the machine.
LOCAL_SCHEDULER_ROLE = "arn:aws:iam::123456789012:role/local-research-scheduler"


class SchedulerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    schedule_group_name: str = "default"
    scheduler_role_arn: str = LOCAL_SCHEDULER_ROLE
    # Scheduler starts each fire at a random moment within this window after its time, so that many
    # schedules at the top of the hour do not reach the upstreams' queues at once (0: exactly on time).
    schedule_flexible_window_minutes: int = Field(default=15, ge=0, le=1440)
    # Every fire is a research job charged to the team: a team keeps at most this many schedules...
    schedules_max_per_team: int = Field(default=20, ge=1)
    # ...and none fires more often than this (rate() and cron() alike; at() fires once).
    schedules_min_interval_minutes: int = Field(default=15, ge=1)
