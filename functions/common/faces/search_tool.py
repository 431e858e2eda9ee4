"""The search tool face (the agent seed's search tool API, `/api/tools/search`, served by search):
`{"error": <what>, "message": <why>}`; the seed gives no validation body, so a 400 reads
`{"error": "Invalid request", "message": "<field>: <problem>"}`, and every connector failing is its 500."""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import InvalidInput, NotFound, RateLimited, Unauthorized, UpstreamError
from functions.common.faces.face import ErrorReply, Face, answers, describe_validation_errors, retry_seconds


class SearchToolError(BaseModel):
    """API 1's search tool error body (`/api/tools/search`): `{"error": <what>, "message": <why>}`."""

    model_config = ConfigDict(extra="allow")
    error: str
    message: str | None = None
    retry_after: int | None = None


def reply(status: int, error: str, message: str) -> ErrorReply:
    return ErrorReply(status, {"error": error, "message": message})


def refusal(status: int, code: str, title: str, message: str) -> ErrorReply:
    return reply(status, title, message)


def validation(exc: RequestValidationError) -> ErrorReply:
    return reply(400, "Invalid request", describe_validation_errors(exc.errors()))


def invalid(exc: InvalidInput) -> ErrorReply:
    return reply(400, "Invalid request", exc.message)


def rate_limited(exc: RateLimited) -> ErrorReply:
    seconds = retry_seconds(exc.retry_after)
    body: dict[str, Any] = {"error": "Rate limit exceeded", "retry_after": seconds}
    return ErrorReply(429, body, {"Retry-After": str(seconds)})


def unauthorized(exc: Unauthorized) -> ErrorReply:
    # the same body as the gateway's 401 (functions/local_runtime/gateway.py `unauthorized_reply`)
    return reply(401, "Unauthorized", exc.message)


def not_found(exc: NotFound) -> ErrorReply:
    return reply(404, "Not found", exc.message)


def connectors_failed(exc: UpstreamError) -> ErrorReply:
    return reply(500, "Search service unavailable", exc.message)


def http_error(exc: StarletteHTTPException) -> ErrorReply:
    return reply(exc.status_code, str(exc.detail), str(exc.detail))


def internal(exc: BaseException) -> ErrorReply:
    return reply(500, "Search service unavailable", "internal error")


FACE = Face(
    name="search_tool",
    prefixes=("/api/tools/search",),
    rules=answers(validation, invalid, rate_limited, unauthorized, not_found, connectors_failed, http_error),
    otherwise=internal,
    refusal=refusal,
)
