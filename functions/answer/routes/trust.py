"""The trust face: `/v1/query`, `/v1/query/stream`, `/v1/search`, `/v1/traces/{trace_id}`, `/v1/health`."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from functions.answer import sse
from functions.answer.routes import ServiceDep
from functions.answer.schemas import (
    QueryRequest,
    QueryResponse,
    TraceResponse,
    TrustHealthResponse,
    TrustSearchRequest,
    TrustSearchResponse,
)
from functions.common.faces.trust import TrustErrorResponse
from functions.common.web.api import TeamId, client_identity
from functions.common.web.openapi import error_responses

if TYPE_CHECKING:  # the service and the pipeline are imported by the first answer (bench/cold_start.py)
    from functions.answer.service import AnswerService
    from functions.research.pipeline import AnswerRequest

router = APIRouter(prefix="/v1", tags=["answer"])
VERSION = "0.1.0"
ERRORS = error_responses(TrustErrorResponse, (400, 404, 429, 500, 503))
STREAM_DESCRIPTION = (
    "Server-Sent Events, each written as it happens: `trace_event` (an agent trace event), "
    '`answer_delta` (`{"text": ...}`, the answer as it is written), `citation` (`{"citations": [...]}`, '
    "the verified citations), then `final` (the /v1/query response) or `error` (the §8.4 error body)."
)


def answer_request(body: QueryRequest, service: AnswerService, team_id: str) -> AnswerRequest:
    from functions.research.pipeline import AnswerRequest

    options = body.options
    prepared = AnswerRequest(
        question=body.query,
        preset=options.preset,
        focus_mode=options.focus_mode,
        reasoning_effort=options.reasoning_effort,
        connectors=service.connectors_for(options.search_provider, "options.search_provider"),
        documents=tuple(body.documents),
        max_sources=options.max_sources,
        enable_verifier=options.enable_verifier,
        min_confidence=options.min_confidence,
        min_sources=options.min_sources,
        team_id=team_id,
    )
    if options.temperature is not None:  # else the pipeline's default writer temperature
        prepared = replace(prepared, temperature=options.temperature)
    return prepared


def received(body: QueryRequest, answer_id: str, request: Request) -> dict[str, Any]:
    return {
        "answer_id": answer_id,
        "request_id": getattr(request.state, "request_id", None),
        "user_id": body.user_id,
        "session_id": body.session_id,
        "documents": body.documents,
        "options": body.options.model_dump(),
    }


def event_stream(
    service: AnswerService, body: QueryRequest, prepared: AnswerRequest, http_request: Request
) -> sse.EventStreamResponse:
    from functions.answer.service import new_answer_id, new_trace_id
    from functions.answer.stream import answer_events

    answer_id = new_answer_id()
    events = answer_events(
        service,
        prepared,
        answer_id=answer_id,
        trace_id=new_trace_id(),
        received=received(body, answer_id, http_request),
    )
    return sse.EventStreamResponse(events)


@router.post(
    "/query",
    response_model=QueryResponse,
    responses={**ERRORS, 200: {"content": {"text/event-stream": {}}, "description": "With options.stream"}},
)
async def query(body: QueryRequest, request: Request, service: ServiceDep, team: TeamId) -> Any:
    """An evidence-grounded answer with located citations and claim verdicts (a refusal when the
    evidence does not support one). With `options.stream` true, the answer streams as from
    `/v1/query/stream`."""
    from functions.answer.service import new_answer_id, new_trace_id, to_query_response

    await service.admit(client_identity(request))
    prepared = answer_request(body, service, team)
    if body.options.stream:
        return event_stream(service, body, prepared, request)
    answer_id = new_answer_id()
    result = await service.answer(
        prepared, trace_id=new_trace_id(), received=received(body, answer_id, request)
    )
    return to_query_response(answer_id, result)


@router.post(
    "/query/stream",
    response_class=StreamingResponse,
    responses={**ERRORS, 200: {"content": {"text/event-stream": {}}, "description": STREAM_DESCRIPTION}},
)
async def query_stream(
    body: QueryRequest, request: Request, service: ServiceDep, team: TeamId
) -> sse.EventStreamResponse:
    """The `/v1/query` answer as Server-Sent Events (see the 200 response)."""
    await service.admit(client_identity(request))
    return event_stream(service, body, answer_request(body, service, team), request)


@router.post("/search", response_model=TrustSearchResponse, responses=ERRORS)
async def search(
    body: TrustSearchRequest, request: Request, service: ServiceDep, team: TeamId
) -> TrustSearchResponse:
    """Ranked sources from the scholarly search connectors (and the team's library), without an answer."""
    await service.admit(client_identity(request))
    results = await service.search(team, body)
    return TrustSearchResponse.model_validate({"results": results})


@router.get(
    "/traces/{trace_id}", response_model=TraceResponse, responses={404: {"model": TrustErrorResponse}}
)
async def trace(trace_id: str, service: ServiceDep, team: TeamId) -> TraceResponse:
    """Every agent trace event of one of the team's answers (or research jobs), in order."""
    return TraceResponse.model_validate(await asyncio.to_thread(service.trace, team, trace_id))


@router.get("/health", response_model=TrustHealthResponse)
async def health(service: ServiceDep) -> TrustHealthResponse:
    return TrustHealthResponse(
        status="ok",
        version=VERSION,
        llm_configured=service.llm_configured,
        connectors=service.connector_names,
    )
