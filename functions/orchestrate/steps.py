"""Step Lambdas of the research state machine (statemachine/research.asl.json): parse, call, return.

Each handler is registered in `functions.common.resources.STEP_FUNCTIONS` under its dotted path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from functions.common import snapstart
from functions.common.fair_slots import working_for
from functions.common.observability import get_logger
from functions.metering.steps import metered_step, step_ids
from functions.orchestrate.workflow import Workflow

logger = get_logger("orchestrate-steps")
StepHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


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


def _run(step: str, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Every step logs as JSON with its job id, step name and Lambda request id."""
    request_id = getattr(context, "aws_request_id", None)
    logger.thread_safe_append_keys(job_id=_job_id(event), step=step, request_id=request_id)
    started = time.perf_counter()
    try:
        phase: Callable[[dict[str, Any]], dict[str, Any]] = getattr(_flow(), step)
        # CPU-bound work this process shares (PDF parses, embedding passes) goes to teams in turn
        with working_for(step_ids(event)[0]):
            result = phase(event)
    except Exception:
        logger.exception("step failed", duration_ms=round((time.perf_counter() - started) * 1000, 1))
        raise
    else:
        logger.info("step finished", duration_ms=round((time.perf_counter() - started) * 1000, 1))
        return result
    finally:
        logger.thread_safe_clear_keys()


def _step(name: str) -> StepHandler:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # Measured and recorded on the job's cost ledger and the team's month (functions/metering).
        return metered_step(name, event, context, _run)

    handler.__name__ = handler.__qualname__ = name
    return handler


# The handlers named in STEP_FUNCTIONS, one per Workflow phase.
plan = _step("plan")
search = _step("search")
screen = _step("screen")
checkpoint = _step("checkpoint")
extract = _step("extract")
synthesize = _step("synthesize")
finalize = _step("finalize")
fail = _step("fail")

# What the steps import on first use (the cold start without SnapStart), imported into the snapshot.
snapstart.prime_before_snapshot(
    "numpy", "bm25s", "rapidfuzz.fuzz", "bibtexparser.entrypoint", "tenacity", "functions.common.minilm"
)
