"""The knowledge base face (the knowledge-base seed, `/search/*` and `/entity/*`, served by rag):
`{"detail", "status_code", "error_code", "timestamp"}`, never cached (`Cache-Control: no-store`).
Request-validation failures are 400s in the seed's words (rag's app adds that rule and the 503 of an
index not loaded yet)."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import DomainError, InvalidInput, NotFound
from functions.common.faces.face import ErrorReply, Face, answers

ERROR_CODES = {
    400: "INVALID_PARAMETER",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    503: "SERVICE_UNAVAILABLE",
    500: "INTERNAL_ERROR",
}


# Its docstring is published as the schema's description in the OpenAPI document, word for word.
class KnowledgeBaseError(BaseModel):
    """The knowledge base's error body (functions/rag/errors.py), for every error status."""

    detail: str
    status_code: int
    error_code: str
    timestamp: str


def reply(
    status: int, detail: str, headers: dict[str, str] | None = None, code: str | None = None
) -> ErrorReply:
    body = {
        "detail": detail,
        "status_code": status,
        "error_code": code or ERROR_CODES.get(status, "ERROR"),
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return ErrorReply(status, body, {"Cache-Control": "no-store", **(headers or {})})


def refusal(status: int, code: str, title: str, message: str) -> ErrorReply:
    return reply(status, message, code=code.upper())


def invalid(exc: InvalidInput) -> ErrorReply:
    return reply(400, exc.message)


def not_found(exc: NotFound) -> ErrorReply:
    return reply(404, exc.message)


def internal(exc: BaseException) -> ErrorReply:
    return reply(500, "internal error")


def domain(exc: DomainError) -> ErrorReply:
    """A domain error of no rule above is an internal error here."""
    return internal(exc)


def http_error(exc: StarletteHTTPException) -> ErrorReply:
    return reply(exc.status_code, exc.detail if isinstance(exc.detail, str) else "request failed")


FACE = Face(
    name="kb",
    prefixes=("/search/", "/entity/"),
    rules=answers(invalid, not_found, domain, http_error),
    otherwise=internal,
    refusal=refusal,
)
