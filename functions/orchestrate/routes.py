"""The agent job API (API 0 of the search/extract seed) plus human checkpoints and artifact downloads."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from functions.common.errors import InvalidInput
from functions.common.web.api import TeamId, client_identity
from functions.orchestrate.checkpoints.edits import EDITS_BY_PHASE
from functions.orchestrate.checkpoints.service import CheckpointService
from functions.orchestrate.jobs import JobService
from functions.orchestrate.models import (
    CheckpointAborted,
    CheckpointApproved,
    CheckpointDecision,
    CheckpointView,
    JobResults,
    JobStatusResponse,
    WaitingCheckpoints,
)
from functions.orchestrate.wiring import checkpoint_service, job_service
from functions.research.planning.request import ExecuteRequest

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


RouteHandler = TypeVar("RouteHandler", bound=Callable[..., Any])


def _job_body(path: str, summary: str, model: type[BaseModel]) -> Callable[[RouteHandler], RouteHandler]:
    """A GET of one job's body. Fields a body does not have stay out of it (a running job has no
    `failure_reason`, a job that failed before Finalize no `writer`), as they always have."""
    return router.get(path, summary=summary, response_model=model, response_model_exclude_unset=True)


@_job_body(
    "/status/{job_id}", "Status, phase, progress, decisions and quality metrics of a job", JobStatusResponse
)
def status(job_id: str, service: Service, team: TeamId) -> JobStatusResponse:
    return service.status(team, job_id)


@_job_body(
    "/results/{job_id}", "Synthesis, sources, evidence, claims and artifacts of a finished job", JobResults
)
def results(job_id: str, service: Service, team: TeamId) -> JobResults:
    return service.results(team, job_id)


@router.get("/results/{job_id}/artifacts/{name}", summary="Download one report artifact")
def artifact(job_id: str, name: str, service: Service, team: TeamId) -> Response:
    data, content_type = service.artifact(team, job_id, name)
    return Response(content=data, media_type=content_type)


def get_checkpoint_service() -> CheckpointService:
    return checkpoint_service()


Checkpoints = Annotated[CheckpointService, Depends(get_checkpoint_service)]
EDITS_DESCRIPTION = (
    "Optional edits for the phase that waits (unknown fields or ids: 400 naming them), plus `reason`. "
    'plan: `{"connectors": [...], "queries": {"<connector>": [...]}, "publication_window_years": N}`; '
    'screening: `{"exclude": [candidate ids], "add": ["doi:…", "arxiv:…", "library:doc-…"], "max_sources": N}`; '
    'extraction: `{"strike": [evidence ids], "not_relevant": [source ids]}`; '
    'synthesis: `{"strike": [claim ids], "resynthesize": true}`.'
)


async def edits_body(request: Request) -> dict[str, Any] | None:
    """The approve body, read here (not by FastAPI): which model validates it depends on the phase."""
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise InvalidInput("the body is not JSON") from None
    if parsed is not None and not isinstance(parsed, dict):
        raise InvalidInput("the body must be a JSON object of edits")
    return parsed


# The body's schema is the waiting phase's: one of these, which the service picks by the phase.
EDITS_REQUEST_BODY = {
    "requestBody": {
        "required": False,
        "description": EDITS_DESCRIPTION,
        "content": {
            "application/json": {
                "schema": {"anyOf": [model.model_json_schema() for model in EDITS_BY_PHASE.values()]}
            }
        },
    }
}


@router.get("/checkpoints", summary="The calling team's jobs waiting at a human checkpoint")
def waiting_checkpoints(service: Checkpoints, team: TeamId) -> WaitingCheckpoints:
    return service.waiting(team)


@router.get("/checkpoint/{job_id}", summary="The checkpoint a job waits at, with what a reviewer may edit")
def checkpoint(job_id: str, service: Checkpoints, team: TeamId) -> CheckpointView:
    return service.show(team, job_id)


@router.post(
    "/checkpoint/{job_id}/approve",
    summary="Approve the waiting checkpoint, with optional edits",
    openapi_extra=EDITS_REQUEST_BODY,
)
def approve(
    job_id: str,
    request: Request,
    service: Checkpoints,
    team: TeamId,
    body: Annotated[dict[str, Any] | None, Depends(edits_body)],
) -> CheckpointApproved:
    return service.approve(team, job_id, body, client_identity(request))


@router.post("/checkpoint/{job_id}/abort", summary="Abort a job waiting at a human checkpoint")
def abort(
    job_id: str,
    request: Request,
    service: Checkpoints,
    team: TeamId,
    body: CheckpointDecision | None = None,
) -> CheckpointAborted:
    return service.abort(team, job_id, body.reason if body else None, client_identity(request))
