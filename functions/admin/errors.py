"""Domain errors -> the admin API's error body, the trust seed's §8.4 schema, in one place.

`{"error": {"code": ..., "message": ..., "details": {...}}}`:

| error                                   | status | code                 |
|-----------------------------------------|--------|----------------------|
| invalid body / InvalidInput             | 400    | invalid_request      |
| missing or wrong admin token            | 401    | unauthorized         |
| unknown team or token (NotFound)        | 404    | not_found            |
| unknown route / method not allowed      | 404/405| not_found / method_not_allowed |
| ADMIN_TOKEN unset (AdminDisabled)       | 503    | admin_disabled       |
| the team store failed (UpstreamError)   | 503    | upstream_unavailable |
| anything else                           | 500    | internal_error       |
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import Conflict, DomainError, InvalidInput, NotFound, UpstreamError, aws_outage
from functions.common.observability import get_logger
from functions.teams.routes import AdminDisabled, Unauthorized

logger = get_logger("admin")

HTTP_CODES = {400: "invalid_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def _reply(status: int, code: str, message: str, details: dict[str, Any] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message, details), status_code=status)


def _validation(exc: RequestValidationError) -> JSONResponse:
    errors = list(exc.errors())
    first = errors[0] if errors else {}
    location = [str(part) for part in first.get("loc", ())]
    if location and location[0] in ("body", "query", "path", "header"):
        location = location[1:]
    name = ".".join(location)
    if first.get("type") == "json_invalid" or not name:
        return _reply(400, "invalid_request", "Invalid request body: not a JSON object")
    if first.get("type") == "missing":
        return _reply(400, "invalid_request", f"Missing {name} field", {"field": name})
    return _reply(400, "invalid_request", f"{name}: {first.get('msg', 'invalid value')}", {"field": name})


def error_response(exc: Exception) -> JSONResponse:
    if isinstance(exc, RequestValidationError):
        return _validation(exc)
    if isinstance(exc, InvalidInput):
        return _reply(400, "invalid_request", exc.message, {"field": exc.field} if exc.field else None)
    if isinstance(exc, Unauthorized):
        response = _reply(401, "unauthorized", exc.message)
        response.headers["WWW-Authenticate"] = "Bearer"
        return response
    if isinstance(exc, NotFound):
        return _reply(404, "not_found", exc.message)
    if isinstance(exc, Conflict):
        return _reply(409, "conflict", exc.message)
    if isinstance(exc, AdminDisabled):
        return _reply(503, "admin_disabled", exc.message)
    if isinstance(exc, UpstreamError):
        return _reply(503, "upstream_unavailable", exc.message)
    if isinstance(exc, StarletteHTTPException):
        code = HTTP_CODES.get(exc.status_code, "internal_error" if exc.status_code >= 500 else "error")
        response = _reply(exc.status_code, code, str(exc.detail))
        response.headers.update(dict(exc.headers or {}))
        return response
    if isinstance(exc, DomainError):
        return _reply(400, "invalid_request", exc.message)
    outage = aws_outage(exc)
    if outage is not None:
        return _reply(
            503, "upstream_unavailable", f"a storage service is unavailable ({outage}); retry shortly"
        )
    logger.exception("unhandled error")
    return _reply(500, "internal_error", "Internal error")


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return error_response(exc)

    for kind in (RequestValidationError, DomainError, StarletteHTTPException, Exception):
        app.add_exception_handler(kind, handle)
