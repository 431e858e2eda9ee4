"""Step Lambdas of the research state machine (statemachine/research.asl.json): parse, call, return.

Each handler is registered in `functions.common.resources.STEP_FUNCTIONS` under its dotted path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from functions.common.observability import get_logger
from functions.orchestrate.workflow import Workflow

logger = get_logger("orchestrate-steps")


def _flow() -> Workflow:
    """The wiring is cheap (clients are cached by functions.common.aws); built per invocation so that it
    always follows the current settings (the local runtime and tests change them)."""
    from functions.orchestrate.wiring import workflow

    return workflow()


def _job_id(event: dict[str, Any]) -> str:
    state = event.get("input")
    if not isinstance(state, dict):
        state = {}
    return str(event.get("job_id") or state.get("job_id") or event.get("execution_name") or "unknown")


def _run(
    step: str, event: dict[str, Any], context: Any, call: Callable[[Workflow], dict[str, Any]]
) -> dict[str, Any]:
    """Every step logs as JSON with its job id, step name and Lambda request id."""
    request_id = getattr(context, "aws_request_id", None)
    logger.thread_safe_append_keys(job_id=_job_id(event), step=step, request_id=request_id)
    started = time.perf_counter()
    try:
        result = call(_flow())
    except Exception:
        logger.exception("step failed", duration_ms=round((time.perf_counter() - started) * 1000, 1))
        raise
    else:
        logger.info("step finished", duration_ms=round((time.perf_counter() - started) * 1000, 1))
        return result
    finally:
        logger.thread_safe_clear_keys()


def plan(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run("plan", event, context, lambda flow: flow.plan(event))


def search(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run("search", event, context, lambda flow: flow.search(event))


def screen(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run("screen", event, context, lambda flow: flow.screen(event))


def checkpoint(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run("checkpoint", event, context, lambda flow: flow.checkpoint(event))


def extract(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run("extract", event, context, lambda flow: flow.extract(event))


def synthesize(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run("synthesize", event, context, lambda flow: flow.synthesize(event))


def finalize(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run("finalize", event, context, lambda flow: flow.finalize(event))


def fail(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _run("fail", event, context, lambda flow: flow.fail(event))
