"""The embedded runtime runs a real state machine through real Python handlers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from functions.common.aws import dynamodb_resource
from functions.common.resources import StateMachineSpec, StepFunctionSpec
from functions.common.settings import get_settings
from functions.local_runtime.aws import EmbeddedAws
from tests.integration import runtime_handlers
from tests.support.embedded_aws import wait_for_execution

pytestmark = pytest.mark.integration
PROBE = Path(__file__).parent / "fixtures" / "runtime_probe.asl.json"


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
    with EmbeddedAws(step_functions=functions, state_machines=[StateMachineSpec("probe", str(PROBE))]) as aws:
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


def test_each_dynamodb_update_is_atomic_across_threads() -> None:
    """As on AWS: concurrent ADDs are all counted and no reader sees half of an update."""
    writers, updates = 6, 100
    with EmbeddedAws(step_functions=[], state_machines=[]):
        table = dynamodb_resource().Table(get_settings().jobs_table)
        key = {"pk": "JOB#atomic", "sk": "JOB"}
        table.put_item(Item={**key, "a": -1, "b": -1, "n": 0})
        torn: list[dict[str, Any]] = []
        done = threading.Event()

        def write(writer: int) -> None:
            for step in range(updates):
                table.update_item(
                    Key=key,
                    UpdateExpression="SET a = :v, b = :v ADD n :one",
                    ExpressionAttributeValues={":v": writer * updates + step, ":one": 1},
                )

        def read() -> None:
            while not done.is_set():
                item = table.get_item(Key=key)["Item"]
                if item["a"] != item["b"]:
                    torn.append(item)

        reader = threading.Thread(target=read)
        reader.start()
        threads = [threading.Thread(target=write, args=(writer,)) for writer in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done.set()
        reader.join()
        assert table.get_item(Key=key)["Item"]["n"] == writers * updates
        assert torn == []
