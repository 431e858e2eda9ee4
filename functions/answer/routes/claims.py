"""The trust face's claim verification: `POST /v1/claims/verify`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from functions.answer.claims import claim_checkers, claim_response
from functions.answer.routes import ServiceDep
from functions.answer.schemas import ClaimVerifyRequest, ClaimVerifyResponse
from functions.common.faces.trust import TrustErrorResponse
from functions.common.web.api import TeamId, client_identity
from functions.common.web.openapi import error_responses

router = APIRouter(prefix="/v1", tags=["claims"])
ERRORS = error_responses(TrustErrorResponse, (400, 404, 429, 500, 503))


@router.post("/claims/verify", response_model=ClaimVerifyResponse, responses=ERRORS)
async def verify_claim(body: ClaimVerifyRequest, request: Request, service: ServiceDep, team: TeamId) -> Any:
    """A claim's verdict (`supported`, `partially_supported`, `unsupported`, `contradicted` or
    `insufficient_evidence`) over the sources named (URLs, DOIs, arXiv ids, library document ids), or
    over what the scholarly search finds without them, with the verbatim, located passages it rests on."""
    await service.admit(client_identity(request))
    async with claim_checkers(service)() as checker:
        check = await checker.check(body.claim, body.sources or [], team)
    return claim_response(check)
