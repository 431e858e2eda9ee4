"""Domain errors -> HTTP for both answer faces, in one place (the streaming route's `error` event too).

| error                               | /api/v1 (multi-source seed)              | /v1 (trust seed §8.4)              |
|-------------------------------------|------------------------------------------|------------------------------------|
| invalid body / InvalidInput         | 400 `{"detail": "<field>: <problem>"}`   | 400 invalid_request                |
| NoResults (nothing found at all)    | 404 `{"detail": "No search results found"}` | (not raised: a refusal instead) |
| NotFound (document, trace, route)   | 404 `{"detail": ...}`                    | 404 not_found                      |
| method not allowed                  | 405 `{"detail": ...}`                    | 405 method_not_allowed             |
| RateLimited                         | 429 `{"detail": "Rate limit exceeded", "retry_after"}` | 429 rate_limited     |
| SearchUnavailable (no connector)    | 503 `{"detail": "No search connector..."}` | 503 upstream_unavailable         |
| other UpstreamError (model, store)  | 500 `{"detail": "Synthesis error: ..."}` | 503 upstream_unavailable           |
| anything else                       | 500 `{"detail": "Synthesis error: <type>"}` | 500 internal_error              |

A refusal is not an error: both faces answer 200 with `refusal: true`. No body ever carries a traceback.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.answer.failures import SearchUnavailable
from functions.common.errors import (
    DomainError,
    InvalidInput,
    NotFound,
    RateLimited,
    Unauthorized,
    UpstreamError,
)
from functions.common.observability import get_logger
from functions.search.errors import describe_validation_errors

logger = get_logger("answer")

TRUST_PREFIX = "/v1/"
HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 400: "invalid_request", 429: "rate_limited"}


@dataclass(frozen=True)
class ErrorReply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def response(self) -> JSONResponse:
        return JSONResponse(self.body, status_code=self.status, headers=self.headers or None)


def is_trust(path: str) -> bool:
    return path.startswith(TRUST_PREFIX)


def trust_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def _validation_field(error: dict[str, Any]) -> str:
    """`("body", "options", "max_sources")` -> "options.max_sources" (only the leading part says where)."""
    location = [str(part) for part in error.get("loc", ())]
    if location and location[0] in ("body", "query", "path", "header"):
        location = location[1:]
    return ".".join(location)


def validation_reply(errors: list[dict[str, Any]], *, trust: bool) -> ErrorReply:
    if not trust:
        return ErrorReply(400, {"detail": describe_validation_errors(errors)})
    first = errors[0] if errors else {}
    name = _validation_field(first)
    if first.get("type") == "json_invalid" or not name:
        message, details = "Invalid request body: not a JSON object", {}
    elif first.get("type") == "missing":
        message, details = f"Missing {name} field", {"field": name}
    else:
        message, details = f"{name}: {first.get('msg', 'invalid value')}", {"field": name}
    if len(errors) > 1:
        details["problems"] = describe_validation_errors(errors)
    return ErrorReply(400, trust_body("invalid_request", message, details))


def error_reply(exc: BaseException, *, trust: bool) -> ErrorReply:
    """The one mapping from an exception to each face's status and body."""
    if isinstance(exc, RequestValidationError):
        return validation_reply(list(exc.errors()), trust=trust)
    if isinstance(exc, InvalidInput):
        if trust:
            details = {"field": exc.field} if exc.field else {}
            return ErrorReply(400, trust_body("invalid_request", exc.message, details))
        return ErrorReply(400, {"detail": exc.message})
    if isinstance(exc, Unauthorized):
        if trust:
            return ErrorReply(401, trust_body("unauthorized", exc.message), {"WWW-Authenticate": "Bearer"})
        return ErrorReply(401, {"detail": "Unauthorized"}, {"WWW-Authenticate": "Bearer"})
    if isinstance(exc, NotFound):
        if trust:
            return ErrorReply(404, trust_body("not_found", exc.message))
        return ErrorReply(404, {"detail": exc.message})
    if isinstance(exc, RateLimited):
        retry_after = max(1, math.ceil(exc.retry_after))
        headers = {"Retry-After": str(retry_after)}
        if trust:
            body = trust_body("rate_limited", "Rate limit exceeded", {"retry_after": retry_after})
            return ErrorReply(429, body, headers)
        return ErrorReply(429, {"detail": "Rate limit exceeded", "retry_after": retry_after}, headers)
    if isinstance(exc, SearchUnavailable):
        if trust:
            return ErrorReply(503, trust_body("upstream_unavailable", exc.message))
        return ErrorReply(503, {"detail": exc.message})
    if isinstance(exc, UpstreamError):
        if trust:
            return ErrorReply(503, trust_body("upstream_unavailable", exc.message))
        return ErrorReply(500, {"detail": f"Synthesis error: {exc.message}"})
    if isinstance(exc, StarletteHTTPException):
        message = str(exc.detail)
        if trust:
            code = HTTP_CODES.get(exc.status_code, "internal_error" if exc.status_code >= 500 else "error")
            return ErrorReply(exc.status_code, trust_body(code, message), dict(exc.headers or {}))
        return ErrorReply(exc.status_code, {"detail": message}, dict(exc.headers or {}))
    message = exc.message if isinstance(exc, DomainError) else type(exc).__name__
    if trust:
        return ErrorReply(500, trust_body("internal_error", "Internal error"))
    return ErrorReply(500, {"detail": f"Synthesis error: {message}"})


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        reply = error_reply(exc, trust=is_trust(request.url.path))
        if reply.status >= 500 and isinstance(exc, DomainError):
            logger.warning("request failed", path=request.url.path, status=reply.status, reason=exc.message)
        elif reply.status >= 500:
            logger.exception("request failed", path=request.url.path, status=reply.status)
        return reply.response()

    app.add_exception_handler(RequestValidationError, handle)
    app.add_exception_handler(StarletteHTTPException, handle)
    app.add_exception_handler(DomainError, handle)
    app.add_exception_handler(Exception, handle)
