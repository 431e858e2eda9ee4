"""The agent job API (API 0 of the search/extract seed) plus human checkpoints and artifact downloads."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import JSONResponse

from functions.common.api import TeamId, client_identity
from functions.orchestrate.jobs import JobService
from functions.orchestrate.models import CheckpointDecision
from functions.orchestrate.wiring import job_service
from functions.research.request import ExecuteRequest

router = APIRouter(prefix="/api/agent", tags=["agent jobs"])


def get_job_service() -> JobService:
    return job_service()


Service = Annotated[JobService, Depends(get_job_service)]


@router.post("/execute", status_code=202, summary="Start an autonomous research job")
def execute(
    body: ExecuteRequest,
    request: Request,
    service: Service,
    team: TeamId,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> JSONResponse:
    response, created = service.submit(
        team, body, idempotency_key=idempotency_key, client_id=client_identity(request), source="api"
    )
    headers = {"Location": f"/api/agent/status/{response['job_id']}"}
    if idempotency_key and not created:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(status_code=202, content=response, headers=headers)


@router.get("/status/{job_id}", summary="Status, phase, progress, decisions and quality metrics of a job")
def status(job_id: str, service: Service, team: TeamId) -> dict[str, Any]:
    return service.status(team, job_id)


@router.get(
    "/results/{job_id}", summary="Synthesis, sources, evidence, claims and artifacts of a finished job"
)
def results(job_id: str, service: Service, team: TeamId) -> dict[str, Any]:
    return service.results(team, job_id)


@router.get("/results/{job_id}/artifacts/{name}", summary="Download one report artifact")
def artifact(job_id: str, name: str, service: Service, team: TeamId) -> Response:
    data, content_type = service.artifact(team, job_id, name)
    return Response(content=data, media_type=content_type)


@router.post("/checkpoint/{job_id}/approve", summary="Approve the sources selected at a human checkpoint")
def approve(
    job_id: str, service: Service, team: TeamId, body: CheckpointDecision | None = None
) -> dict[str, Any]:
    return service.decide_checkpoint(team, job_id, True, body.reason if body else None)


@router.post("/checkpoint/{job_id}/abort", summary="Abort a job waiting at a human checkpoint")
def abort(
    job_id: str, service: Service, team: TeamId, body: CheckpointDecision | None = None
) -> dict[str, Any]:
    return service.decide_checkpoint(team, job_id, False, body.reason if body else None)
