"""An `exhaustive` job (50 sources, a refinement round, many decisions and audit entries) stays far from
the service limits: every DynamoDB item under 400 KB, every Step Functions state payload under 256 KB.

The real workflow runs on the embedded runtime against a local scholarly web. Afterwards every item of
every table is scanned and measured, and every state input and output the state machine passed is read
from its execution history (which is where Step Functions enforces the 256 KB limit); every Lambda
event and result the in-process adapter handled is measured too. The asserted margins are half the
limits, so growth shows up here long before production fails.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from functions.common import resources
from functions.common.settings import get_settings
from functions.local_runtime import lambda_adapter
from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, environment, serve, topic_papers
from tests.support.scholarly_web import Reply, ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REGION = "us-east-1"
DYNAMODB_ITEM_LIMIT = 400 * 1024
STATE_PAYLOAD_LIMIT = 256 * 1024
ITEM_MARGIN = 200 * 1024  # asserted: half the DynamoDB limit
PAYLOAD_MARGIN = 128 * 1024  # asserted: half the Step Functions limit


def _size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON: for a DynamoDB item in its typed wire form this is an
    upper bound of the size DynamoDB bills against the 400 KB limit (names + values + type tags)."""
    return len(json.dumps(value, separators=(",", ":"), default=str).encode("utf-8"))


@pytest.fixture
def observed_lambda_payloads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """(function, event bytes, result bytes) of every in-process Lambda invocation."""
    seen: list[tuple[str, int, int]] = []
    original = lambda_adapter.invoke_in_process

    def observe(function: Any, event: Any) -> tuple[str, bool, str]:
        raw = event if isinstance(event, str | bytes) else json.dumps(event, default=str)
        payload, errored, logs = original(function, event)
        seen.append((str(function.function_name), len(raw), len(payload.encode("utf-8"))))
        return payload, errored, logs

    monkeypatch.setattr(lambda_adapter, "invoke_in_process", observe)
    return seen


@pytest.fixture
def web() -> Iterator[ScholarlyWeb]:
    # 48 on-topic papers < the 50 sources an exhaustive job wants: screening refines the queries once.
    # A connector down, 16 PDFs gone and 12 that fail their first step run fill the audit log.
    papers = topic_papers(48, off_topic=8)
    with ScholarlyWeb() as server:
        serve(server, papers)
        server.fail(server.CROSSREF_BASE, "down")
        for paper in papers[:16]:
            server.set_handler(paper.pdf_path, lambda request: Reply.of({"message": "gone"}, 404))
        for paper in papers[16:28]:
            server.fail(paper.pdf_path, "503", times=2)
        yield server


def _scan_all_items() -> dict[str, list[int]]:
    settings = get_settings()
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    sizes: dict[str, list[int]] = {}
    for table in resources.TABLES:
        name = getattr(settings, table.setting)
        for page in dynamodb.get_paginator("scan").paginate(TableName=name):
            sizes.setdefault(name, []).extend(_size(item) for item in page["Items"])
    return sizes


def _state_payloads(execution_arn: str) -> list[tuple[str, str, int]]:
    """(event type, state name, bytes) of every state input/output in the execution history."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    found: list[tuple[str, str, int]] = []
    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn):
        for event in page["events"]:
            for key, value in event.items():
                if not key.endswith("EventDetails") or not isinstance(value, dict):
                    continue
                for field in ("input", "output"):
                    if isinstance(value.get(field), str):
                        found.append((event["type"], str(value.get("name", "")), len(value[field].encode())))
    return found


def test_exhaustive_job_items_and_state_payloads_stay_far_below_limits(
    web: ScholarlyWeb, observed_lambda_payloads: list[tuple[str, int, int]]
) -> None:
    reset_workflow_settings_cache()
    env = environment(web, RESEARCH_EXTRACT_BUDGET_SECONDS="20", RESEARCH_EXTRACT_MAX_CONCURRENCY="8")
    with EmbeddedAws(extra_environment=env) as aws, TestClient(app) as client:
        response = client.post(
            "/api/agent/execute",
            json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "exhaustive"}},
        )
        assert response.status_code == 202, response.text
        job_id = response.json()["job_id"]
        deadline = time.monotonic() + 240
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            status = client.get(f"/api/agent/status/{job_id}").json()
            if JobStatus(status["status"]).terminal:
                break
            time.sleep(0.2)
        assert JobStatus(status["status"]).terminal, status
        assert status["status"] in ("COMPLETED", "PARTIAL"), status
        results = client.get(f"/api/agent/results/{job_id}").json()

        # The job really is a large one: refinement ran, dozens of sources, many decisions and audit entries.
        decisions = status["autonomous_decisions"]
        assert any(d["decision_type"] == "ADAPTIVE_REFINEMENT" for d in decisions)
        assert len(results["sources"]) >= 40, len(results["sources"])
        audit = results["audit_trail_summary"]["audit_log"]
        assert len(decisions) + len(audit) >= 30, (len(decisions), len(audit))

        items = _scan_all_items()
        sfn = boto3.client("stepfunctions", region_name=REGION)
        executions = sfn.list_executions(stateMachineArn=aws.state_machine_arns["research"])["executions"]
        payloads = [p for e in executions for p in _state_payloads(e["executionArn"])]
    reset_workflow_settings_cache()

    all_items = [(table, size) for table, sizes in items.items() for size in sizes]
    assert all_items and payloads and observed_lambda_payloads
    largest_item = max(all_items, key=lambda pair: pair[1])
    largest_state = max(payloads, key=lambda triple: triple[2])
    largest_event = max(observed_lambda_payloads, key=lambda triple: triple[1])
    largest_result = max(observed_lambda_payloads, key=lambda triple: triple[2])
    print(
        f"\nexhaustive job: {len(results['sources'])} sources, {len(decisions)} decisions, "
        f"{len(audit)} audit entries, {len(results['evidence'])} evidence quotes"
        f"\nDynamoDB: {len(all_items)} items in {len(items)} tables; largest {largest_item[1]:,} B in "
        f"{largest_item[0]} (limit {DYNAMODB_ITEM_LIMIT:,} B, asserted < {ITEM_MARGIN:,} B)"
        f"\nStep Functions: {len(payloads)} state inputs/outputs; largest {largest_state[2]:,} B "
        f"({largest_state[0]} {largest_state[1]}) (limit {STATE_PAYLOAD_LIMIT:,} B, asserted < "
        f"{PAYLOAD_MARGIN:,} B)"
        f"\nLambda: {len(observed_lambda_payloads)} invocations; largest event {largest_event[1]:,} B "
        f"({largest_event[0]}), largest result {largest_result[2]:,} B ({largest_result[0]})"
    )
    assert largest_item[1] < ITEM_MARGIN, largest_item
    assert largest_state[2] < PAYLOAD_MARGIN, largest_state
    assert largest_event[1] < PAYLOAD_MARGIN, largest_event
    assert largest_result[2] < PAYLOAD_MARGIN, largest_result
