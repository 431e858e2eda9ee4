"""Default adapters of scheduled research: the schedules API and the local runtime's scheduler get their
store here (on AWS and locally alike, EventBridge Scheduler targeting the research state machine); the
workflow's Finalize step gets the living review (runs in the jobs table, results in the artifacts bucket,
retraction flags from OpenAlex, citing works from the citation graphs)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from functions.common.aws import generic_client
from functions.common.errors import UpstreamError
from functions.common.settings import get_settings
from functions.common.storage import S3BlobStore
from functions.schedules.adapters import EventBridgeScheduleStore
from functions.schedules.runs import DynamoDbScheduleRunStore
from functions.schedules.service import ScheduleService
from functions.schedules.settings import SchedulerSettings

if TYPE_CHECKING:
    from functions.schedules.living import LivingReview


def schedule_store(settings: SchedulerSettings | None = None) -> EventBridgeScheduleStore:
    state_machine_arn = get_settings().state_machine_arn
    if not state_machine_arn:
        raise UpstreamError("scheduled research is not configured: STATE_MACHINE_ARN is unset")
    settings = settings or SchedulerSettings()
    return EventBridgeScheduleStore(
        client=generic_client("scheduler"),
        group_name=settings.schedule_group_name,
        target_arn=state_machine_arn,
        role_arn=settings.scheduler_role_arn,
        flexible_window_minutes=settings.schedule_flexible_window_minutes,
    )


def schedule_service() -> ScheduleService:
    settings = SchedulerSettings()
    return ScheduleService(
        store=schedule_store(settings),
        runs=DynamoDbScheduleRunStore(),
        max_per_team=settings.schedules_max_per_team,
        min_interval=timedelta(minutes=settings.schedules_min_interval_minutes),
    )


def living_review() -> LivingReview:
    # Imported here: the schedules API (in the orchestrate API function) never runs the living review.
    from functions.schedules.living import GraphCitingWorks, LivingReview, OpenAlexRetractions

    settings = get_settings()
    return LivingReview(
        runs=DynamoDbScheduleRunStore(),
        artifacts=S3BlobStore(settings.artifacts_bucket),
        retractions=OpenAlexRetractions(settings),
        citing=GraphCitingWorks(),
    )
