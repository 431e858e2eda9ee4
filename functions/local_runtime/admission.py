"""Admission control for the embedded runtime: at most `limit` API requests are served at once, the rest
wait their turn in arrival order.

On AWS every Lambda has its own CPU. Here every route and the workflow's step Lambdas share one process
and its GIL: requests admitted all at once starve each other past their upstream timeouts (100 clients
without a limit: 17 answers of 500/504 in `bench.load`; with 8, none). A waiting request costs only its
socket. Health checks, the docs and the console's static files skip the queue, so a probe or a page load
never waits behind a burst.
"""

from __future__ import annotations

import asyncio
import os

from starlette.types import ASGIApp, Receive, Scope, Send

from functions.local_runtime.console import CONSOLE_PREFIX
from functions.local_runtime.gateway import EXEMPT_PATHS

DEFAULT_LIMIT = 8
# the gateway's own: the health routes it exempts from tokens, its docs, the console's static files
UNQUEUED_PATHS = EXEMPT_PATHS | {"/docs", "/openapi.json", "/redoc"}
UNQUEUED_PREFIXES = (CONSOLE_PREFIX + "/",)


def limit_from_env() -> int | None:
    """`LOCAL_MAX_CONCURRENT_REQUESTS` (default 8); 0 or less admits everything at once."""
    raw = os.environ.get("LOCAL_MAX_CONCURRENT_REQUESTS", "").strip()
    try:
        limit = int(raw) if raw else DEFAULT_LIMIT
    except ValueError:
        raise SystemExit(f"LOCAL_MAX_CONCURRENT_REQUESTS must be an integer, not {raw!r}") from None
    return limit if limit > 0 else None


class Admission:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.app = app
        self.limit = limit
        self._slots: asyncio.Semaphore | None = None  # made inside the server's event loop
        self.in_flight = 0
        self.peak_in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNQUEUED_PATHS or path.startswith(UNQUEUED_PREFIXES):
            await self.app(scope, receive, send)
            return
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limit)
        async with self._slots:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                await self.app(scope, receive, send)
            finally:
                self.in_flight -= 1
