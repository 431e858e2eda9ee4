"""A circuit breaker per upstream provider, kept in the process (one Lambda container).

closed --(failure_threshold consecutive failures)--> open --(cooldown elapsed)--> half-open
half-open lets one trial call through: success closes the circuit, failure opens it again.
An upstream that says how long to stay away (429 + Retry-After) can open it for that long directly.

State is per container on purpose: a breaker's job is to stop this container from waiting on a dead
upstream; containers learn independently within `failure_threshold` calls, and the shared rate-limit
table already spaces requests across containers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitOpen(Exception):
    def __init__(self, name: str, retry_after: float) -> None:
        super().__init__(f"circuit for {name} is open; retry in {retry_after:.1f} s")
        self.name = name
        self.retry_after = retry_after


@dataclass
class CircuitBreaker:
    name: str
    failure_threshold: int = 5
    cooldown_seconds: float = 30.0
    clock: Callable[[], float] = time.monotonic
    _failures: int = field(default=0, init=False)
    _opened_until: float | None = field(default=None, init=False)
    _trial_in_flight: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> BreakerState:
        if self._opened_until is None:
            return BreakerState.CLOSED
        if self.clock() < self._opened_until:
            return BreakerState.OPEN
        return BreakerState.HALF_OPEN

    def before_call(self) -> None:
        """Raise CircuitOpen unless a call may go through now."""
        with self._lock:
            state = self._state_locked()
            if state is BreakerState.CLOSED:
                return
            if state is BreakerState.OPEN:
                assert self._opened_until is not None
                raise CircuitOpen(self.name, self._opened_until - self.clock())
            if self._trial_in_flight:
                raise CircuitOpen(self.name, self.cooldown_seconds)
            self._trial_in_flight = True

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_until = None
            self._trial_in_flight = False

    def record_failure(self, open_for: float | None = None) -> None:
        with self._lock:
            self._failures += 1
            half_open = self._trial_in_flight
            self._trial_in_flight = False
            if open_for is not None and open_for > 0:
                self._opened_until = self.clock() + open_for
            elif half_open or self._failures >= self.failure_threshold:
                self._opened_until = self.clock() + self.cooldown_seconds

    def release(self) -> None:
        """The call ended without a verdict on the upstream (e.g. our own bad request)."""
        with self._lock:
            self._trial_in_flight = False


class BreakerRegistry:
    def __init__(self, failure_threshold: int = 5, cooldown_seconds: float = 30.0) -> None:
        self._breakers: dict[str, CircuitBreaker] = {}
        self._threshold = failure_threshold
        self._cooldown = cooldown_seconds
        self._lock = threading.Lock()

    def get(self, name: str) -> CircuitBreaker:
        with self._lock:
            if name not in self._breakers:
                self._breakers[name] = CircuitBreaker(name, self._threshold, self._cooldown)
            return self._breakers[name]

    def states(self) -> dict[str, str]:
        with self._lock:
            breakers = dict(self._breakers)
        return {name: breaker.state.value for name, breaker in breakers.items()}
