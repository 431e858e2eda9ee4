"""One ASGI app that routes each request to the function app owning its path, like API Gateway.

Each function keeps its own FastAPI app (its own error contract and handlers); the gateway only picks
the app whose routes match, and serves a merged `/openapi.json`, `/docs` and `/redoc`, and the research
console's static files at `/console/` (`functions/local_runtime/console.py`; no token needed, as on CloudFront).

Request bodies are capped as API Gateway caps them (`MAX_BODY_BYTES`, 10 MB): a larger declared
`Content-Length` gets 413 unread, in the error format of the path's contract (`error_reply`); a body
without one is counted as the app reads it and cut off at the cap with the same 413. The `X-Request-Id`
the gateway echoes is bounded (`functions.common.validation.bounded_request_id`). `admission_team` names
the queue a request waits in (functions/local_runtime/admission.py).

Team tokens, as the API Gateway authorizer (`functions/teams/authorizer.py`) enforces them on AWS:
- `AUTH=required` in the environment (read once, when the gateway is built: `make run` reads it at
  start) makes every HTTP request to a function's route carry `Authorization: Bearer <team token>`,
  except the health routes (`/v1/health`, `/api/v1/health`) and `/admin/*` (the admin app checks the
  admin token itself). The docs (`/docs`, `/redoc`, `/openapi.json`) and paths no function owns (404)
  are the gateway's own and need none. Locally there are no API keys: bearer tokens only.
- Without a valid token: 401 in the error format of the path's contract (`unauthorized_reply`), with
  `WWW-Authenticate: Bearer` (RFC 6750: `error="invalid_token"` when a token was sent but is unknown or
  revoked) and the request's `X-Request-Id` echoed (or a new one).
- With one: the request reaches its app with `x-team-id: <team_id>`. A client-sent `x-team-id` is
  always dropped first, with or without AUTH, so it cannot be forged.
- The token is resolved through `functions.teams.wiring.team_service()` (DynamoDB), off the event loop.
  A token that resolved is remembered for `token_cache_seconds` (30 s; unknown tokens are not cached):
  a revoked token keeps working locally for at most that long, like a cached authorizer decision on AWS.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import importlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

from functions.common.faces.registry import face_for
from functions.common.validation import bounded_request_id
from functions.local_runtime.console import DEFAULT_CONSOLE_DIR, ConsoleFiles, is_console_path
from functions.teams.tokens import bearer_token

FUNCTION_APPS = ("search", "extract", "orchestrate", "rag", "answer", "mcp", "admin")


def load_function_apps(names: Sequence[str] = FUNCTION_APPS) -> dict[str, FastAPI]:
    apps: dict[str, FastAPI] = {}
    for name in names:
        module = importlib.import_module(f"functions.{name}.app")
        apps[name] = module.app
    return apps


def merged_openapi(apps: dict[str, FastAPI]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "Evidence-grounded research API (local)",
            "version": "0.1.0",
            "description": "Every function's routes, served by the embedded local runtime.",
        },
        "paths": {},
        "components": {"schemas": {}},
    }
    merged: dict[str, Any] = spec["components"]["schemas"]
    for name, app in apps.items():
        own = copy.deepcopy(app.openapi())
        schemas = own.get("components", {}).get("schemas", {})
        # two apps may name different schemas alike (search's and the knowledge base's SearchResult):
        # the later one is renamed `<App><Name>` and its references follow, so neither is misdescribed
        renames = {
            key: f"{name.capitalize()}{key}"
            for key, schema in schemas.items()
            if key in merged and merged[key] != schema
        }
        if renames:
            own = _rename_refs(own, renames)
            schemas = {renames.get(key, key): schema for key, schema in own["components"]["schemas"].items()}
        for path, item in own.get("paths", {}).items():
            for operation in item.values():
                if isinstance(operation, dict):
                    operation.setdefault("tags", [name])
            spec["paths"][path] = item
        merged.update(schemas)
    return spec


def _rename_refs(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out = {key: _rename_refs(value, renames) for key, value in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(_SCHEMA_REF):
            target = ref[len(_SCHEMA_REF) :]
            out["$ref"] = _SCHEMA_REF + renames.get(target, target)
        return out
    if isinstance(node, list):
        return [_rename_refs(value, renames) for value in node]
    return node


_SCHEMA_REF = "#/components/schemas/"


def _docs_paths(app: FastAPI) -> set[str]:
    paths = {app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url}
    return {path for path in paths if path}


AUTH_ENV = "AUTH"
TEAM_HEADER = b"x-team-id"
REQUEST_ID_HEADER = b"x-request-id"
EXEMPT_PATHS = frozenset({"/v1/health", "/api/v1/health"})
ADMIN_PREFIX = "/admin"
TOKEN_CACHE_SECONDS = 30.0
TOKEN_CACHE_MAX_ENTRIES = 1024
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit

TeamLookup = Callable[[str], str | None]  # a token -> its team's id; None when unknown or revoked
Refusal = Literal["missing", "invalid"]
REFUSAL_MESSAGES: dict[Refusal, str] = {
    "missing": "A bearer token is required: Authorization: Bearer <token>",
    "invalid": "The bearer token is unknown or revoked",
}


def auth_required_from_env() -> bool:
    """`AUTH=required` enforces team tokens; unset (or empty) is today's open gateway."""
    value = os.environ.get(AUTH_ENV, "").strip().lower()
    if value not in ("", "required"):
        raise ValueError(f"{AUTH_ENV} must be 'required' or unset, not {value!r}")
    return value == "required"


