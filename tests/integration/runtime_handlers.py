"""Real Python Lambda handlers that the runtime test's state machine invokes in-process."""

from __future__ import annotations

import threading
import time
from typing import Any

from functions.common.errors import RetryableStepError

_lock = threading.Lock()
_active_changed = threading.Condition(_lock)
_calls: dict[str, int] = {}
_active = 0
peak_concurrency = 0


def reset() -> None:
    global _active, peak_concurrency
    with _lock:
        _calls.clear()
        _active = 0
        peak_concurrency = 0


def calls(key: str) -> int:
    with _lock:
        return _calls.get(key, 0)


def square(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Map item worker; records how many run at once. Each waits (a bounded while: the last item may have
    no partner) for a second one to be running, then stays a moment more, during which a third would show
    if the Map ran more than two at once."""
    global _active, peak_concurrency
    with _active_changed:
        _active += 1
        peak_concurrency = max(peak_concurrency, _active)
        _active_changed.notify_all()
        _active_changed.wait_for(lambda: _active >= 2, timeout=5)
    try:
        time.sleep(0.3)
        return {"value": event["value"] ** 2}
    finally:
        with _active_changed:
            _active -= 1


def flaky(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Fails with a retryable error on its first call for a key, succeeds on the second."""
    key = event["key"]
    with _lock:
        _calls[key] = _calls.get(key, 0) + 1
        attempt = _calls[key]
    if attempt == 1:
        raise RetryableStepError(f"transient failure on attempt {attempt}")
    return {"attempts": attempt}


def explode(event: dict[str, Any], context: Any) -> dict[str, Any]:
    raise ValueError("the handler could not process this input")


def sleepy(event: dict[str, Any], context: Any) -> dict[str, Any]:
    time.sleep(event.get("seconds", 3))
    return {"slept": True}


def write_job_record(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Writes one item to the jobs table; `swallow` hides a refused write, as best-effort bookkeeping does."""
    from botocore.exceptions import ClientError

    from functions.common.aws import dynamodb_resource
    from functions.common.settings import get_settings

    table = dynamodb_resource().Table(get_settings().jobs_table)
    try:
        table.put_item(Item={"pk": f"JOB#{event['job_id']}", "sk": "JOB"})
    except ClientError:
        if not event.get("swallow"):
            raise
        return {"written": False}
    return {"written": True}
