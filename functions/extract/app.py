"""The extract function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from functions.common.api import create_app
from functions.common.observability import get_logger
from functions.extract.api import documents_router, tools_router
from functions.extract.http_errors import install_error_handlers

logger = get_logger("extract")

app = create_app(
    title="extract",
    description="Paper extraction (POST /api/tools/extract) and document upload (/v1/documents).",
    routers=[tools_router, documents_router],
    logger=logger,
    install_error_handlers=install_error_handlers,
)
