"""`/api/schedules`: create, list, read and delete scheduled research (see functions.orchestrate.schedules)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic_settings import BaseSettings, SettingsConfigDict

from functions.common.aws import generic_client
from functions.common.errors import UpstreamError
from functions.common.settings import get_settings
from functions.orchestrate.schedules import (
    EventBridgeScheduleStore,
    Schedule,
    ScheduleRequest,
    ScheduleService,
)

router = APIRouter(prefix="/api/schedules", tags=["schedules"])

# Locally (moto) any role ARN is accepted; on AWS the stack sets the role that may only start the machine.
LOCAL_SCHEDULER_ROLE = "arn:aws:iam::123456789012:role/local-research-scheduler"


class SchedulerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    schedule_group_name: str = "default"
    scheduler_role_arn: str = LOCAL_SCHEDULER_ROLE


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


Service = Annotated[ScheduleService, Depends(schedule_service)]


@router.post("", status_code=201, response_model=Schedule)
def create_schedule(request: ScheduleRequest, service: Service) -> Schedule:
    return service.create(request)


@router.get("")
def list_schedules(service: Service) -> dict[str, Any]:
    schedules = service.list()
    return {
        "schedules": [schedule.model_dump(mode="json") for schedule in schedules],
        "count": len(schedules),
    }


@router.get("/{schedule_id}", response_model=Schedule)
def get_schedule(schedule_id: str, service: Service) -> Schedule:
    return service.get(schedule_id)


@router.delete("/{schedule_id}", status_code=204)
def delete_schedule(schedule_id: str, service: Service) -> Response:
    service.delete(schedule_id)
    return Response(status_code=204)
