"""The extract function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import (
    DomainError,
    FetchBlocked,
    FetchError,
    FetchTimeout,
    InvalidInput,
    NotFound,
    Unauthorized,
    UpstreamError,
    aws_outage,
)
from functions.common.faces import agent, trust
from functions.common.faces.face import ErrorReply, storage_outage_message
from functions.common.observability import get_logger
from functions.common.web.api import create_app
from functions.common.web.openapi import document_errors
from functions.extract.api import documents_router, tools_router
from functions.extract.errors import DocumentTooLarge, UnprocessableDocument
from functions.metering.middleware import UsageMiddleware

logger = get_logger("extract")

# A framework-raised HTTP error's code (e.g. a body that cannot be parsed): the trust format's, upper-cased
# on the agent face; other statuses are "error" / "HTTP_ERROR".
_HTTP_CODES = {400: "invalid_request", 404: "not_found"}


def _problem(exc: RequestValidationError) -> tuple[str, str | None]:
    """The first problem's message and field (every `body`/`query`/`path` part left out of the field)."""
    first = exc.errors()[0] if exc.errors() else {}
    location = [str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path")]
    field = ".".join(location) or None
    return f"{field or 'request'}: {first.get('msg', 'invalid request')}", field


def _tool_validation(exc: RequestValidationError) -> ErrorReply:
    message, field = _problem(exc)
    return agent.reply(400, "INVALID_REQUEST", message, field=field)


def _tool_http_error(exc: StarletteHTTPException) -> ErrorReply:
    code = _HTTP_CODES.get(exc.status_code, "http_error").upper()
    return agent.reply(exc.status_code, code, str(exc.detail))


def _tool_outage_or_internal(exc: BaseException) -> ErrorReply:
    outage = aws_outage(exc)  # S3/DynamoDB throttling or out of reach: an upstream outage, not our fault
    if outage is not None:
        return agent.reply(503, "SERVICE_UNAVAILABLE", storage_outage_message(outage))
    message = exc.message if isinstance(exc, DomainError) else "internal error"
    return agent.reply(500, "INTERNAL_ERROR", message)


def _too_large(exc: DocumentTooLarge) -> ErrorReply:
    return trust.reply(413, exc.code, exc.message, trust.field_details(exc.field))


# The extraction tool's codes (the agent seed's extraction tool API): INVALID_REQUEST, SOURCE_UNAVAILABLE,
# EXTRACTION_TIMEOUT; any other domain error is a 500.
TOOL_FACE = agent.FACE.with_rules(
    "agent (extraction tool)",
    [
        (RequestValidationError, _tool_validation),
        (Unauthorized, agent.unauthorized),
        (DocumentTooLarge, _too_large),
        (UnprocessableDocument, lambda exc: agent.reply(422, exc.code.upper(), exc.message, field=exc.field)),
        (InvalidInput, lambda exc: agent.reply(400, "INVALID_REQUEST", exc.message, field=exc.field)),
        (FetchBlocked, lambda exc: agent.reply(400, "INVALID_REQUEST", exc.message, field="source_url")),
        (
            FetchTimeout,
            lambda exc: agent.reply(
                504, "EXTRACTION_TIMEOUT", f"Extraction exceeded 45 second limit ({exc.message})"
            ),
        ),
        (
            NotFound,
            lambda exc: agent.reply(
                404, "SOURCE_UNAVAILABLE", f"Failed to fetch content from URL: {exc.message}"
            ),
        ),
        (
            FetchError,
            lambda exc: agent.reply(
                404, "SOURCE_UNAVAILABLE", f"Failed to fetch content from URL: {exc.message}"
            ),
        ),
        (StarletteHTTPException, _tool_http_error),
        (DomainError, _tool_outage_or_internal),
    ],
    otherwise=_tool_outage_or_internal,
)


def _documents_validation(exc: RequestValidationError) -> ErrorReply:
    message, field = _problem(exc)
    return trust.reply(400, "invalid_request", message, trust.field_details(field))


def _documents_http_error(exc: StarletteHTTPException) -> ErrorReply:
    return trust.reply(exc.status_code, _HTTP_CODES.get(exc.status_code, "error"), str(exc.detail))


def _documents_outage_or_internal(exc: BaseException) -> ErrorReply:
    outage = aws_outage(exc)
    if outage is not None:
        return trust.reply(503, "upstream_unavailable", storage_outage_message(outage))
    message = exc.message if isinstance(exc, DomainError) else "internal error"
    return trust.reply(500, "internal_error", message)


# /v1/documents: 413 over the upload limit, 422 a file that is not a readable PDF; a 401 without a
# challenge header, and a failure of our own names what failed.
DOCUMENTS_FACE = trust.FACE.with_rules(
    "trust (documents)",
    [
        (RequestValidationError, _documents_validation),
        (Unauthorized, lambda exc: trust.reply(401, "unauthorized", exc.message)),
        (DocumentTooLarge, _too_large),
        (
            UnprocessableDocument,
            lambda exc: trust.reply(422, exc.code, exc.message, trust.field_details(exc.field)),
        ),
        (UpstreamError, _documents_outage_or_internal),
        (StarletteHTTPException, _documents_http_error),
    ],
    otherwise=_documents_outage_or_internal,
)

app = create_app(
    title="extract",
    description="Paper extraction (POST /api/tools/extract) and document upload (/v1/documents).",
    routers=[(TOOL_FACE, tools_router), (DOCUMENTS_FACE, documents_router)],
    logger=logger,
    middlewares=[UsageMiddleware],  # counts each request per team, route and month (docs/usage.md)
)

# /api/tools/extract (the agent API): 400 validation or a refused address, 404 the source could not be
# fetched, 504 the 45 s extraction limit. /v1/documents (trust API): 413 over the upload limit, 422 a
# file that is not a readable PDF, 404 an unknown (or another team's) document; the list is the caller's team's. Both: 503 when S3 or
# DynamoDB is throttling or out of reach.
document_errors(
    app,
    {
        "POST /api/tools/extract": (agent.AgentError, [400, 404, 503, 504]),
        "POST /v1/documents": (trust.TrustErrorResponse, [400, 413, 422, 503]),
        "GET /v1/documents/{document_id}": (trust.TrustErrorResponse, [400, 404, 503]),
        "GET /v1/documents": (trust.TrustErrorResponse, [400, 503]),
    },
)
