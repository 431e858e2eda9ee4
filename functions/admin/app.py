"""The admin function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from functions.admin.errors import install_error_handlers
from functions.common.api import create_app
from functions.common.observability import get_logger
from functions.teams.routes import router as teams_router

logger = get_logger("admin")

app = create_app(
    title="admin",
    description="Team and token management: create teams, issue and revoke their bearer tokens.",
    routers=[teams_router],
    logger=logger,
    install_error_handlers=install_error_handlers,
)
