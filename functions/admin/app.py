"""The admin function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from fastapi.exceptions import RequestValidationError

from functions.common.errors import Conflict, DomainError, aws_outage
from functions.common.faces import trust
from functions.common.faces.face import ErrorReply, storage_outage_message
from functions.common.observability import get_logger
from functions.common.web.api import create_app
from functions.common.web.openapi import document_errors
from functions.teams.routes import AdminDisabled, Unauthorized
from functions.teams.routes import router as teams_router

logger = get_logger("admin")


def _otherwise(exc: BaseException) -> ErrorReply:
    """Any other domain error is a 400; the team store's AWS outage a 503."""
    if isinstance(exc, DomainError):
        return trust.reply(400, "invalid_request", exc.message)
    outage = aws_outage(exc)
    if outage is not None:
        return trust.reply(503, "upstream_unavailable", storage_outage_message(outage))
    return trust.internal(exc)


# The trust face as the admin API words it: 401 the admin token (checked here, not by the gateway), 409 a
# team or token that exists, 503 admin disabled (ADMIN_TOKEN unset).
ADMIN_FACE = trust.FACE.with_rules(
    "trust (admin)",
    [
        (RequestValidationError, lambda exc: trust.validation(exc, problems=False)),
        (Unauthorized, trust.unauthorized),
        (Conflict, lambda exc: trust.reply(409, "conflict", exc.message)),
        (AdminDisabled, lambda exc: trust.reply(503, "admin_disabled", exc.message)),
    ],
    otherwise=_otherwise,
)

app = create_app(
    title="admin",
    description="Team and token management: create teams, issue and revoke their bearer tokens.",
    routers=[(ADMIN_FACE, teams_router)],
    logger=logger,
)

# The trust API's error body: 400 validation, 401 the admin token (checked here, not by the gateway),
# 404 unknown team/token, 409 a team or token that exists, 503 admin disabled (ADMIN_TOKEN unset) or
# API Gateway's usage plans unreachable.
document_errors(
    app,
    {
        "POST /admin/teams": (trust.TrustErrorResponse, [400, 409, 503]),
        "PATCH /admin/teams/{team_id}": (trust.TrustErrorResponse, [400, 404, 503]),
        "POST /admin/teams/{team_id}/tokens": (trust.TrustErrorResponse, [404, 409, 503]),
        "DELETE /admin/teams/{team_id}/tokens/{token_id}": (trust.TrustErrorResponse, [404, 503]),
        "POST /admin/teams/{team_id}/webhook-secret": (trust.TrustErrorResponse, [400, 404, 503]),
        "PUT /admin/teams/{team_id}/upstream-keys/{provider}": (trust.TrustErrorResponse, [400, 404, 503]),
        "DELETE /admin/teams/{team_id}/upstream-keys/{provider}": (trust.TrustErrorResponse, [400, 404, 503]),
        "GET /admin/teams/{team_id}/upstream-keys": (trust.TrustErrorResponse, [404, 503]),
    },
)
