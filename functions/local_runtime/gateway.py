"""One ASGI app that routes each request to the function app owning its path, like API Gateway.

Each function keeps its own FastAPI app (its own error contract and handlers); the gateway only picks
the app whose routes match, and serves a merged `/openapi.json`, `/docs` and `/redoc`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.routing import Match
from starlette.types import Receive, Scope, Send

FUNCTION_APPS = ("search", "extract", "orchestrate", "rag", "answer")


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
    for name, app in apps.items():
        own = app.openapi()
        for path, item in own.get("paths", {}).items():
            for operation in item.values():
                if isinstance(operation, dict):
                    operation.setdefault("tags", [name])
            spec["paths"][path] = item
        spec["components"]["schemas"].update(own.get("components", {}).get("schemas", {}))
    return spec


def _docs_paths(app: FastAPI) -> set[str]:
    paths = {app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url}
    return {path for path in paths if path}


class Gateway:
    def __init__(self, apps: dict[str, FastAPI]) -> None:
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
        await self.app_for(scope)(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
