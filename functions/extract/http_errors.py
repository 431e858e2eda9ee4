"""Extraction's domain errors mapped to HTTP, in one place.

`/api/tools/extract` answers in the agent API's error format (`{"error": CODE, "message": ...}`);
`/v1/documents` in the trust API's (`{"error": {"code", "message", "details": {"field"}}}`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import (
    DomainError,
    FetchBlocked,
    FetchError,
    FetchTimeout,
    InvalidInput,
    NotFound,
    Unauthorized,
    aws_outage,
)
from functions.extract.errors import DocumentTooLarge, UnprocessableDocument

# A framework-raised HTTP error's code (e.g. a body that cannot be parsed): the trust format's, upper-cased
# in the agent format's; other statuses are "error" / "HTTP_ERROR".
_TRUST_HTTP_CODES = {400: "invalid_request", 404: "not_found"}


def _trust_error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    details: dict[str, Any] = {"field": field} if field else {}
    return JSONResponse(
        status_code=status, content={"error": {"code": code, "message": message, "details": details}}
    )


def _agent_error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": code, "message": message}
    if field:
        body["field"] = field
    return JSONResponse(status_code=status, content=body)


def error_response(request: Request, exc: Exception) -> JSONResponse:
    trust = request.url.path.startswith("/v1/")
    if isinstance(exc, RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        location = [str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path")]
        field = ".".join(location) or None
        message = f"{field or 'request'}: {first.get('msg', 'invalid request')}"
        if trust:
            return _trust_error(400, "invalid_request", message, field)
        return _agent_error(400, "INVALID_REQUEST", message, field)
    if isinstance(exc, Unauthorized):
        if trust:
            return _trust_error(401, "unauthorized", exc.message)
        return _agent_error(401, "UNAUTHORIZED", exc.message)
    if isinstance(exc, DocumentTooLarge):
        return _trust_error(413, exc.code, exc.message, exc.field)
    if isinstance(exc, UnprocessableDocument):  # e.g. a PDF over the parsing limits, by upload or by URL
        if trust:
            return _trust_error(422, exc.code, exc.message, exc.field)
        return _agent_error(422, exc.code.upper(), exc.message, exc.field)
    if isinstance(exc, InvalidInput):
        if trust:
            return _trust_error(400, "invalid_request", exc.message, exc.field)
        return _agent_error(400, "INVALID_REQUEST", exc.message, exc.field)
    if isinstance(exc, FetchBlocked):
        return _agent_error(400, "INVALID_REQUEST", exc.message, "source_url")
    if isinstance(exc, FetchTimeout):
        return _agent_error(504, "EXTRACTION_TIMEOUT", f"Extraction exceeded 45 second limit ({exc.message})")
    if isinstance(exc, NotFound) and trust:
        return _trust_error(404, "not_found", exc.message)
    if isinstance(exc, NotFound | FetchError):
        return _agent_error(404, "SOURCE_UNAVAILABLE", f"Failed to fetch content from URL: {exc.message}")
    if isinstance(exc, StarletteHTTPException):  # e.g. a body that cannot be parsed at all (400)
        if trust:
            code = _TRUST_HTTP_CODES.get(exc.status_code, "error")
            return _trust_error(exc.status_code, code, str(exc.detail))
        code = _TRUST_HTTP_CODES.get(exc.status_code, "http_error").upper()
        return _agent_error(exc.status_code, code, str(exc.detail))
    outage = aws_outage(exc)
    if outage is not None:  # S3/DynamoDB throttling or out of reach: an upstream outage, not our fault
        message = f"a storage service is unavailable ({outage}); retry shortly"
        if trust:
            return _trust_error(503, "upstream_unavailable", message)
        return _agent_error(503, "SERVICE_UNAVAILABLE", message)
    message = exc.message if isinstance(exc, DomainError) else "internal error"
    if trust:
        return _trust_error(500, "internal_error", message)
    return _agent_error(500, "INTERNAL_ERROR", message)


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return error_response(request, exc)

    app.add_exception_handler(RequestValidationError, handle)
    app.add_exception_handler(DomainError, handle)
    app.add_exception_handler(StarletteHTTPException, handle)
    app.add_exception_handler(Exception, handle)  # the family's JSON body for the rest, never a bare 500
