"""The search function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from functions.common.api import create_app
from functions.common.observability import get_logger
from functions.common.openapi import document_errors
from functions.metering.middleware import UsageMiddleware
from functions.search.errors import MultiSourceError, SearchToolError, install_error_handlers
from functions.search.routes import tools_router, v1_router

logger = get_logger("search")

app = create_app(
    title="search",
    description="Scholarly search over arXiv, Semantic Scholar, OpenAlex and Crossref "
    "(API 1 `/api/tools/search`, multi-source `/api/v1/search` with RRF, `/api/v1/health`).",
    routers=[tools_router, v1_router],
    logger=logger,
    install_error_handlers=install_error_handlers,
    middlewares=[UsageMiddleware],  # counts each request per team, route and month (docs/usage.md)
)

# 400 validation, 429 the per-client limit, 500 every source failed (API 1's seed mandates it) or a
# fault; /api/v1/search also answers 404 when no source found anything (the multi-source seed).
document_errors(
    app,
    {
        "POST /api/tools/search": (SearchToolError, [400, 429, 500]),
        "POST /api/v1/search": (MultiSourceError, [400, 404, 429, 500]),
        "GET /api/v1/health": (MultiSourceError, []),
    },
)
