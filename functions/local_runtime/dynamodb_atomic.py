"""Makes each moto DynamoDB request atomic, as every single-item operation is on AWS.

moto applies an UpdateItem's actions one by one to the live item and checks a ConditionExpression
before writing without holding a lock. With step handlers on several threads (a Map's iterations),
a reader could see a status already set while the counters of the same update were not, and two
conditional writes could both pass. One lock around every DynamoDB request restores what the job
store and the rate limiter rely on. DynamoDB requests never call back into Lambda, so it cannot
deadlock with the in-process handlers.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from moto.dynamodb.responses import DynamoHandler

_requests = threading.Lock()
_installed = threading.Lock()
_original: Any = None


def install() -> None:
    """Patch moto once per process; idempotent."""
    global _original
    with _installed:
        if _original is not None:
            return
        original = DynamoHandler.call_action

        @functools.wraps(original)
        def call_action(self: DynamoHandler) -> Any:
            with _requests:
                return original(self)

        _original = original
        DynamoHandler.call_action = call_action  # type: ignore[method-assign]


def uninstall() -> None:
    global _original
    with _installed:
        if _original is not None:
            DynamoHandler.call_action = _original  # type: ignore[method-assign]
            _original = None
