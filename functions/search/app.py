"""The search function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from functions.common.api import create_app
from functions.common.observability import get_logger
from functions.search.errors import install_error_handlers
from functions.search.routes import tools_router, v1_router

logger = get_logger("search")

app = create_app(
    title="search",
    description="Scholarly search over arXiv, Semantic Scholar, OpenAlex and Crossref "
    "(API 1 `/api/tools/search`, multi-source `/api/v1/search` with RRF, `/api/v1/health`).",
    routers=[tools_router, v1_router],
    logger=logger,
    install_error_handlers=install_error_handlers,
)
