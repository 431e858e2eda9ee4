"""The agent face (the agent seed's job API: `/api/agent/*`, with the scheduled research `/api/schedules`,
webhook deliveries `/api/webhooks` and usage `/api/usage*` that the orchestrate app serves beside it, and
the extraction tool `/api/tools/extract`, which words its errors in the tool's own codes):
`{"error": CODE, "message": ..., "field": ...}`; a 429 carries `retry_after`.

| error                          | status | error                                |
|--------------------------------|--------|--------------------------------------|
| invalid body / InvalidInput    | 400    | INVALID_INPUT (`field`)              |
| Unauthorized                   | 401    | UNAUTHORIZED                         |
| NotFound                       | 404    | JOB_NOT_FOUND, or the error's code   |
| Conflict                       | 409    | the error's code                     |
| RateLimited                    | 429    | "Rate limit exceeded" (`retry_after`) |
| UpstreamError, an AWS outage   | 503    | SERVICE_UNAVAILABLE                  |
| another domain error           | 400    | the error's code                     |
| anything else                  | 500    | INTERNAL_ERROR                       |
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import (
    Conflict,
    DomainError,
    InvalidInput,
    NotFound,
    RateLimited,
    Unauthorized,
    UpstreamError,
    aws_outage,
)
from functions.common.faces.face import ErrorReply, Face, answers, storage_outage_message


class AgentError(BaseModel):
    """The agent API's error body (`/api/agent/*`, `/api/tools/extract`, `/api/schedules`, `/api/webhooks`,
    `/api/usage*`): `{"error": CODE, "message": ..., "field": ...}`; a 429 carries `retry_after`."""

    model_config = ConfigDict(extra="allow")
    error: str
    message: str | None = None
    field: str | None = None
    retry_after: int | None = None


def body(code: str, message: str, /, **extra: Any) -> dict[str, Any]:
    """`extra` keys that are None are left out."""
    return {"error": code, "message": message, **{k: v for k, v in extra.items() if v is not None}}


def reply(status: int, code: str, message: str, /, **extra: Any) -> ErrorReply:
    return ErrorReply(status, body(code, message, **extra))


def refusal(status: int, code: str, title: str, message: str) -> ErrorReply:
    return reply(status, code.upper(), message)


def _field_of(location: Any) -> str:
    parts = [str(part) for part in location if part not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def validation(exc: RequestValidationError) -> ErrorReply:
    first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid request"}
    field = _field_of(first.get("loc", ("body",)))
    return reply(400, "INVALID_INPUT", f"{field}: {first.get('msg', 'invalid value')}", field=field)


def invalid(exc: InvalidInput) -> ErrorReply:
    return reply(400, "INVALID_INPUT", exc.message, field=exc.field)


def unauthorized(exc: Unauthorized) -> ErrorReply:
    return reply(401, "UNAUTHORIZED", exc.message)


def not_found(exc: NotFound) -> ErrorReply:
    return reply(404, "JOB_NOT_FOUND" if type(exc).code == NotFound.code else exc.code, exc.message)


def conflict(exc: Conflict) -> ErrorReply:
    return reply(409, exc.code, exc.message)


def rate_limited(exc: RateLimited) -> ErrorReply:
    seconds = max(1, round(exc.retry_after))
    body = {"error": "Rate limit exceeded", "retry_after": seconds}
    return ErrorReply(429, body, {"Retry-After": str(seconds)})


def upstream(exc: UpstreamError) -> ErrorReply:
    return reply(503, "SERVICE_UNAVAILABLE", exc.message)


def domain(exc: DomainError) -> ErrorReply:
    return reply(400, exc.code, exc.message)


def http_error(exc: StarletteHTTPException) -> ErrorReply:
    return reply(exc.status_code, "NOT_FOUND" if exc.status_code == 404 else "HTTP_ERROR", str(exc.detail))


def outage_or_internal(exc: BaseException) -> ErrorReply:
    """S3/DynamoDB throttling or out of reach is an upstream outage (503), not our fault; the rest is 500."""
    outage = aws_outage(exc)
    if outage is not None:
        return reply(503, "SERVICE_UNAVAILABLE", storage_outage_message(outage))
    return reply(500, "INTERNAL_ERROR", "an internal error occurred")


FACE = Face(
    name="agent",
    prefixes=("/api/agent/", "/api/tools/", "/api/schedules", "/api/webhooks"),
    rules=answers(
        validation, invalid, unauthorized, not_found, conflict, rate_limited, upstream, domain, http_error
    ),
    otherwise=outage_or_internal,
    refusal=refusal,
)