def lookup_team(token: str) -> str | None:
    """The team of a live token, through the teams composition root (DynamoDB on the local runtime)."""
    from functions.teams.wiring import team_service

    team = team_service().resolve(token)
    return team.team_id if team is not None else None


class TokenCache:
    """Tokens that resolved, by their SHA-256 (no token is kept), for `ttl` seconds after the lookup."""

    def __init__(
        self,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = TOKEN_CACHE_MAX_ENTRIES,
    ) -> None:
        self._ttl = ttl
        self._clock = clock
        self._max_entries = max_entries
        self._entries: dict[str, tuple[str, float]] = {}  # token hash -> (team id, expiry)

    def get(self, token: str) -> str | None:
        key = hashlib.sha256(token.encode("utf-8")).hexdigest()
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[1] <= self._clock():
            del self._entries[key]
            return None
        return entry[0]

    def put(self, token: str, team_id: str) -> None:
        if self._ttl <= 0:
            return
        now = self._clock()
        if len(self._entries) >= self._max_entries:
            self._entries = {key: entry for key, entry in self._entries.items() if entry[1] > now}
            while len(self._entries) >= self._max_entries:
                del self._entries[next(iter(self._entries))]  # the oldest
        key = hashlib.sha256(token.encode("utf-8")).hexdigest()
        self._entries[key] = (team_id, now + self._ttl)


