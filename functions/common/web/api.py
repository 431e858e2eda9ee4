"""What every function's FastAPI app shares: request ids, structured access logs, app construction, and
the error handlers of the public faces its routers declare (functions/common/faces/).
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated

from aws_lambda_powertools import Logger
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from starlette.datastructures import MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from functions.common.errors import DomainError
from functions.common.faces.face import Face, reraise
from functions.common.settings import get_settings
from functions.common.tenancy import team_for
from functions.common.validation import bounded_request_id, json_text_problem

REQUEST_ID_HEADER = "X-Request-Id"


def create_app(
    *,
    title: str,
    description: str,
    routers: Iterable[tuple[Face, APIRouter]],
    logger: Logger,
    middlewares: Sequence[Callable[[ASGIApp], ASGIApp]] = (),
) -> FastAPI:
    """Each router comes with the face it answers on; the first router's face also answers what matches no
    route and no face's prefix. `middlewares` are the app's own (e.g. usage metering), handed in by its
    composition root: each wraps the request context (its id and access log) and the ones before it, and
    CORS wraps them all."""
    app = FastAPI(title=title, description=description, version="0.1.0")
    faces = RouteFaces()
    for face, router in routers:
        faces.add(face, router)
        app.include_router(router)
    install_face_handlers(app, faces, logger)

    app.add_middleware(RequestContext, owner=app, logger=logger)
    for middleware in middlewares:
        app.add_middleware(middleware)
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


class RequestContext:
    """Each request's id (X-Request-Id, bounded; echoed on the answer and kept in request.state), its
    access log line once the answer starts, and the refusal of a JSON body that is nested too deep or
    carries a lone surrogate. A plain ASGI middleware: `@app.middleware("http")` (BaseHTTPMiddleware)
    ran the app in a task of its own behind memory streams, ~0.5 ms of CPU on every request."""

    def __init__(self, app: ASGIApp, *, owner: FastAPI, logger: Logger) -> None:
        self.app = app
        self.owner = owner
        self.logger = logger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._serve(scope, receive, send)
        else:  # lifespan
            await self.app(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        received: list[Message] = []  # what the body check read, handed on to the app

        async def recording() -> Message:
            message = await receive()
            received.append(message)
            return message

        async def replaying() -> Message:
            return received.pop(0) if received else await receive()

        request = Request(scope, recording)
        request_id = bounded_request_id(request.headers.get(REQUEST_ID_HEADER))
        request.state.request_id = request_id
        self.logger.append_keys(request_id=request_id)
        started = time.perf_counter()

        async def answering(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
                self.logger.info(
                    "request",
                    method=request.method,
                    path=request.url.path,
                    status=message["status"],
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                )
                self.logger.remove_keys(["request_id"])
            await send(message)

        refusal = await _unparseable_json_body(self.owner, request)
        if refusal is not None:
            await refusal(scope, replaying, answering)
        else:
            await self.app(scope, replaying, answering)


class RouteFaces:
    """Which face answers a request: its route's, else the face whose prefix it bears, else the first."""

    def __init__(self) -> None:
        self.faces: list[Face] = []
        self._by_endpoint: dict[object, Face] = {}

    def add(self, face: Face, router: APIRouter) -> None:
        if face not in self.faces:
            self.faces.append(face)
        for route in router.routes:
            endpoint = getattr(route, "endpoint", None)
            if endpoint is not None:
                self._by_endpoint[endpoint] = face

    def of(self, request: Request) -> Face:
        face = self._by_endpoint.get(request.scope.get("endpoint"))  # set once a route matched the path
        if face is not None:
            return face
        path = request.url.path
        return next((face for face in self.faces if face.serves(path)), self.faces[0])


def install_face_handlers(app: FastAPI, faces: RouteFaces, logger: Logger) -> None:
    async def handle(request: Request, exc: Exception) -> Response:
        reply = faces.of(request).reply(exc)
        if reply.status >= 500 and isinstance(exc, DomainError):
            logger.warning("request failed", path=request.url.path, status=reply.status, reason=exc.message)
        elif reply.status >= 500:
            logger.exception("request failed", path=request.url.path, status=reply.status)
        return reply.response()

    kinds = {kind for face in faces.faces for kind, _ in face.rules}
    if any(face.otherwise is not reraise for face in faces.faces):
        # DomainError's handler runs inside the middlewares (the reply keeps its X-Request-Id); Exception's
        # runs outside them all, as the server's last word
        kinds.update((DomainError, Exception))
    for kind in kinds:
        app.add_exception_handler(kind, handle)


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def _unparseable_json_body(app: FastAPI, request: Request) -> Response | None:
    """A JSON body nested too deep or carrying a lone surrogate, answered as the app answers any invalid
    body (its own RequestValidationError handler: its contract's 400 or 422), before FastAPI parses it."""
    if request.method not in _BODY_METHODS:
        return None
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        return None
    problem = json_text_problem(await request.body())  # kept by Starlette for the route to read again
    if problem is None:
        return None
    location = ("body", *problem.location)
    error = RequestValidationError(
        [{"type": "value_error", "loc": location, "msg": problem.message, "input": None}]
    )
    handler = app.exception_handlers.get(RequestValidationError, request_validation_exception_handler)
    response = handler(request, error)
    return await response if inspect.isawaitable(response) else response


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
