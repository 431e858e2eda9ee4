"""Step handlers log structured JSON carrying the job id, the step and the Lambda request id."""

from __future__ import annotations

import io
import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from functions.orchestrate import steps


class _Flow:
    def search(self, event: dict[str, Any]) -> dict[str, Any]:
        return {"queries_done": 1}

    def extract(self, event: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("parser exploded")


def _records(captured: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in captured.splitlines() if line.startswith("{")]


def test_step_logs_carry_job_and_request_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(steps, "_flow", _Flow)
    stream = io.StringIO()
    handler = steps.logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    previous = handler.setStream(stream)
    context = SimpleNamespace(aws_request_id="req-123")

    assert steps.search({"job_id": "job-42"}, context) == {"queries_done": 1}
    with pytest.raises(RuntimeError):
        steps.extract({"input": {"job_id": "job-43"}}, context)

    handler.setStream(previous)
    finished, failed = _records(stream.getvalue())[-2:]
    assert (finished["message"], finished["job_id"], finished["step"], finished["request_id"]) == (
        "step finished",
        "job-42",
        "search",
        "req-123",
    )
    assert (failed["message"], failed["job_id"], failed["step"], failed["level"]) == (
        "step failed",
        "job-43",
        "extract",
        "ERROR",
    )
    assert "parser exploded" in failed["exception"]
