"""The extract function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from functions.answer.error_schemas import TrustErrorResponse
from functions.common.api import create_app
from functions.common.observability import get_logger
from functions.common.openapi import document_errors
from functions.extract.api import documents_router, tools_router
from functions.extract.http_errors import install_error_handlers
from functions.metering.middleware import UsageMiddleware
from functions.orchestrate.error_schemas import AgentError

logger = get_logger("extract")

app = create_app(
    title="extract",
    description="Paper extraction (POST /api/tools/extract) and document upload (/v1/documents).",
    routers=[tools_router, documents_router],
    logger=logger,
    install_error_handlers=install_error_handlers,
    middlewares=[UsageMiddleware],  # counts each request per team, route and month (docs/usage.md)
)

# /api/tools/extract (the agent API): 400 validation or a refused address, 404 the source could not be
# fetched, 504 the 45 s extraction limit. /v1/documents (trust API): 413 over the upload limit, 422 a
# file that is not a readable PDF, 404 an unknown (or another team's) document; the list is the caller's team's. Both: 503 when S3 or
# DynamoDB is throttling or out of reach.
document_errors(
    app,
    {
        "POST /api/tools/extract": (AgentError, [400, 404, 503, 504]),
        "POST /v1/documents": (TrustErrorResponse, [400, 413, 422, 503]),
        "GET /v1/documents/{document_id}": (TrustErrorResponse, [400, 404, 503]),
        "GET /v1/documents": (TrustErrorResponse, [400, 503]),
    },
)
