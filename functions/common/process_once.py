"""One value for the whole process, built on first use: a lock makes sure it is built once even when
several threads ask at the same moment."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ProcessOnce(Generic[T]):
    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value

    def reset(self) -> None:
        """Forget the value: the next `get` builds a new one."""
        with self._lock:
            self._value = None
