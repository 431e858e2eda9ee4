"""Answers moto's DynamoDB item operations with one `json.dumps` instead of its shape-walking serializer.

moto serialises every response by walking the operation's output shape value by value; for the
recursive `AttributeValue` shape of an item that costs tens of milliseconds for a 20 KB job record,
under the lock that makes each DynamoDB request atomic (dynamodb_atomic.py). Measured with py-spy on
ten concurrent jobs, that walk was half of the process's GIL time: every status poll of every job paid
it, and every step waited behind it. For the item operations the result moto builds is already the
wire form (DynamoDB JSON), so it is dumped as it is: bytes (`B`, `BS`) base64-encoded as the
serializer does, keys whose value is None left out. Anything else (an error, a value of another type,
a control-plane operation with timestamps) goes through moto's serializer as before.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable
from typing import Any

from moto.core.responses import ActionResult
from moto.dynamodb.responses import DynamoHandler

from functions.local_runtime.patching import MethodPatch

ITEM_OPERATIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)
CONTENT_TYPE = "application/x-amz-json-1.0"


class _NotWireForm(TypeError):
    pass


def _encode(value: object) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise _NotWireForm(type(value).__name__)


def wire_body(result: object) -> str | None:
    """The response body of an item operation's result, or None when it is not plain DynamoDB JSON."""
    if not isinstance(result, dict):
        return None
    try:
        return json.dumps({key: value for key, value in result.items() if value is not None}, default=_encode)
    except _NotWireForm:
        return None


Serialized = Callable[[DynamoHandler, ActionResult], Any]


def _fast(serialized: Serialized) -> Serialized:
    @functools.wraps(serialized)
    def fast_serialized(self: DynamoHandler, action_result: ActionResult) -> Any:
        if self._get_action() in ITEM_OPERATIONS and not isinstance(action_result.result, Exception):
            body = wire_body(action_result.result)
            if body is not None:
                headers = {**self.response_headers, "Content-Type": CONTENT_TYPE}
                return 200, headers, body
        return serialized(self, action_result)

    return fast_serialized


_PATCH = MethodPatch(DynamoHandler, "serialized", _fast)
install = _PATCH.install
uninstall = _PATCH.uninstall
