"""The research state machine on the embedded runtime: failure paths that need no scholarly web."""

from __future__ import annotations

import json

import boto3
import pytest

from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.wiring import job_service
from tests.support.embedded_aws import events_queue, wait_for_execution

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _start_scheduled(aws: EmbeddedAws, name: str, goal: str) -> str:
    """Start the research machine as EventBridge Scheduler does (no job record); the execution ARN."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    return sfn.start_execution(
        stateMachineArn=aws.state_machine_arns["research"],
        name=name,
        input=json.dumps({"research_goal": goal, "source": "schedule"}),
    )["executionArn"]


def test_an_invalid_scheduled_input_ends_as_a_failed_job_with_its_reason() -> None:
    with EmbeddedAws() as aws:
        queue_url = events_queue()
        execution = wait_for_execution(_start_scheduled(aws, "scheduled-bad-goal", "short"))
        status = job_service().status("team-default", "scheduled-bad-goal")
        messages = (
            boto3.client("sqs", region_name="us-east-1")
            .receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
            .get("Messages", [])
        )

    assert execution["status"] == "FAILED" and execution["error"] == "ResearchJobFailed"
    assert status.status == "FAILED" and status.current_phase.progress_percentage == 100
    assert status.failure_reason is not None and "research_goal" in status.failure_reason
    assert status.source == "schedule"
    bodies = [json.loads(message["Body"]) for message in messages]
    assert any(
        b["detail-type"] == "ResearchJobFailed" and b["detail"]["job_id"] == "scheduled-bad-goal"
        for b in bodies
    )


def test_a_failed_job_is_not_moved_by_a_late_step() -> None:
    with EmbeddedAws() as aws:
        service = job_service()
        wait_for_execution(_start_scheduled(aws, "late-step", "x"))
        from functions.orchestrate.steps.screen import handler as screen

        before = service.status("team-default", "late-step")
        screen({"job_id": "late-step", "search_results": [], "refine_results": []}, None)  # a late retry
        after = service.status("team-default", "late-step")
    assert before.status == after.status == "FAILED"
    assert after.failure_reason == before.failure_reason
    assert after.current_phase.progress_percentage == 100
