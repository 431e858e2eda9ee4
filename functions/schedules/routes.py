"""`/api/schedules`: create, list, read and delete the calling team's scheduled research (served by the
orchestrate app, whose error mapping answers these routes too). Another team's schedule id answers 404,
exactly like an unknown one; the list holds the team's own schedules only."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response

from functions.common.web.api import TeamId
from functions.schedules.service import Schedule, ScheduleRequest, ScheduleService
from functions.schedules.wiring import schedule_service

router = APIRouter(prefix="/api/schedules", tags=["schedules"])

Service = Annotated[ScheduleService, Depends(schedule_service)]


@router.post("", status_code=201, response_model=Schedule)
def create_schedule(request: ScheduleRequest, team: TeamId, service: Service) -> Schedule:
    return service.create(team, request)


@router.get("")
def list_schedules(team: TeamId, service: Service) -> dict[str, Any]:
    schedules = service.list(team)
    return {
        "schedules": [schedule.model_dump(mode="json") for schedule in schedules],
        "count": len(schedules),
    }


@router.get("/{schedule_id}", response_model=Schedule)
def get_schedule(schedule_id: str, team: TeamId, service: Service) -> Schedule:
    return service.get(team, schedule_id)


@router.delete("/{schedule_id}", status_code=204)
def delete_schedule(schedule_id: str, team: TeamId, service: Service) -> Response:
    service.delete(team, schedule_id)
    return Response(status_code=204)
