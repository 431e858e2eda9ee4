"""Reading Amazon States Language files: every state (nested Map and Parallel included) and what it calls.

The workflow construct derives least-privilege grants from these facts and the infra tests assert the
timeout and retry policy with them, so both read the same definition files that the local runtime runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUBSTITUTION = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
_SERVICE_INTEGRATION = re.compile(
    r"^arn:aws:states:::(?:aws-sdk:)?([a-z0-9-]+):([A-Za-z0-9]+?)(?:\.sync|\.waitForTaskToken)?(?::\d)?$"
)


@dataclass(frozen=True)
class TaskState:
    name: str
    path: tuple[str, ...]  # names of the enclosing states, outermost first
    definition: Mapping[str, Any]

    @property
    def resource(self) -> str:
        return str(self.definition.get("Resource", ""))

    @property
    def invoked_function(self) -> str | None:
        """The `FunctionName` a Lambda task calls (still as `${...}` before substitution), if any."""
        if self.resource == LAMBDA_INVOKE or self.resource.startswith(LAMBDA_INVOKE + "."):
            parameters = self.definition.get("Parameters") or self.definition.get("Arguments") or {}
            name = parameters.get("FunctionName")
            return str(name) if name is not None else None
        if self.resource.startswith("arn:aws:lambda:") or SUBSTITUTION.fullmatch(self.resource):
            return self.resource  # the short form: the Resource is the function ARN itself
        return None

    @property
    def service_action(self) -> tuple[str, str] | None:
        """`("dynamodb", "putItem")` for a service integration task; None for Lambda tasks."""
        if self.invoked_function is not None:
            return None
        match = _SERVICE_INTEGRATION.match(self.resource)
        return (match.group(1), match.group(2)) if match else None


def load(path: Path) -> dict[str, Any]:
    definition: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return definition


def iter_states(
    definition: Mapping[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[str, tuple[str, ...], Mapping[str, Any]]]:
    """Every state of a definition, descending into Map processors and Parallel branches."""
    for name, state in definition.get("States", {}).items():
        yield name, path, state
        inner = state.get("ItemProcessor") or state.get("Iterator")
        if inner:
            yield from iter_states(inner, (*path, name))
        for index, branch in enumerate(state.get("Branches", [])):
            yield from iter_states(branch, (*path, name, str(index)))


def task_states(definition: Mapping[str, Any]) -> list[TaskState]:
    return [
        TaskState(name, path, state)
        for name, path, state in iter_states(definition)
        if state.get("Type") == "Task"
    ]


def substitution_names(path: Path) -> set[str]:
    return set(SUBSTITUTION.findall(path.read_text(encoding="utf-8")))


def distributed_maps(definition: Mapping[str, Any]) -> list[str]:
    return [
        name
        for name, _, state in iter_states(definition)
        if state.get("Type") == "Map"
        and (state.get("ItemProcessor") or {}).get("ProcessorConfig", {}).get("Mode") == "DISTRIBUTED"
    ]
