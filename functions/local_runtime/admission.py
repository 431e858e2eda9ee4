"""Admission control for the embedded runtime: at most `limit` API requests are served at once, the rest
wait their turn, taken round-robin across teams.

On AWS every Lambda has its own CPU. Here every route and the workflow's step Lambdas share one process
and its GIL: requests admitted all at once starve each other past their upstream timeouts (100 clients
without a limit: 17 answers of 500/504 in `bench.load`; with 8, none). A waiting request costs only its
socket. Health checks, the docs and the console's static files skip the queue, so a probe or a page load
never waits behind a burst.

Fairness: each team has its own queue (first come, first served within it), and a free slot goes to the
head of the next team's queue in turn. A team's burst of 40 then delays another team's single request
by at most one request per team waiting, not by the 40. The team is the gateway's to say
(`Gateway.admission_team`: the team of the bearer token, as it resolves tokens); without one, the
`x-team-id` header or a hash of the token (`team_from_headers`).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable

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


TeamOf = Callable[[Scope], Awaitable[str]]  # a request -> the queue it waits in


async def team_from_headers(scope: Scope) -> str:
    """`x-team-id`, else a hash of the bearer token (never the token), else one shared queue."""
    token: bytes | None = None
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        key = name.lower()
        if key == b"x-team-id" and value:
            return "team:" + value.decode("latin-1")
        if key == b"authorization" and value[:7].lower() == b"bearer ":
            token = value[7:].strip()
    if token:
        return "token:" + hashlib.sha256(token).hexdigest()[:16]
    return "anonymous"


class TeamQueues:
    """`limit` request slots; waiters queue per team and are served one team after another (round-robin:
    a request holds its slot briefly, unlike the provider turns and forward passes a job asks for in
    batches, which functions/common/outbound/fair_share.py shares)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0
        self._queues: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()  # teams in turn order

    @property
    def waiting(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    async def acquire(self, team: str) -> None:
        if self.in_flight < self.limit and not self._queues:
            self.in_flight += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(team, deque()).append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over as the wait was cancelled: pass it on
            else:
                self._forget(team, waiter)
            raise

    def release(self) -> None:
        """Hand the slot to the head of the next team's queue (it stays in flight), or free it."""
        while self._queues:
            team, queue = next(iter(self._queues.items()))
            waiter = queue.popleft()
            if queue:
                self._queues.move_to_end(team)  # the team's next request waits for every other team
            else:
                del self._queues[team]
            if not waiter.done():
                waiter.set_result(None)
                return
        self.in_flight -= 1

    def _forget(self, team: str, waiter: asyncio.Future[None]) -> None:
        queue = self._queues.get(team)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del self._queues[team]


class Admission:
    def __init__(self, app: ASGIApp, limit: int, team_of: TeamOf = team_from_headers) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.app = app
        self.limit = limit
        self._team_of = team_of
        self._slots: TeamQueues | None = None  # made inside the server's event loop
        self.peak_in_flight = 0

    @property
    def in_flight(self) -> int:
        return self._slots.in_flight if self._slots is not None else 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNQUEUED_PATHS or path.startswith(UNQUEUED_PREFIXES):
            await self.app(scope, receive, send)
            return
        if self._slots is None:
            self._slots = TeamQueues(self.limit)
        slots = self._slots
        await slots.acquire(await self._team_of(scope))
        self.peak_in_flight = max(self.peak_in_flight, slots.in_flight)
        try:
            await self.app(scope, receive, send)
        finally:
            slots.release()
