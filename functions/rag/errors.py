"""The one place where the knowledge base maps errors to the seed's error body.

`{"detail", "status_code", "error_code", "timestamp"}`; request-validation failures become 400 with
the seed's messages (FastAPI's 422 never leaves this app).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import DomainError, InvalidInput, NotFound
from functions.common.observability import get_logger
from functions.rag.api_models import K_MAX, K_MIN, MAX_DOCUMENT_IDS
from functions.rag.loader import KnowledgeBaseUnavailable
from functions.rag.model import RELATION_TYPES, SEED_SEARCHABLE_TYPES

logger = get_logger("rag")

_ERROR_CODES = {
    400: "INVALID_PARAMETER",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    503: "SERVICE_UNAVAILABLE",
    500: "INTERNAL_ERROR",
}


def error_response(status_code: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {
        "detail": detail,
        "status_code": status_code,
        "error_code": _ERROR_CODES.get(status_code, "ERROR"),
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return JSONResponse(
        body, status_code=status_code, headers={"Cache-Control": "no-store", **(headers or {})}
    )


def validation_message(errors: Sequence[Any], path: str) -> str:
    """The seed's message for the first problem FastAPI/pydantic found in the request."""
    if not errors:
        return "request body is invalid"
    error = errors[0]
    loc = [part for part in error.get("loc", ()) if part != "body"]
    kind = str(error.get("type", ""))
    given = error.get("input")
    if not loc or kind in ("json_invalid", "model_attributes_type", "dict_type", "model_type"):
        if loc and loc[0] == "filters":
            return "filters must be an object"
        return "request body must be a JSON object"
    field = str(loc[0])
    if field == "query":
        if kind == "missing":
            return "query is required"
        if kind == "string_type":
            return "query must be a string"
        message = str(error.get("msg", ""))
        return (
            message.removeprefix("Value error, ")
            if kind == "value_error"
            else "query must be at least 3 characters"
        )
    if field == "k":
        if kind in ("int_type", "int_parsing", "int_from_float"):
            return "k must be an integer"
        return f"k must be between {K_MIN} and {K_MAX}"
    if field == "traverse_types":
        if len(loc) >= 2 and kind == "enum":
            valid = SEED_SEARCHABLE_TYPES if path.endswith("/semantic") else RELATION_TYPES
            return f"traverse_types contains invalid value: '{given}'. Valid values: [{', '.join(valid)}]"
        if len(loc) >= 2:
            return "traverse_types values must be strings"
        return "traverse_types must be an array"
    if field == "filters":
        if len(loc) < 2:
            return "filters must be an object"
        key = str(loc[1])
        if kind == "extra_forbidden":
            return f"filter '{key}' is not supported"
        if key == "page_number":
            return "filter 'page_number' must be an integer"
        return f"filter '{key}' must be a string"
    if field == "document_ids":
        if kind == "missing":
            return "document_ids is required"
        if kind == "too_short":
            return "document_ids must contain at least 1 id"
        if kind == "too_long":
            return f"document_ids must contain at most {MAX_DOCUMENT_IDS} ids"
        if len(loc) >= 2:
            return "document_ids must contain only strings"
        return "document_ids must be an array of ids"
    return f"{field} is invalid"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, validation_message(exc.errors(), request.url.path))

    @app.exception_handler(InvalidInput)
    async def on_invalid(request: Request, exc: InvalidInput) -> JSONResponse:
        return error_response(400, exc.message)

    @app.exception_handler(NotFound)
    async def on_not_found(request: Request, exc: NotFound) -> JSONResponse:
        return error_response(404, exc.message)

    @app.exception_handler(KnowledgeBaseUnavailable)
    async def on_unavailable(request: Request, exc: KnowledgeBaseUnavailable) -> JSONResponse:
        return error_response(503, exc.message, headers={"Retry-After": "30"})

    @app.exception_handler(DomainError)
    async def on_domain(request: Request, exc: DomainError) -> JSONResponse:
        logger.warning("domain error", error_code=exc.code, detail=exc.message)
        return error_response(500, "internal error")

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else "request failed"
        return error_response(exc.status_code, detail)

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error")
        return error_response(500, "internal error")
