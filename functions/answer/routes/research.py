"""The multi-source face: `/api/v1/research`, `/api/v1/ask`, `/api/v1/presets`, `/api/v1/focus-modes`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from functions.answer.routes import ServiceDep
from functions.answer.schemas import (
    DetailResponse,
    FocusModeInfo,
    FocusModesResponse,
    PresetInfo,
    PresetsResponse,
    ResearchRequest,
    ResearchResponse,
)
from functions.common.web.api import TeamId, client_identity
from functions.common.web.openapi import error_responses
from functions.research.presets import EFFORT_LOW, FOCUS_MODES, PRESETS

router = APIRouter(prefix="/api/v1", tags=["answer"])
ERRORS = error_responses(DetailResponse, (400, 404, 429, 500, 503))


async def _research(
    body: ResearchRequest, effort: str, request: Request, service: ServiceDep, team_id: str
) -> Any:
    from functions.answer.service import new_trace_id, to_research_response
    from functions.research.pipeline import AnswerRequest

    await service.admit(client_identity(request))
    service.check_connectors(body.connectors)
    answer_request = AnswerRequest(
        question=body.query,
        preset=body.preset,
        focus_mode=body.focus_mode,
        reasoning_effort=effort,
        top_k=body.top_k,
        connectors=body.connectors,
        team_id=team_id,
    )
    received = {
        "face": request.url.path,
        "request_id": getattr(request.state, "request_id", None),
        "options": body.model_dump(exclude={"query"}),
        "effort": effort,
    }
    result = await service.answer(answer_request, trace_id=new_trace_id(), received=received)
    return to_research_response(answer_request, result)


@router.post("/research", response_model=ResearchResponse, responses=ERRORS)
async def research(body: ResearchRequest, request: Request, service: ServiceDep, team: TeamId) -> Any:
    """Full research pipeline: search, evidence, a cited answer, verification, quality gate."""
    return await _research(body, body.reasoning_effort, request, service, team)


@router.post("/ask", response_model=ResearchResponse, responses=ERRORS)
async def ask(body: ResearchRequest, request: Request, service: ServiceDep, team: TeamId) -> Any:
    """Quick answer: as `/research` with `reasoning_effort` set to "low" (the request's is ignored)."""
    return await _research(body, EFFORT_LOW, request, service, team)


@router.get("/presets", response_model=PresetsResponse)
async def presets() -> PresetsResponse:
    return PresetsResponse(
        presets=[
            PresetInfo(name=preset.name, description=preset.description, features=list(preset.features))
            for preset in PRESETS.values()
        ]
    )


@router.get("/focus-modes", response_model=FocusModesResponse)
async def focus_modes() -> FocusModesResponse:
    return FocusModesResponse(
        focus_modes=[
            FocusModeInfo(name=mode.name, description=mode.description) for mode in FOCUS_MODES.values()
        ]
    )
