"""The search function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import Unauthorized, UpstreamError
from functions.common.faces import multisource, search_tool
from functions.common.observability import get_logger
from functions.common.web.api import create_app
from functions.common.web.openapi import document_errors
from functions.metering.middleware import UsageMiddleware
from functions.search.routes import tools_router, v1_router

logger = get_logger("search")

# /api/v1/search: every connector failing is the seed's 500 "Search error"; a 401 is the gateway's own
# body (functions/local_runtime/gateway.py `unauthorized_reply`), and no framework header is passed on.
V1_FACE = multisource.FACE.with_rules(
    "multisource (search)",
    [
        (Unauthorized, multisource.unauthorized_unchallenged),
        (UpstreamError, lambda exc: multisource.reply(500, f"Search error: {exc.message}")),
        (StarletteHTTPException, multisource.http_error_bare),
    ],
)

app = create_app(
    title="search",
    description="Scholarly search over arXiv, Semantic Scholar, OpenAlex and Crossref "
    "(API 1 `/api/tools/search`, multi-source `/api/v1/search` with RRF, `/api/v1/health`).",
    routers=[(search_tool.FACE, tools_router), (V1_FACE, v1_router)],
    logger=logger,
    middlewares=[UsageMiddleware],  # counts each request per team, route and month (docs/usage.md)
)

# 400 validation, 429 the per-client limit, 500 every source failed (API 1's seed mandates it) or a
# fault; /api/v1/search also answers 404 when no source found anything (the multi-source seed).
document_errors(
    app,
    {
        "POST /api/tools/search": (search_tool.SearchToolError, [400, 429, 500]),
        "POST /api/v1/search": (multisource.MultiSourceError, [400, 404, 429, 500]),
        "GET /api/v1/health": (multisource.MultiSourceError, []),
    },
)
