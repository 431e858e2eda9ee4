"""The deployed stack on LocalStack (after `make deploy-local`): the research workflow runs there.

Skipped unless LOCALSTACK_ENDPOINT (or AWS_ENDPOINT_URL) answers LocalStack's health check.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

import boto3
import httpx
import pytest

from functions.orchestrate.store import JOB_SK

pytestmark = [pytest.mark.localstack, pytest.mark.timeout(600)]
STACK = os.environ.get("LOCALSTACK_STACK_NAME", "EvidenceResearch")


def _endpoint() -> str:
    endpoint = os.environ.get("LOCALSTACK_ENDPOINT") or os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        pytest.skip("set LOCALSTACK_ENDPOINT (e.g. http://localhost:4566) to run against LocalStack")
    try:
        httpx.get(f"{endpoint.rstrip('/')}/_localstack/health", timeout=2).raise_for_status()
    except (httpx.HTTPError, OSError) as exc:
        pytest.skip(f"LocalStack does not answer at {endpoint}: {exc}")
    return endpoint


@pytest.fixture(scope="module")
def localstack() -> dict[str, Any]:
    endpoint = _endpoint()
    session = boto3.session.Session(
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    )
    cloudformation = session.client("cloudformation", endpoint_url=endpoint)
    try:
        (stack,) = cloudformation.describe_stacks(StackName=STACK)["Stacks"]
    except cloudformation.exceptions.ClientError:
        pytest.skip(f"stack {STACK} is not deployed on LocalStack: run `make deploy-local` first")
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}
    resources = cloudformation.describe_stack_resources(StackName=STACK)["StackResources"]
    jobs_table = next(
        r["PhysicalResourceId"]
        for r in resources
        if r["ResourceType"] == "AWS::DynamoDB::Table" and r["LogicalResourceId"].startswith("DataJobsTable")
    )
    return {"session": session, "endpoint": endpoint, "outputs": outputs, "jobs_table": jobs_table}


def test_a_research_job_runs_to_a_terminal_state_on_localstack(localstack: dict[str, Any]) -> None:
    session, endpoint = localstack["session"], localstack["endpoint"]
    sfn = session.client("stepfunctions", endpoint_url=endpoint)
    name = f"localstack-{uuid.uuid4().hex[:12]}"
    arn = sfn.start_execution(
        stateMachineArn=localstack["outputs"]["ResearchStateMachineArn"],
        name=name,
        input=json.dumps(
            {
                "research_goal": "How do retrieval-augmented language models cite their sources?",
                "scope_parameters": {"discovery_depth": "rapid"},
                "source": "schedule",
            }
        ),
    )["executionArn"]
    deadline = time.monotonic() + 540
    while (status := sfn.describe_execution(executionArn=arn)["status"]) == "RUNNING":
        assert time.monotonic() < deadline, "the execution did not finish in 9 minutes"
        time.sleep(2)
    table = session.resource("dynamodb", endpoint_url=endpoint).Table(localstack["jobs_table"])
    record = table.get_item(Key={"pk": f"JOB#{name}", "sk": JOB_SK}, ConsistentRead=True).get("Item")
    assert record, f"no job record for {name} (execution {status})"
    assert record["status"] in ("COMPLETED", "PARTIAL", "FAILED", "REFUSED")


def test_the_api_requires_a_team_credential_on_localstack(localstack: dict[str, Any]) -> None:
    url = localstack["outputs"]["ApiUrl"].rstrip("/")
    response = httpx.post(f"{url}/api/agent/execute", json={"research_goal": "x" * 20}, timeout=30)
    assert response.status_code == 401  # the team authorizer refuses a request without a credential
