"""What every step Lambda shares: its input parsed at the boundary, its output dumped to the JSON the
state machine reads, JSON logs with the job id, step and request id, metering (functions/metering/steps.py),
the container's fair CPU slots (functions/common/outbound/fair_slots.py) and, where a store is installed, the
outputs of finished steps (functions/orchestrate/steps/kept_outputs.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from functions.common import snapstart
from functions.common.errors import StepDeferred
from functions.common.observability import get_logger
from functions.common.outbound.fair_slots import working_for
from functions.metering.steps import metered_step, step_ids
from functions.orchestrate.steps.kept_outputs import keep_output, kept_output

logger = get_logger("orchestrate-steps")
StepHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
StepInput = TypeVar("StepInput", bound=BaseModel)
KeepsOutput = Callable[[BaseModel], bool]


def _always(_output: BaseModel) -> bool:
    return True


def step_handler(
    name: str,
    input_model: type[StepInput],
    build: Callable[[], Callable[[StepInput], BaseModel]],
    *,
    keeps: KeepsOutput | None = _always,
) -> StepHandler:
    """The Lambda handler of the state `name`: `build()` wires the step per invocation (cheap: clients
    are cached by functions.common.aws; it follows the current settings, which tests change).

    `keeps`: whether an output is kept and given again, unmetered, to a repeat of the same payload; None
    for a step that must run every time it is invoked."""

    def run(step: str, event: dict[str, Any], context: Any) -> dict[str, Any]:
        request_id = getattr(context, "aws_request_id", None)
        logger.thread_safe_append_keys(job_id=step_ids(event)[1], step=step, request_id=request_id)
        started = time.perf_counter()
        try:
            parsed = input_model.model_validate(event)
            # CPU-bound work this process shares (PDF parses, embedding passes) goes to teams in turn
            with working_for(step_ids(event)[0]):
                output = build()(parsed)
        except StepDeferred as deferred:  # no fault: the state machine waits for the turn, then runs it again
            logger.info(
                "step deferred",
                reason=str(deferred),
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
            )
            raise
        except Exception:
            logger.exception("step failed", duration_ms=round((time.perf_counter() - started) * 1000, 1))
            raise
        else:
            logger.info("step finished", duration_ms=round((time.perf_counter() - started) * 1000, 1))
            dumped: dict[str, Any] = output.model_dump(mode="json")
            # kept before metering records the step: a stop in between leaves it unbilled, never billed twice
            if keeps is not None and keeps(output):
                keep_output(step, event, dumped)
            return dumped
        finally:
            logger.thread_safe_clear_keys()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if keeps is not None:
            kept = kept_output(name, event)
            if kept is not None:  # it ran and was metered before the workflow's restart
                logger.info("step answered with its kept output", job_id=step_ids(event)[1], step=name)
                return kept
        # Measured and recorded on the job's cost ledger and the team's month (functions/metering).
        return metered_step(name, event, context, run)

    handler.__name__ = handler.__qualname__ = name
    return handler


# What the steps import on first use (the cold start without SnapStart), imported into the snapshot.
snapstart.prime_before_snapshot(
    "numpy", "bm25s", "rapidfuzz.fuzz", "bibtexparser.entrypoint", "tenacity", "functions.common.ml.minilm"
)
