"""Domain errors -> HTTP, in one place. /api/tools/* speaks API 1, /api/v1/* the multi-source seed.

Validation failures answer 400 on both (the multi-source seed's 400 "Invalid request body", and API 1
gives no validation body): `{"error": "Invalid request", "message": "<field>: <problem>"}` for tools,
`{"detail": "<field>: <problem>"}` for v1.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import InvalidInput, NotFound, RateLimited, Unauthorized, UpstreamError
from functions.common.observability import get_logger

logger = get_logger("search")


class SearchToolError(BaseModel):
    """API 1's search tool error body (`/api/tools/search`): `{"error": <what>, "message": <why>}`."""

    model_config = ConfigDict(extra="allow")
    error: str
    message: str | None = None
    retry_after: int | None = None


class MultiSourceError(BaseModel):
    """The multi-source seed's error body (`/api/v1/*`): `{"detail": <why>}`."""

    model_config = ConfigDict(extra="allow")
    detail: str
    retry_after: int | None = None


def _is_v1(request: Request) -> bool:
    return request.url.path.startswith("/api/v1/")


def describe_validation_errors(errors: Any) -> str:
    """'filters.year_range.start: Value error, must be between 1900 and 2026; max_results: ...'"""
    parts = []
    for error in errors:
        location = [str(p) for p in error.get("loc", ()) if p != "body"]
        field = ".".join(location) or "body"
        message = str(error.get("msg", "invalid value"))
        if error.get("type") == "json_invalid":
            field, message = "body", "is not valid JSON"
        elif error.get("type") == "missing":
            message = "is required"
        parts.append(f"{field}: {message}")
    return "; ".join(dict.fromkeys(parts))


def _bad_request(request: Request, message: str) -> JSONResponse:
    if _is_v1(request):
        return JSONResponse({"detail": message}, status_code=400)
    return JSONResponse({"error": "Invalid request", "message": message}, status_code=400)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _bad_request(request, describe_validation_errors(exc.errors()))

    @app.exception_handler(InvalidInput)
    async def invalid(request: Request, exc: InvalidInput) -> JSONResponse:
        return _bad_request(request, exc.message)

    @app.exception_handler(RateLimited)
    async def rate_limited(request: Request, exc: RateLimited) -> JSONResponse:
        retry_after = max(1, math.ceil(exc.retry_after))
        body: dict[str, Any] = (
            {"detail": "Rate limit exceeded", "retry_after": retry_after}
            if _is_v1(request)
            else {"error": "Rate limit exceeded", "retry_after": retry_after}
        )
        return JSONResponse(body, status_code=429, headers={"Retry-After": str(retry_after)})

    @app.exception_handler(Unauthorized)
    async def unauthorized(request: Request, exc: Unauthorized) -> JSONResponse:
        # the same bodies as the gateway's 401 (functions/local_runtime/gateway.py `unauthorized_reply`)
        if _is_v1(request):
            return JSONResponse({"detail": "Unauthorized"}, status_code=401)
        return JSONResponse({"error": "Unauthorized", "message": exc.message}, status_code=401)

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> JSONResponse:
        if _is_v1(request):
            return JSONResponse({"detail": exc.message}, status_code=404)
        return JSONResponse({"error": "Not found", "message": exc.message}, status_code=404)

    @app.exception_handler(UpstreamError)
    async def upstream(request: Request, exc: UpstreamError) -> JSONResponse:
        logger.warning("every connector failed", reason=exc.message)
        if _is_v1(request):
            return JSONResponse({"detail": f"Search error: {exc.message}"}, status_code=500)
        return JSONResponse({"error": "Search service unavailable", "message": exc.message}, status_code=500)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if _is_v1(request):
            return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code)
        return JSONResponse(
            {"error": str(exc.detail), "message": str(exc.detail)}, status_code=exc.status_code
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error")
        if _is_v1(request):
            return JSONResponse({"detail": "Internal error"}, status_code=500)
        return JSONResponse(
            {"error": "Search service unavailable", "message": "internal error"}, status_code=500
        )
