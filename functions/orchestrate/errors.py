"""Domain errors -> the agent API's error body (`{"error": CODE, "message": ..., "field": ...}`), in one place."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
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
from functions.common.observability import get_logger
from functions.metering.budget import BudgetExceeded
from functions.orchestrate.error_schemas import AgentError as AgentError
from functions.orchestrate.jobs import JobNotFinished

logger = get_logger("orchestrate")


def _body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": code, "message": message, **{k: v for k, v in extra.items() if v is not None}}


def _field_of(location: Any) -> str:
    parts = [str(part) for part in location if part not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def error_response(exc: Exception) -> JSONResponse:
    if isinstance(exc, RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid request"}
        field = _field_of(first.get("loc", ("body",)))
        message = f"{field}: {first.get('msg', 'invalid value')}"
        return JSONResponse(status_code=400, content=_body("INVALID_INPUT", message, field=field))
    if isinstance(exc, InvalidInput):
        return JSONResponse(status_code=400, content=_body("INVALID_INPUT", exc.message, field=exc.field))
    if isinstance(exc, BudgetExceeded):  # 402: money, not rate (docs/usage.md); retrying will not help
        return JSONResponse(status_code=402, content=_body(exc.code, exc.message, **exc.details()))
    if isinstance(exc, JobNotFinished):
        return JSONResponse(status_code=409, content=_body(exc.code, exc.message, status=exc.status))
    if isinstance(exc, Unauthorized):
        return JSONResponse(status_code=401, content=_body("UNAUTHORIZED", exc.message))
    if isinstance(exc, NotFound):
        code = "JOB_NOT_FOUND" if type(exc).code == NotFound.code else exc.code
        return JSONResponse(status_code=404, content=_body(code, exc.message))
    if isinstance(exc, Conflict):
        return JSONResponse(status_code=409, content=_body(exc.code, exc.message))
    if isinstance(exc, RateLimited):
        retry_after = max(1, round(exc.retry_after))
        return JSONResponse(
            status_code=429,
            content={"error": "Rate limit exceeded", "retry_after": retry_after},
            headers={"Retry-After": str(retry_after)},
        )
    if isinstance(exc, UpstreamError):
        return JSONResponse(status_code=503, content=_body("SERVICE_UNAVAILABLE", exc.message))
    if isinstance(exc, DomainError):
        return JSONResponse(status_code=400, content=_body(exc.code, exc.message))
    if isinstance(exc, StarletteHTTPException):
        code = "NOT_FOUND" if exc.status_code == 404 else "HTTP_ERROR"
        return JSONResponse(status_code=exc.status_code, content=_body(code, str(exc.detail)))
    outage = aws_outage(exc)
    if outage is not None:
        logger.warning("AWS outage", reason=outage)
        message = f"a storage service is unavailable ({outage}); retry shortly"
        return JSONResponse(status_code=503, content=_body("SERVICE_UNAVAILABLE", message))
    logger.exception("unhandled error")
    return JSONResponse(status_code=500, content=_body("INTERNAL_ERROR", "an internal error occurred"))


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return error_response(exc)

    for kind in (RequestValidationError, DomainError, StarletteHTTPException, Exception):
        app.add_exception_handler(kind, handle)
