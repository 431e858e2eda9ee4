"""Replacing one method of a moto class while the embedded runtime runs, and putting it back."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class MethodPatch:
    """`install()` sets `owner.name` to `replace(original)`; `uninstall()` restores the original.

    Both are idempotent and serialised, so each EmbeddedAws may call them on start and stop.
    """

    def __init__(self, owner: type, name: str, replace: Callable[[Any], Any]) -> None:
        self._owner = owner
        self._name = name
        self._replace = replace
        self._original: Any = None
        self._lock = threading.Lock()

    def install(self) -> None:
        with self._lock:
            if self._original is None:
                self._original = getattr(self._owner, self._name)
                setattr(self._owner, self._name, self._replace(self._original))

    def uninstall(self) -> None:
        with self._lock:
            if self._original is not None:
                setattr(self._owner, self._name, self._original)
                self._original = None
