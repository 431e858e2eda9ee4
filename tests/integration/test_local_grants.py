"""The embedded runtime holds each step Lambda to what its spec declares it uses, as IAM does on AWS."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from functions.common.aws import dynamodb_resource
from functions.common.resources import StepFunctionSpec, Uses
from functions.common.settings import get_settings
from functions.local_runtime import grants
from functions.local_runtime.aws import EmbeddedAws

pytestmark = pytest.mark.integration
WRITER = "tests.integration.runtime_handlers.write_job_record"


def _invoke(function: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Through the Lambda API, as the state machine calls a step."""
    reply = boto3.client("lambda", region_name="us-east-1").invoke(
        FunctionName=function, Payload=json.dumps(payload).encode()
    )
    return {"error": reply.get("FunctionError"), "body": json.loads(reply["Payload"].read())}


def _job_item(job_id: str) -> dict[str, Any] | None:
    table = dynamodb_resource().Table(get_settings().jobs_table)
    item: dict[str, Any] | None = table.get_item(Key={"pk": f"JOB#{job_id}", "sk": "JOB"}).get("Item")
    return item


def test_a_step_writes_what_it_declares_read_write() -> None:
    step = StepFunctionSpec("WriterStep", WRITER, uses=Uses(read_write=("jobs_table",)))
    with EmbeddedAws(step_functions=[step], state_machines=[]):
        reply = _invoke("WriterStep", {"job_id": "declared"})
        assert reply == {"error": None, "body": {"written": True}}
        assert _job_item("declared") is not None


def test_an_undeclared_write_is_refused_and_fails_the_runtime() -> None:
    step = StepFunctionSpec("WriterStep", WRITER, uses=Uses(read=("jobs_table",)))
    with (
        pytest.raises(grants.UndeclaredUse, match=r"WriterStep: dynamodb:PutItem on jobs_table"),
        EmbeddedAws(step_functions=[step], state_machines=[]),
    ):
        reply = _invoke("WriterStep", {"job_id": "read-only"})
        assert reply["error"] is not None
        assert reply["body"]["errorType"] == "ClientError"
        assert "AccessDeniedException" in reply["body"]["errorMessage"]
        assert _job_item("read-only") is None


def test_a_refusal_the_step_swallows_still_fails_the_runtime() -> None:
    """Best-effort bookkeeping (traces, metering) logs and goes on: the runtime still reports the use."""
    step = StepFunctionSpec("WriterStep", WRITER)  # declares nothing
    with (
        pytest.raises(grants.UndeclaredUse, match=r"WriterStep: dynamodb:PutItem on jobs_table"),
        EmbeddedAws(step_functions=[step], state_machines=[]),
    ):
        assert _invoke("WriterStep", {"job_id": "hidden", "swallow": True})["body"] == {"written": False}


def test_calls_outside_a_step_are_not_held() -> None:
    """The runtime's own set-up, the API apps and the tests themselves reach every table."""
    with EmbeddedAws(step_functions=[], state_machines=[]):
        dynamodb_resource().Table(get_settings().jobs_table).put_item(Item={"pk": "JOB#free", "sk": "JOB"})
        assert _job_item("free") is not None
