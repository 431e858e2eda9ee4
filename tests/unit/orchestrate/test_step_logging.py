"""Step handlers log structured JSON carrying the job id, the step and the Lambda request id."""

from __future__ import annotations

import io
import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from functions.orchestrate.contracts import CheckpointOutput, PlanInput, SearchInput, SearchState
from functions.orchestrate.steps import adapter


def _searched(request: SearchInput) -> SearchState:
    return SearchState(round=1)


def _exploded(request: PlanInput) -> CheckpointOutput:
    raise RuntimeError("parser exploded")


def _records(captured: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in captured.splitlines() if line.startswith("{")]


def test_step_logs_carry_job_and_request_ids() -> None:
    search = adapter.step_handler("search", SearchInput, lambda: _searched)
    extract = adapter.step_handler("extract", PlanInput, lambda: _exploded)
    stream = io.StringIO()
    handler = adapter.logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    previous = handler.setStream(stream)
    context = SimpleNamespace(aws_request_id="req-123")

    assert search({"job_id": "job-42"}, context)["round"] == 1
    with pytest.raises(RuntimeError):
        extract({"input": {"job_id": "job-43"}}, context)

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