def error_reply(
    path: str, status: int, code: str, title: str, message: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """A gateway-made error body (and extra headers) in the error format of the face `path` belongs to
    (functions/common/faces/): `code` in snake case ("unauthorized"), `title` a short phrase
    ("Unauthorized"); `{"detail": title}` on a path of no face."""
    face = face_for(path)
    if face is None or face.refusal is None:
        return {"detail": title}, {}
    reply = face.refusal(status, code, title, message)
    return reply.body, reply.headers


def unauthorized_reply(path: str, refusal: Refusal) -> tuple[dict[str, Any], dict[str, str]]:
    """The 401 body (and extra headers) in the error format of the contract `path` belongs to."""
    return error_reply(path, 401, "unauthorized", "Unauthorized", REFUSAL_MESSAGES[refusal])


def too_large_reply(path: str, limit: int) -> tuple[dict[str, Any], dict[str, str]]:
    """The 413 for a request body over `limit` bytes, in the error format of `path`'s contract."""
    message = f"The request body exceeds the {limit // (1024 * 1024)} MB limit"
    return error_reply(path, 413, "payload_too_large", "Payload too large", message)


class _BodyTooLarge(Exception):
    """Raised into the app by the capped `receive`; the gateway answers 413 instead of the app."""


def _header(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class Gateway:
    def __init__(
        self,
        apps: dict[str, FastAPI],
        *,
        auth_required: bool | None = None,
        lookup: TeamLookup = lookup_team,
        token_cache_seconds: float = TOKEN_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        console_dir: Path = DEFAULT_CONSOLE_DIR,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        """`auth_required` None reads `AUTH` from the environment, now (not per request)."""
        self._console = ConsoleFiles(console_dir)
        self.max_body_bytes = max_body_bytes
        self.auth_required = auth_required_from_env() if auth_required is None else auth_required
        self._lookup = lookup
        self._tokens = TokenCache(token_cache_seconds, clock)
        for app in apps.values():
            app.state.gateway = self  # an app that calls the others' routes in process (the MCP server's)
        # each app's own /docs and /openapi.json are left out: the gateway serves merged ones
        self._routes = [
            (app, route)
            for app in apps.values()
            for route in app.router.routes
            if getattr(route, "path", None) not in _docs_paths(app)
        ]
        self._docs = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        spec = merged_openapi(apps)

        @self._docs.get("/openapi.json", include_in_schema=False)
        def openapi() -> JSONResponse:
            return JSONResponse(spec)

        @self._docs.get("/docs", include_in_schema=False)
        def docs() -> HTMLResponse:
            return get_swagger_ui_html(openapi_url="/openapi.json", title="Research API")

        @self._docs.get("/redoc", include_in_schema=False)
        def redoc() -> HTMLResponse:
            return get_redoc_html(openapi_url="/openapi.json", title="Research API")

    def app_for(self, scope: Scope) -> Any:
        if is_console_path(scope.get("path", "")):
            return self._console
        partial = None
        for app, route in self._routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return app
            if match is Match.PARTIAL and partial is None:
                partial = app  # path matches, method does not: that app answers 405
        return partial or self._docs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        app = self.app_for(scope)
        if scope["type"] == "http":
            declared = _header(scope["headers"], b"content-length")
            if declared is not None and declared.strip().isdigit() and int(declared) > self.max_body_bytes:
                await self._too_large(scope)(scope, receive, send)  # refused unread, as API Gateway does
                return
        if scope["type"] in ("http", "websocket"):
            # the team is the gateway's to say: a client's own x-team-id never reaches an app
            headers = [(name, value) for name, value in scope["headers"] if name.lower() != TEAM_HEADER]
            if scope["type"] == "http" and self.auth_required and self._guarded(app, scope["path"]):
                token = bearer_token(_header(headers, b"authorization"))
                team_id = await self._team_of(token) if token is not None else None
                if team_id is None:
                    refusal: Refusal = "missing" if token is None else "invalid"
                    await self._unauthorized(scope["path"], headers, refusal)(scope, receive, send)
                    return
                headers.append((TEAM_HEADER, team_id.encode("latin-1")))
            scope = {**scope, "headers": headers}
        if scope["type"] == "http":
            await self._capped(app, scope, receive, send)
        else:
            await app(scope, receive, send)

    async def _capped(self, app: Any, scope: Scope, receive: Receive, send: Send) -> None:
        """Run `app` with its body counted as it streams in (chunked bodies declare no length): past the
        cap the app's reads fail, whatever it answers is dropped, and the client gets the 413."""
        received = 0
        exceeded = False
        started = False

        async def counted_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    exceeded = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded and not started:
                return  # the app's answer to a body cut short: replaced by the 413 below
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, counted_receive, guarded_send)
        except Exception:
            if not exceeded or started:
                raise
        if exceeded and not started:
            await self._too_large(scope)(scope, receive, send)

    def _too_large(self, scope: Scope) -> JSONResponse:
        body, extra = too_large_reply(scope["path"], self.max_body_bytes)
        request_id = bounded_request_id(_header(scope["headers"], REQUEST_ID_HEADER))
        return JSONResponse(
            body, status_code=413, headers={**extra, "Connection": "close", "X-Request-Id": request_id}
        )

    async def admission_team(self, scope: Scope) -> str:
        """The queue a request waits in before admission (functions/local_runtime/admission.py): the
        team its bearer token belongs to, resolved as for authorisation (and cached alike); without a
        token, the client's `x-team-id` when AUTH is off (only the order of waiting depends on it)."""
        headers = scope.get("headers", [])
        token = bearer_token(_header(headers, b"authorization"))
        if token is not None:
            team_id = await self._team_of(token)
            return f"team:{team_id}" if team_id is not None else "unknown-token"
        claimed = None if self.auth_required else _header(headers, TEAM_HEADER)
        return f"team:{claimed}" if claimed else "anonymous"

    def _guarded(self, app: Any, path: str) -> bool:
        if app is self._docs or app is self._console or path in EXEMPT_PATHS:
            return False  # the gateway's docs and 404s, the console's static files, health checks
        return not (path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/"))

    async def _team_of(self, token: str) -> str | None:
        team_id = self._tokens.get(token)
        if team_id is None:
            team_id = await asyncio.to_thread(self._lookup, token)  # a blocking DynamoDB read
            if team_id is not None:
                self._tokens.put(token, team_id)
        return team_id

    @staticmethod
    def _unauthorized(path: str, headers: Sequence[tuple[bytes, bytes]], refusal: Refusal) -> JSONResponse:
        body, extra = unauthorized_reply(path, refusal)
        challenge = "Bearer" if refusal == "missing" else 'Bearer error="invalid_token"'
        request_id = bounded_request_id(_header(headers, REQUEST_ID_HEADER))
        return JSONResponse(
            body,
            status_code=401,
            headers={**extra, "WWW-Authenticate": challenge, "X-Request-Id": request_id},
        )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
