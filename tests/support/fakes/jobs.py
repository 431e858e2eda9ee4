"""The job service's execution starter, recording what it would start (no Step Functions)."""

from __future__ import annotations

from typing import Any


class RecordingStarter:
    def __init__(self) -> None:
        self.started: list[tuple[str, dict[str, Any]]] = []

        self.execution_state: str | None = "RUNNING"
        self.status_checks = 0

    def start(self, name: str, payload: dict[str, Any]) -> str:
        self.started.append((name, payload))
        return f"arn:aws:states:us-east-1:123456789012:execution:research:{name}"

    def execution_status(self, execution_arn: str) -> str | None:
        self.status_checks += 1
        return self.execution_state
