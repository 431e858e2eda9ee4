"""The orchestrate function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from functions.common.api import create_app
from functions.common.observability import get_logger
from functions.metering.routes import router as usage_router
from functions.orchestrate.errors import install_error_handlers
from functions.orchestrate.routes import router as agent_router
from functions.schedules.routes import router as schedule_router
from functions.webhooks.routes import router as webhooks_router

logger = get_logger("orchestrate")

app = create_app(
    title="orchestrate",
    description="Autonomous research jobs: plan, search, screen, extract, synthesise with cited evidence; "
    "scheduled research (living reviews) and webhook deliveries; the team's metered usage and cost.",
    routers=[agent_router, schedule_router, webhooks_router, usage_router],
    logger=logger,
    install_error_handlers=install_error_handlers,
)
