"""Helpers for tests that drive the embedded runtime's Step Functions and EventBridge."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3

REGION = "us-east-1"


def wait_for_execution(arn: str, timeout: float = 60, poll: float = 0.05) -> dict[str, Any]:
    """Poll until the execution leaves RUNNING; its final description."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return dict(described)
        time.sleep(poll)
    raise AssertionError("execution did not finish")


def events_queue() -> str:
    """An SQS queue subscribed to the workflow's EventBridge events; its URL."""
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = sqs.create_queue(QueueName="research-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events = boto3.client("events", region_name=REGION)
    events.put_rule(Name="research-jobs", EventPattern=json.dumps({"source": ["research.agent"]}))
    events.put_targets(Rule="research-jobs", Targets=[{"Id": "queue", "Arn": queue_arn}])
    return str(queue_url)
