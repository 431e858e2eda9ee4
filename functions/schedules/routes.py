"""`/api/schedules`: create, list, read and delete scheduled research (served by the orchestrate app)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response

from functions.schedules.service import Schedule, ScheduleRequest, ScheduleService
from functions.schedules.wiring import schedule_service

router = APIRouter(prefix="/api/schedules", tags=["schedules"])

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
