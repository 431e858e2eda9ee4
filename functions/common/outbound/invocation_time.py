"""The time an invocation would take on a CPU of its own: what a step's Lambda bill is measured from.

On Lambda each invocation has its execution environment to itself, so its duration is the CPU its code
uses plus the time it waits on things outside it (an upstream's answer, a provider's turn, a PDF parsed
in a worker process). The embedded runtime runs every invocation in one Python process on a few cores:
with many at once a step's wall-clock time is mostly spent queued for the CPU and the interpreter lock
behind other invocations, a cost Lambda would not bill. `timing_invocation()` therefore measures, for
the block (its coroutines, and the threads `asyncio.to_thread` runs it on):

- `cpu_seconds`: the CPU time of the block's own thread, plus that of the functions it hands to the
  event loop's default executor (`CpuTimedEventLoopPolicy`, installed once by the step hook);
- `wait_seconds`: the union of the intervals it spent in `waiting()` (outbound requests, provider turns,
  the PDF parse worker): wall-clock time, so a wait that contention stretches is billed stretched.

`InvocationTime.billed_seconds(wall)` is their sum, never more than the wall-clock time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class InvocationTime:
    """CPU seconds and wait intervals of one invocation, added to from its threads."""

    worker_cpu_seconds: float = 0.0
    waits: list[tuple[float, float]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_cpu(self, seconds: float) -> None:
        with self._lock:
            self.worker_cpu_seconds += max(0.0, seconds)

    def add_wait(self, started: float, ended: float) -> None:
        with self._lock:
            self.waits.append((started, max(started, ended)))

    def wait_seconds(self) -> float:
        """The length of the union of the wait intervals (concurrent waits count once)."""
        with self._lock:
            intervals = sorted(self.waits)
        total, reach = 0.0, float("-inf")
        for started, ended in intervals:
            if ended > reach:
                total += ended - max(started, reach)
                reach = ended
        return total

    def billed_seconds(self, wall_seconds: float, own_cpu_seconds: float) -> float:
        """CPU (the block's thread's and its workers') plus waits, at most `wall_seconds`."""
        used = own_cpu_seconds + self.worker_cpu_seconds + self.wait_seconds()
        return max(0.0, min(wall_seconds, used))


_CURRENT: ContextVar[InvocationTime | None] = ContextVar("invocation_time", default=None)


@contextmanager
def timing_invocation() -> Iterator[InvocationTime]:
    """Collect the block's worker CPU and waits (its own thread's CPU is the caller's to read)."""
    measured = InvocationTime()
    token = _CURRENT.set(measured)
    try:
        yield measured
    finally:
        _CURRENT.reset(token)


@contextmanager
def waiting() -> Iterator[None]:
    """Count the block as a wait on something outside the invocation (not its CPU)."""
    measured = _CURRENT.get()
    started = time.monotonic()
    try:
        yield
    finally:
        if measured is not None:
            measured.add_wait(started, time.monotonic())


def cpu_timed(function: Callable[P, R], measured: InvocationTime | None) -> Callable[P, R]:
    """`function`, adding the CPU time of the thread it runs on, while it runs, to `measured`."""

    def timed(*args: P.args, **kwargs: P.kwargs) -> R:
        if measured is None:
            return function(*args, **kwargs)
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            measured.add_cpu(time.thread_time() - started)

    return timed


class CpuTimedExecutor(ThreadPoolExecutor):
    """An event loop's default executor whose work is timed on the CPU for the invocation that hands it
    over (read when it is submitted, on the loop's thread, in the invocation's context)."""

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        return super().submit(cpu_timed(fn, _CURRENT.get()), *args, **kwargs)


class CpuTimedEventLoopPolicy(asyncio.DefaultEventLoopPolicy):
    """New event loops get a `CpuTimedExecutor` as their default executor (the one `to_thread` uses)."""

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        loop.set_default_executor(CpuTimedExecutor(thread_name_prefix="asyncio"))
        return loop


_INSTALL_LOCK = threading.Lock()


def install_cpu_timed_loops() -> bool:
    """Make new event loops time their executors' work (idempotent). False when another custom policy
    (uvloop's, say) is installed: it is left as it is, and its executors' work could not be timed."""
    with _INSTALL_LOCK:
        policy = asyncio.get_event_loop_policy()
        if type(policy) is asyncio.DefaultEventLoopPolicy:
            asyncio.set_event_loop_policy(CpuTimedEventLoopPolicy())
            return True
        return isinstance(policy, CpuTimedEventLoopPolicy)
