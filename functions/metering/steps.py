"""The step Lambdas' metering hook: each invocation of a workflow step is measured and recorded.

`metered_step(step, event, context, run)` wraps each step Lambda's run (functions/orchestrate/steps/adapter.py):
it opens a meter (S3 and DynamoDB calls, LLM tokens, sources and budget reservations of the step land on it),
times the invocation as Lambda bills it: its wall-clock time on Lambda; in the embedded runtime's shared
process, what it would take alone (its CPU plus its waits on upstreams, turns and the parse worker, never
more than its wall-clock time: functions/common/outbound/invocation_time.py), and afterwards records its usage and cost on the job's ledger and the team's month
(functions/metering/recorder.py), whether the step succeeded or raised. The Plan step first writes the
job's budgets to its ledger. Recording never fails a step: a failure is logged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from functions.common.errors import StepDeferred
from functions.common.observability import get_logger
from functions.common.outbound.fair_slots import counting_shared_waits
from functions.common.outbound.invocation_time import (
    InvocationTime,
    install_cpu_timed_loops,
    timing_invocation,
)
from functions.common.settings import on_lambda
from functions.common.tenancy import DEFAULT_TEAM
from functions.metering.meter import Meter, metering
from functions.metering.recorder import StepRun
from functions.metering.usage import TERMINAL_STEPS, step_memory_mb

logger = get_logger("metering")

StepRunner = Callable[[str, dict[str, Any], Any], dict[str, Any]]
UNKNOWN_JOB = "unknown"  # the job of a step event that names none


def _state(event: dict[str, Any]) -> dict[str, Any]:
    for name in ("input", "state"):
        value = event.get(name)
        if isinstance(value, dict):
            return value
    return {}


def step_ids(event: dict[str, Any]) -> tuple[str, str]:
    """(team_id, job_id) of a step event: top level, or in the Plan step's `input` or MarkFailed's
    `state` (itself possibly holding the execution's `input`)."""
    state = _state(event)
    inner = state.get("input")
    nested: dict[str, Any] = inner if isinstance(inner, dict) else {}
    team = event.get("team_id") or state.get("team_id") or nested.get("team_id") or DEFAULT_TEAM
    job = (
        event.get("job_id")
        or state.get("job_id")
        or nested.get("job_id")
        or event.get("execution_name")
        or UNKNOWN_JOB
    )
    return str(team), str(job)


def _memory_mb(step: str, context: Any) -> int:
    configured = getattr(context, "memory_limit_in_mb", None)
    fallback = int(configured) if isinstance(configured, int | str) and str(configured).isdigit() else 1024
    return step_memory_mb(step, default=fallback)


def _open_job(team_id: str, job_id: str, event: dict[str, Any]) -> None:
    from functions.metering.wiring import budgets

    scope = _state(event).get("scope_parameters")
    budgets().open_job(team_id, job_id, scope if isinstance(scope, dict) else {})


def metered_step(step: str, event: dict[str, Any], context: Any, run: StepRunner) -> dict[str, Any]:
    from functions.metering.wiring import metering_enabled

    if not metering_enabled():
        return run(step, event, context)
    # On Lambda the invocation has its environment to itself: its wall-clock time is its bill, and its
    # boto3 calls' network waits (not in `waiting()`) are part of it. Only a shared process needs the
    # CPU-and-waits measure.
    timed = not on_lambda() and install_cpu_timed_loops()
    started, started_cpu = time.perf_counter(), time.thread_time()
    team_id, job_id = step_ids(event)
    meter = Meter()
    result: dict[str, Any] | None = None
    deferred = False
    shared_waits: list[float] = []
    measured = InvocationTime()
    try:
        _instrument()
        with metering(meter), counting_shared_waits() as shared_waits, timing_invocation() as measured:
            if step == "plan":
                _guarded("open the job's ledger", lambda: _open_job(team_id, job_id, event))
            result = run(step, event, context)
        return result
    except StepDeferred:
        deferred = True
        raise
    finally:
        # billed as Lambda would: without waits for other invocations that only one shared process has
        wall = max(0.0, time.perf_counter() - started - sum(shared_waits))
        own_cpu = time.thread_time() - started_cpu
        duration = measured.billed_seconds(wall, own_cpu) if timed else wall
        outcome = None
        if step in TERMINAL_STEPS and result is not None and result.get("moved"):
            outcome = str(result.get("status") or "")
        run_record = StepRun(
            team_id,
            job_id,
            step,
            duration,
            _memory_mb(step, context),
            meter,
            outcome or None,
            closes_job=step in TERMINAL_STEPS and result is not None,
            deferred=deferred,
        )
        _guarded("record the step's usage", lambda: _record(run_record))


def _instrument() -> None:
    from functions.metering.aws_calls import instrument_clients

    _guarded("count the step's AWS calls", instrument_clients)


def _record(run: StepRun) -> None:
    from functions.metering.wiring import budgets, recorder

    cost = recorder().record_step(run)
    if not run.closes_job:  # the last step settles the hold instead
        _guarded("true the job's hold up", lambda: budgets().true_up(run.team_id, run.job_id))
    logger.info(
        "step metered",
        job_id=run.job_id,
        team_id=run.team_id,
        step=run.step,
        cost_usd=round(cost.total_usd, 8),
        duration_ms=round(run.duration_seconds * 1000, 1),
    )


def _guarded(what: str, action: Callable[[], object]) -> None:
    try:
        action()
    except Exception:
        logger.warning(f"metering could not {what}", exc_info=True)
