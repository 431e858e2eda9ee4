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
from collections.abc import Callable
from typing import Any

from moto.dynamodb.responses import DynamoHandler

from functions.local_runtime.patching import MethodPatch

_requests = threading.Lock()


def _atomic(call_action: Callable[[DynamoHandler], Any]) -> Callable[[DynamoHandler], Any]:
    @functools.wraps(call_action)
    def atomic_call_action(self: DynamoHandler) -> Any:
        with _requests:
            return call_action(self)

    return atomic_call_action


_PATCH = MethodPatch(DynamoHandler, "call_action", _atomic)
install = _PATCH.install
uninstall = _PATCH.uninstall
