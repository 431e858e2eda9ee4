"""The trust face (the trust seed §8.4: `/v1/*`, served by answer and extract's `/v1/documents`, and the
admin API `/admin/*`): `{"error": {"code", "message", "details"}}`.

| error                               | status | code                                   |
|-------------------------------------|--------|----------------------------------------|
| invalid body / InvalidInput         | 400    | invalid_request (`details.field`)      |
| Unauthorized                        | 401    | unauthorized (`WWW-Authenticate: Bearer`) |
| NotFound (document, trace, route)   | 404    | not_found                              |
| method not allowed                  | 405    | method_not_allowed                     |
| RateLimited                         | 429    | rate_limited (`details.retry_after`)   |
| UpstreamError (search, model, store) | 503   | upstream_unavailable                   |
| anything else                       | 500    | internal_error                         |

A refusal is not an error: the answer routes answer 200 with `refusal: true`.
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import InvalidInput, NotFound, RateLimited, Unauthorized, UpstreamError
from functions.common.faces.face import (
    ErrorReply,
    Face,
    answers,
    describe_validation_errors,
    retry_seconds,
    validation_field,
)

HTTP_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    429: "rate_limited",
}
BEARER = {"WWW-Authenticate": "Bearer"}


class TrustErrorDetail(BaseModel):
    code: str
    message: str
    details: dict[str, Any]


class TrustErrorResponse(BaseModel):
    error: TrustErrorDetail


def body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def reply(
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> ErrorReply:
    return ErrorReply(status, body(code, message, details), dict(headers or {}))


def refusal(status: int, code: str, title: str, message: str) -> ErrorReply:
    return reply(status, code, message)


def field_details(field: str | None) -> dict[str, Any]:
    return {"field": field} if field else {}


def validation(exc: RequestValidationError, *, problems: bool = True) -> ErrorReply:
    """The first problem names the field; `problems` lists them all when there are several."""
    errors = list(exc.errors())
    first = errors[0] if errors else {}
    name = validation_field(first)
    if first.get("type") == "json_invalid" or not name:
        message, details = "Invalid request body: not a JSON object", {}
    elif first.get("type") == "missing":
        message, details = f"Missing {name} field", {"field": name}
    else:
        message, details = f"{name}: {first.get('msg', 'invalid value')}", {"field": name}
    if problems and len(errors) > 1:
        details["problems"] = describe_validation_errors(errors)
    return reply(400, "invalid_request", message, details)


def invalid(exc: InvalidInput) -> ErrorReply:
    return reply(400, "invalid_request", exc.message, field_details(exc.field))


def unauthorized(exc: Unauthorized) -> ErrorReply:
    return reply(401, "unauthorized", exc.message, headers=BEARER)


def not_found(exc: NotFound) -> ErrorReply:
    return reply(404, "not_found", exc.message)


def rate_limited(exc: RateLimited) -> ErrorReply:
    seconds = retry_seconds(exc.retry_after)
    details = {"retry_after": seconds}
    return reply(429, "rate_limited", "Rate limit exceeded", details, {"Retry-After": str(seconds)})


def upstream(exc: UpstreamError) -> ErrorReply:
    return reply(503, "upstream_unavailable", exc.message)


def http_error(exc: StarletteHTTPException) -> ErrorReply:
    code = HTTP_CODES.get(exc.status_code, "internal_error" if exc.status_code >= 500 else "error")
    return reply(exc.status_code, code, str(exc.detail), headers=dict(exc.headers or {}))


def internal(exc: BaseException) -> ErrorReply:
    return reply(500, "internal_error", "Internal error")


FACE = Face(
    name="trust",
    prefixes=("/v1/", "/admin/"),
    rules=answers(validation, invalid, unauthorized, not_found, rate_limited, upstream, http_error),
    otherwise=internal,
    refusal=refusal,
    roots=("/v1", "/admin"),
)
