"""Routes moto's Lambda invocations to the in-process Python handlers.

moto runs Lambda code only inside Docker. Its Step Functions interpreter invokes Lambda through the
(mocked) Lambda API, which ends in `LambdaFunction._invoke_lambda(self, event)` and expects
`(payload_json, errored, logs)`. We replace that one method: the function's `Handler` string
("package.module.function", the same string CDK deploys) is imported and called with the event and a
Lambda-like context. A raised exception becomes `errored=True` with `{"errorType", "errorMessage"}`,
exactly as the Lambda service reports it, so Retry and Catch in the ASL behave as on AWS.

A step Lambda's calls are held to what its spec declares it uses (functions/local_runtime/grants.py),
as IAM holds them on AWS.

For the restart tests, `LOCAL_HOLD_STEP=<function>[:after]` with `LOCAL_HOLD_SIGNAL=<file>` holds the
first invocation of that function in this process, before its handler runs (or, with `:after`, once it
has returned and before Step Functions sees the result): the file is written, and the invocation waits
until it is removed, so a test kills the runtime at a known point, with no timing involved. Limits: handlers share this process's environment (per-function environment
variables are not applied), and a Task that exceeds its TimeoutSeconds fails on time while its Python thread runs on to
completion in the background (threads cannot be killed).
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moto.awslambda.models import LambdaFunction

from functions.local_runtime import grants
from functions.local_runtime.patching import MethodPatch

Handler = Callable[[Any, Any], Any]


@dataclass
class LocalLambdaContext:
    function_name: str
    memory_limit_in_mb: int
    invoked_function_arn: str
    aws_request_id: str
    timeout_seconds: float
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"
    function_version: str = "$LATEST"

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def resolve_handler(dotted: str) -> Handler:
    module_name, _, attribute = dotted.rpartition(".")
    if not module_name:
        raise ValueError(f"handler {dotted!r} is not of the form package.module.function")
    handler: Handler = getattr(importlib.import_module(module_name), attribute)
    return handler


class _Hold:
    """The test hold of `LOCAL_HOLD_STEP` (once per process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = False

    def wait(self, function_name: str, when: str) -> None:
        wanted, _, wanted_when = os.environ.get("LOCAL_HOLD_STEP", "").partition(":")
        signal = os.environ.get("LOCAL_HOLD_SIGNAL")
        if not wanted or wanted != function_name or (wanted_when or "before") != when or not signal:
            return
        with self._lock:
            if self._held:
                return
            self._held = True
        marker = Path(signal)
        marker.write_text(f"{function_name} {when}\n", encoding="utf-8")
        while marker.exists():
            time.sleep(0.05)


_hold = _Hold()


def invoke_in_process(function: Any, event: Any) -> tuple[str, bool, str]:
    """The replacement for `LambdaFunction._invoke_lambda`."""
    if isinstance(event, str | bytes):
        event = json.loads(event or "{}")
    _hold.wait(function.function_name, "before")
    context = LocalLambdaContext(
        function_name=function.function_name,
        memory_limit_in_mb=int(function.memory_size),
        invoked_function_arn=function.function_arn,
        aws_request_id=str(uuid.uuid4()),
        timeout_seconds=float(function.timeout),
    )
    try:
        with grants.invoking(function.function_name):
            result = resolve_handler(function.handler)(event, context)
    except Exception as exc:  # the Lambda service reports every handler exception this way
        error = {
            "errorType": type(exc).__name__,
            "errorMessage": str(exc),
            "stackTrace": traceback.format_exception(exc)[-3:],
        }
        return json.dumps(error), True, f"{type(exc).__name__}: {exc}"
    _hold.wait(function.function_name, "after")
    return json.dumps(result, default=str), False, ""


def _invoke_lambda(self: LambdaFunction, event: Any = None) -> tuple[str, bool, str]:
    return invoke_in_process(self, event)  # looked up per call: bench/job_cost.py wraps it


_PATCH = MethodPatch(LambdaFunction, "_invoke_lambda", lambda _original: _invoke_lambda)
install = _PATCH.install
uninstall = _PATCH.uninstall
