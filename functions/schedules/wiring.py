"""Default adapters of scheduled research: the schedules API and the local runtime's scheduler get their
store here (on AWS and locally alike, EventBridge Scheduler targeting the research state machine)."""

from __future__ import annotations

from functions.common.aws import generic_client
from functions.common.errors import UpstreamError
from functions.common.settings import get_settings
from functions.schedules.adapters import EventBridgeScheduleStore
from functions.schedules.service import ScheduleService
from functions.schedules.settings import SchedulerSettings


def schedule_store() -> EventBridgeScheduleStore:
    state_machine_arn = get_settings().state_machine_arn
    if not state_machine_arn:
        raise UpstreamError("scheduled research is not configured: STATE_MACHINE_ARN is unset")
    settings = SchedulerSettings()
    return EventBridgeScheduleStore(
        client=generic_client("scheduler"),
        group_name=settings.schedule_group_name,
        target_arn=state_machine_arn,
        role_arn=settings.scheduler_role_arn,
    )


def schedule_service() -> ScheduleService:
    return ScheduleService(store=schedule_store())
