"""The multi-source face (the multi-source seed, `/api/v1/*`, served by search and answer): `{"detail": <why>}`.

| error                          | status | body                                                   |
|--------------------------------|--------|--------------------------------------------------------|
| invalid body / InvalidInput    | 400    | `{"detail": "<field>: <problem>"}`                     |
| Unauthorized                   | 401    | `{"detail": "Unauthorized"}` (`WWW-Authenticate: Bearer`) |
| NotFound (nothing found)       | 404    | `{"detail": ...}`                                      |
| RateLimited                    | 429    | `{"detail": "Rate limit exceeded", "retry_after": n}`  |
| anything else                  | 500    | `{"detail": "Internal error"}`                         |

Search words every failed connector as `Search error: ...`, answer a failed synthesis as `Synthesis error:
...` (their apps add those rules).
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import InvalidInput, NotFound, RateLimited, Unauthorized
from functions.common.faces.face import ErrorReply, Face, answers, describe_validation_errors, retry_seconds


class MultiSourceError(BaseModel):
    """The multi-source seed's error body (`/api/v1/*`): `{"detail": <why>}`."""

    model_config = ConfigDict(extra="allow")
    detail: str
    retry_after: int | None = None


def reply(status: int, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> ErrorReply:
    return ErrorReply(status, {"detail": detail, **extra}, dict(headers or {}))


def refusal(status: int, code: str, title: str, message: str) -> ErrorReply:
    return reply(status, title)


def validation(exc: RequestValidationError) -> ErrorReply:
    return reply(400, describe_validation_errors(exc.errors()))


def invalid(exc: InvalidInput) -> ErrorReply:
    return reply(400, exc.message)


def unauthorized(exc: Unauthorized) -> ErrorReply:
    return reply(401, "Unauthorized", {"WWW-Authenticate": "Bearer"})


def unauthorized_unchallenged(exc: Unauthorized) -> ErrorReply:
    """The gateway's own 401 body, without a challenge header (search's routes)."""
    return reply(401, "Unauthorized")


def not_found(exc: NotFound) -> ErrorReply:
    return reply(404, exc.message)


def rate_limited(exc: RateLimited) -> ErrorReply:
    seconds = retry_seconds(exc.retry_after)
    return reply(429, "Rate limit exceeded", {"Retry-After": str(seconds)}, retry_after=seconds)


def http_error(exc: StarletteHTTPException) -> ErrorReply:
    return reply(exc.status_code, str(exc.detail), dict(exc.headers or {}))


def http_error_bare(exc: StarletteHTTPException) -> ErrorReply:
    """The status and detail alone, without the framework's headers (search's routes)."""
    return reply(exc.status_code, str(exc.detail))


def internal(exc: BaseException) -> ErrorReply:
    return reply(500, "Internal error")


FACE = Face(
    name="multisource",
    prefixes=("/api/v1/",),
    rules=answers(validation, invalid, unauthorized, not_found, rate_limited, http_error),
    otherwise=internal,
    refusal=refusal,
)
