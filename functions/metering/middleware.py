"""Requests by route, per team and month: an ASGI middleware that each metered function app
hands to create_app from its composition root (every app but admin, whose routes are never counted).

A request is counted under its route template (`GET /api/agent/status/{job_id}`, never the raw path)
once its response has been sent: the usage write happens after the last body chunk went out, off the
event loop, and a failure is logged, never raised. Only requests that matched a route and whose team is
known are counted (not `/admin/*`, whose caller is the platform, nor health checks). The LLM tokens and
sources the request used (the answer engine) are recorded with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from functions.common.observability import get_logger
from functions.common.tenancy import team_for
from functions.metering.meter import Meter, metering
from functions.metering.recorder import UsageRecorder

logger = get_logger("metering")

RecorderFactory = Callable[[], UsageRecorder | None]
UNMETERED_PREFIXES = ("/admin",)


def default_recorder() -> UsageRecorder | None:
    from functions.metering.wiring import metering_enabled, request_recorder

    return request_recorder() if metering_enabled() else None


class _Throttled:
    """Logs a failure at most once a minute (with its traceback), counting the ones in between."""

    def __init__(self, seconds: float = 60.0) -> None:
        self.seconds = seconds
        self.last = -seconds
        self.suppressed = 0
        self._lock = threading.Lock()

    def warn(self, message: str, **keys: Any) -> None:
        with self._lock:
            now = time.monotonic()
            if now - self.last < self.seconds:
                self.suppressed += 1
                return
            self.last, suppressed, self.suppressed = now, self.suppressed, 0
        logger.warning(message, suppressed_since_last=suppressed, exc_info=True, **keys)


_failures = _Throttled()


def route_template(scope: Scope) -> str | None:
    """The template of the API route that answered (not the docs' own routes); None when none did."""
    route = scope.get("route")
    return route.path if isinstance(route, APIRoute) else None


def _headers(scope: Scope) -> dict[str, str]:
    return {
        key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers") or []
    }


class UsageMiddleware:
    def __init__(self, app: ASGIApp, recorder: RecorderFactory = default_recorder) -> None:
        self.app = app
        self.recorder = recorder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        meter = Meter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            with metering(meter):
                await self.app(scope, receive, sending)
        finally:
            await self._record(scope, status, meter)

    async def _record(self, scope: Scope, status: int, meter: Meter) -> None:
        template = route_template(scope)
        if template is None or template.startswith(UNMETERED_PREFIXES) or template.endswith("/health"):
            return
        method = str(scope.get("method", "GET"))
        try:
            team_id = team_for(scope, _headers(scope))
        except Exception:  # no team (a missing authorizer context): nobody to bill
            return
        try:
            recorder = self.recorder()
            if recorder is not None:
                await anyio.to_thread.run_sync(
                    recorder.record_request, team_id, method, template, status, meter
                )
        except Exception:
            _failures.warn("request usage not recorded", route=f"{method} {template}")
