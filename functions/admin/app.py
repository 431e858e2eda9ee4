"""The admin function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from functions.admin.errors import install_error_handlers
from functions.answer.error_schemas import TrustErrorResponse
from functions.common.api import create_app
from functions.common.observability import get_logger
from functions.common.openapi import document_errors
from functions.teams.routes import router as teams_router

logger = get_logger("admin")

app = create_app(
    title="admin",
    description="Team and token management: create teams, issue and revoke their bearer tokens.",
    routers=[teams_router],
    logger=logger,
    install_error_handlers=install_error_handlers,
)

# The trust API's error body: 400 validation, 401 the admin token (checked here, not by the gateway),
# 404 unknown team/token, 409 a team or token that exists, 503 admin disabled (ADMIN_TOKEN unset) or
# API Gateway's usage plans unreachable.
document_errors(
    app,
    {
        "POST /admin/teams": (TrustErrorResponse, [400, 409, 503]),
        "PATCH /admin/teams/{team_id}": (TrustErrorResponse, [400, 404, 503]),
        "POST /admin/teams/{team_id}/tokens": (TrustErrorResponse, [404, 409, 503]),
        "DELETE /admin/teams/{team_id}/tokens/{token_id}": (TrustErrorResponse, [404, 503]),
        "POST /admin/teams/{team_id}/webhook-secret": (TrustErrorResponse, [400, 404, 503]),
        "PUT /admin/teams/{team_id}/upstream-keys/{provider}": (TrustErrorResponse, [400, 404, 503]),
        "DELETE /admin/teams/{team_id}/upstream-keys/{provider}": (TrustErrorResponse, [400, 404, 503]),
        "GET /admin/teams/{team_id}/upstream-keys": (TrustErrorResponse, [404, 503]),
    },
)
