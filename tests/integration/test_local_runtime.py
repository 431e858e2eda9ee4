"""The embedded runtime runs a real state machine through real Python handlers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from functions.common.resources import StateMachineSpec, StepFunctionSpec
from functions.local_runtime.aws import EmbeddedAws
from tests.integration import runtime_handlers
from tests.support.embedded_aws import wait_for_execution

pytestmark = pytest.mark.integration
PROBE = Path(__file__).parent / "fixtures" / "runtime_probe.asl.json"


class _ProbeMachine(StateMachineSpec):
    @property
    def path(self) -> Path:
        return PROBE


@pytest.fixture
def embedded() -> Iterator[EmbeddedAws]:
    runtime_handlers.reset()
    handlers = "tests.integration.runtime_handlers"
    functions = [
        StepFunctionSpec(name, f"{handlers}.{attr}", timeout_seconds=60)
        for name, attr in [
            ("SquareFunction", "square"),
            ("FlakyFunction", "flaky"),
            ("ExplodeFunction", "explode"),
            ("SleepyFunction", "sleepy"),
        ]
    ]
    with EmbeddedAws(step_functions=functions, state_machines=[_ProbeMachine("probe", "unused")]) as aws:
        yield aws


def _run(aws: EmbeddedAws, payload: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    arn = sfn.start_execution(
        stateMachineArn=aws.state_machine_arns["probe"], name="probe-run", input=json.dumps(payload)
    )["executionArn"]
    return wait_for_execution(arn, timeout, poll=0.1)


def test_map_retry_catch_and_timeout(embedded: EmbeddedAws) -> None:
    result = _run(embedded, {"numbers": [1, 2, 3, 4, 5], "key": "k1"})

    assert result["status"] == "SUCCEEDED", result
    output = json.loads(result["output"])
    assert output["squares"] == [1, 4, 9, 16, 25]
    assert runtime_handlers.peak_concurrency == 2  # MaxConcurrency bounds the Map
    assert output["flaky"] == {"attempts": 2}  # Retry succeeded on the second attempt
    assert runtime_handlers.calls("k1") == 2
    assert output["explode_error"]["Error"] == "ValueError"  # Catch saw the handler's exception
    assert "could not process" in output["explode_error"]["Cause"]
    assert output["sleepy_error"]["Error"] == "States.Timeout"  # TimeoutSeconds enforced
