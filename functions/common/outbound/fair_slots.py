"""A few slots of scarce work (a CPU-bound parse, a model's forward pass) shared fairly between teams.

When several teams' tasks wait, a freed slot goes to a team by fair shares with a bounded lag
(`functions/common/outbound/fair_share.py`: a team with few tasks waiting is served first, but never more than
`lag` slots ahead of the least-served team waiting), then first come within that team; one team's burst
of work therefore cannot make another team's single task wait behind all of it. The team is the one
the running task works for (`working_for`), set once where a request or a workflow step begins and
carried by the context into its coroutines and threads.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from functions.common.outbound.fair_share import FairShare

_TEAM: ContextVar[str] = ContextVar("fair_slots_team", default="")
# What the current invocation waited for slots of pools in which each invocation holds one slot at a time
# (`FairSlots(one_per_invocation=True)`): only other invocations are waited for, and on Lambda every
# invocation has its execution environment to itself, so such waits happen only where invocations share
# one process (the embedded runtime) and are no part of what Lambda would bill.
_SHARED_WAITS: ContextVar[list[float] | None] = ContextVar("fair_slots_shared_waits", default=None)


@contextmanager
def working_for(team_id: str) -> Iterator[None]:
    """The team the current task works for (a workflow step, a request), while the block runs."""
    token = _TEAM.set(team_id)
    try:
        yield
    finally:
        _TEAM.reset(token)


@contextmanager
def counting_shared_waits() -> Iterator[list[float]]:
    """The seconds the block (its coroutines and threads) waits for other invocations' slots."""
    waits: list[float] = []
    token = _SHARED_WAITS.set(waits)
    try:
        yield waits
    finally:
        _SHARED_WAITS.reset(token)


def current_team() -> str:
    return _TEAM.get()


class FairSlots:
    def __init__(self, count: int, lag: int = 2, *, one_per_invocation: bool = False) -> None:
        """`one_per_invocation`: an invocation holds at most one of these slots at a time, so what it
        waits for them is counted as a wait for other invocations (`counting_shared_waits`)."""
        self._count = max(1, count)
        self._one_per_invocation = one_per_invocation
        self._lag = lag
        self._busy = 0
        self._changed = threading.Condition()
        self._waiting: dict[str, deque[object]] = {}
        self._served: dict[str, float] = {}
        self._floor = 0.0

    def _share(self) -> FairShare:
        waiting = Counter({team: len(queue) for team, queue in self._waiting.items() if queue})
        return FairShare(self._served, self._floor, self._lag, waiting)

    def _next(self) -> object | None:
        share = self._share()
        if not share.waiting:
            return None
        team = min(share.waiting, key=share.key)
        return self._waiting[team][0]

    @contextmanager
    def slot(self, team: str | None = None, timeout: float | None = None) -> Iterator[bool]:
        """Hold a slot while the body runs; yields False (no slot held) when `timeout` passed first."""
        team = current_team() if team is None else team
        ticket = object()
        asked = time.monotonic()
        ends = None if timeout is None else asked + timeout
        with self._changed:
            queue = self._waiting.setdefault(team, deque())
            queue.append(ticket)
            while not (self._busy < self._count and self._next() is ticket):
                left = None if ends is None else ends - time.monotonic()
                if left is not None and left <= 0:
                    queue.remove(ticket)
                    self._changed.notify_all()
                    break
                self._changed.wait(left)
            else:
                share = self._share()
                queue.popleft()
                self._busy += 1
                self._floor = share.charge(team, (t for t, q in self._waiting.items() if q))
                granted = True
                ticket = None
            if ticket is not None:
                granted = False
        waits = _SHARED_WAITS.get()
        if self._one_per_invocation and waits is not None:
            waits.append(time.monotonic() - asked)
        try:
            yield granted
        finally:
            if granted:
                with self._changed:
                    self._busy -= 1
                    self._changed.notify_all()
