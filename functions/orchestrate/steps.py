"""Step Lambdas of the research state machine (statemachine/research.asl.json): parse, call, return.

Each handler is registered in `functions.common.resources.STEP_FUNCTIONS` under its dotted path.
"""

from __future__ import annotations

from typing import Any

from functions.common.observability import get_logger
from functions.orchestrate.workflow import Workflow

logger = get_logger("orchestrate-steps")


def _flow() -> Workflow:
    """The wiring is cheap (clients are cached by functions.common.aws); built per invocation so that it
    always follows the current settings (the local runtime and tests change them)."""
    from functions.orchestrate.wiring import workflow

    return workflow()


def plan(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _flow().plan(event)


def search(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _flow().search(event)


def screen(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _flow().screen(event)


def checkpoint(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _flow().checkpoint(event)


def extract(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _flow().extract(event)


def synthesize(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _flow().synthesize(event)


def finalize(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _flow().finalize(event)


def fail(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _flow().fail(event)
