"""The outputs of finished steps, kept where the workflow's executions may not survive their process.

A step the workflow runs again with the same payload (an execution restarted at the state its job had
reached) answers with the output it gave the first time, without running and without being metered again:
its work and its cost were recorded when it ran. On AWS nothing is kept (Step Functions keeps its
executions); the local runtime, whose executions end with its process, keeps them
(functions/local_runtime/resume.py) and installs its store with `keep_outputs_in`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from functions.common.observability import get_logger

logger = get_logger("orchestrate-steps")


class KeptOutputs(Protocol):
    def get(self, step: str, event: Mapping[str, Any]) -> dict[str, Any] | None:
        """The output `step` gave for exactly this payload; None when it never finished with it."""
        ...

    def put(self, step: str, event: Mapping[str, Any], output: dict[str, Any]) -> None: ...


_kept: KeptOutputs | None = None


def keep_outputs_in(store: KeptOutputs | None) -> None:
    """Keep the steps' outputs in `store` from now on (None: keep nothing)."""
    global _kept
    _kept = store


def kept_output(step: str, event: Mapping[str, Any]) -> dict[str, Any] | None:
    store = _kept
    if store is None:
        return None
    try:
        return store.get(step, event)
    except Exception:  # a store that cannot answer makes the step run, as it would without one
        logger.warning("kept step output not read; the step runs", step=step, exc_info=True)
        return None


def keep_output(step: str, event: Mapping[str, Any], output: dict[str, Any]) -> None:
    store = _kept
    if store is None:
        return
    try:
        store.put(step, event, output)
    except Exception:
        logger.warning("step output not kept; a restart would run the step again", step=step, exc_info=True)
