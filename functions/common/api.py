"""What every function's FastAPI app shares: request ids, structured access logs, app construction.

Error bodies are not shared: each app maps domain errors to its own seed contract in its `errors.py`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated

from aws_lambda_powertools import Logger
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from starlette.middleware.cors import CORSMiddleware

from functions.common.settings import get_settings
from functions.common.tenancy import team_for
from functions.metering.middleware import UsageMiddleware

REQUEST_ID_HEADER = "X-Request-Id"


def create_app(
    *,
    title: str,
    description: str,
    routers: Iterable[APIRouter],
    logger: Logger,
    install_error_handlers: Callable[[FastAPI], None],
) -> FastAPI:
    app = FastAPI(title=title, description=description, version="0.1.0")
    for router in routers:
        app.include_router(router)
    install_error_handlers(app)

    @app.middleware("http")
    async def request_context(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        request_id = request.headers.get(REQUEST_ID_HEADER) or str(uuid.uuid4())
        request.state.request_id = request_id
        logger.append_keys(request_id=request_id)
        started = time.perf_counter()
        response = await call_next(request)
        response.headers[REQUEST_ID_HEADER] = request_id
        logger.info(
            "request",
            method=request.method,
            path=request.url.path,
            status=response.status_code,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        logger.remove_keys(["request_id"])
        return response

    # Counts the request per team, route and month once its response is sent (docs/usage.md).
    app.add_middleware(UsageMiddleware)
    origins = get_settings().cors_origin_list
    if origins:
        # Outermost, so that error answers carry the headers too and a browser can read their bodies. No
        # credentials mode: the console sends its token as an Authorization header, never a cookie.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "X-Api-Key", REQUEST_ID_HEADER],
            expose_headers=[REQUEST_ID_HEADER, "Content-Disposition", "Retry-After"],
            max_age=600,
        )
    return app


def client_identity(request: Request) -> str:
    """Who a request comes from, for per-client limits: the API key when API Gateway passed one."""
    api_key = request.headers.get("x-api-key")
    if api_key:
        return "key:" + uuid.uuid5(uuid.NAMESPACE_OID, api_key).hex  # never keep the key itself
    forwarded = request.headers.get("x-forwarded-for", "")
    if forwarded:
        return "ip:" + forwarded.split(",", 1)[0].strip()
    return "ip:" + (request.client.host if request.client else "unknown")


def request_team(request: Request) -> str:
    """FastAPI dependency: the calling team (see functions/common/tenancy.py)."""
    return team_for(request.scope, request.headers)


TeamId = Annotated[str, Depends(request_team)]
