"""Faults injected into the embedded runtime while real research jobs run: nothing is lost.

Each test runs the real workflow (HTTP API -> state machine -> step Lambdas in process -> search and
extraction against a local scholarly web) with one kind of fault: a step that crashes once after doing
its work (Step Functions retries it), DynamoDB throttling on job writes, S3 errors on payload reads, an
upstream search API that hangs. Every job must reach a terminal state, its progress never goes
backwards, its record stays whole, and the retries never count anything twice: the job's counters
match the sources, and the usage ledger meters each Lambda invocation exactly once.

The runtime killed mid-job (a process stop and restart) is covered by the durable-runtime tests.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from fastapi.testclient import TestClient

from functions.common.tenancy import DEFAULT_TEAM
from functions.local_runtime import lambda_adapter
from functions.local_runtime.aws import EmbeddedAws
from functions.metering.store import LEDGER, job_pk
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, TopicPaper, environment, serve, topic_papers
from tests.support.embedded_aws import wait_for_execution
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

REGION = "us-east-1"
ON_TOPIC = 12  # more than a rapid job's 10 sources: no refinement round, so counts are exact


@pytest.fixture
def papers() -> list[TopicPaper]:
    return topic_papers(ON_TOPIC, off_topic=2)


@pytest.fixture
def web(papers: list[TopicPaper]) -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as server:
        serve(server, papers)
        yield server


@pytest.fixture
def invocations(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each step Lambda was invoked (counted by the in-process adapter)."""
    counts: Counter[str] = Counter()
    original = lambda_adapter.invoke_in_process

    def counted(function: Any, event: Any) -> tuple[str, bool, str]:
        counts[str(function.function_name)] += 1
        return original(function, event)

    monkeypatch.setattr(lambda_adapter, "invoke_in_process", counted)
    return counts


def _runtime(web: ScholarlyWeb) -> EmbeddedAws:
    reset_workflow_settings_cache()
    env = environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4")
    return EmbeddedAws(extra_environment=env)


def _run_job(client: TestClient, timeout: float = 150) -> tuple[str, list[dict[str, Any]]]:
    """Start a rapid job and poll it to a terminal state; its id and every status answer seen."""
    started = client.post(
        "/api/agent/execute", json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}}
    )
    assert started.status_code == 202, started.text
    job_id = str(started.json()["job_id"])
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = client.get(f"/api/agent/status/{job_id}")
        assert response.status_code == 200, response.text  # the record is never lost or unreadable
        seen.append(response.json())
        if JobStatus(seen[-1]["status"]).terminal:
            return job_id, seen
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} is not terminal: {seen[-1] if seen else None}")


def _assert_forward(history: list[dict[str, Any]]) -> None:
    ranks = [JobStatus(item["status"]).rank for item in history]
    progress = [item["current_phase"]["progress_percentage"] for item in history]
    assert ranks == sorted(ranks), ranks
    assert progress == sorted(progress), progress
    assert progress[-1] == 100


def _job_item(job_id: str) -> dict[str, Any]:
    table = boto3.resource("dynamodb", region_name=REGION).Table("research-jobs")
    item = table.get_item(Key={"pk": f"TEAM#{DEFAULT_TEAM}#JOB#{job_id}", "sk": "JOB"}, ConsistentRead=True)
    return dict(item["Item"])


def _ledger(job_id: str) -> dict[str, Any]:
    table = boto3.resource("dynamodb", region_name=REGION).Table("research-usage")
    item = table.get_item(Key={"pk": job_pk(DEFAULT_TEAM, job_id), "sk": LEDGER}, ConsistentRead=True)
    return dict(item.get("Item") or {})


def _wait_executions() -> None:
    """Steps meter their usage after their last job write: wait until every execution has ended."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    for machine in sfn.list_state_machines()["stateMachines"]:
        for execution in sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]:
            assert wait_for_execution(execution["executionArn"])["status"] in ("SUCCEEDED", "FAILED")


def _assert_counted_once(job_id: str, results: dict[str, Any], invocations: Counter[str]) -> None:
    """The job's counters agree with its sources and queries, and the ledger with the invocations."""
    _wait_executions()
    item = _job_item(job_id)
    sources = results["sources"]
    assert int(item["extract_total"]) == len(sources)
    assert int(item["extract_done"]) == len(sources), item["extract_done"]
    assert int(item["extract_ok"]) == sum(1 for s in sources if s["extraction_success"])
    assert results["execution_summary"]["extractions_successful"] == int(item["extract_ok"])
    assert int(item["queries_done"]) == int(item["queries_total"]), (
        item["queries_done"],
        item["queries_total"],
    )
    events = [(e["event"], e["detail"]) for e in results["audit_trail_summary"]["audit_log"]]
    assert len(events) == len(set(events)), "an audit entry was written twice"
    ledger = _ledger(job_id)
    for function, step in (
        ("ResearchPlanStep", "plan"),
        ("ResearchSearchStep", "search"),
        ("ResearchExtractStep", "extract"),
        ("ResearchSynthesizeStep", "synthesize"),
        ("ResearchFinalizeStep", "finalize"),
    ):
        assert int(ledger.get(f"steps_{step}", 0)) == invocations[function], (step, ledger, invocations)
    assert int(ledger.get("jobs", 0)) <= 1


def test_a_step_that_crashes_once_is_retried_without_counting_twice(
    web: ScholarlyWeb, papers: list[TopicPaper], invocations: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first invocation of each step function does all its work, then the Lambda service reports an
    error (as when the function times out at its very end): Step Functions runs the step again."""
    crashed: set[str] = set()
    lock = threading.Lock()
    counted = lambda_adapter.invoke_in_process

    def crash_once(function: Any, event: Any) -> tuple[str, bool, str]:
        payload, errored, logs = counted(function, event)
        name = str(function.function_name)
        with lock:
            first = name not in crashed and name != "ResearchCheckpointStep"
            crashed.add(name)
        if first and not errored:
            error = {"errorType": "Lambda.ServiceException", "errorMessage": "injected: crashed after work"}
            return json.dumps(error), True, "injected crash"
        return payload, errored, logs

    monkeypatch.setattr(lambda_adapter, "invoke_in_process", crash_once)
    with _runtime(web), TestClient(app) as client:
        job_id, history = _run_job(client)
        _assert_forward(history)
        assert history[-1]["status"] == "COMPLETED", history[-1]
        results = client.get(f"/api/agent/results/{job_id}").json()
        assert len(results["sources"]) == 10
        _assert_counted_once(job_id, results, invocations)
        assert {"ResearchSearchStep", "ResearchExtractStep", "ResearchFinalizeStep"} <= crashed
        assert invocations["ResearchExtractStep"] == 10 + 1  # one retry
        assert invocations["ResearchFinalizeStep"] == 2
        assert client.get(f"/api/agent/status/{job_id}").json()["status"] == "COMPLETED"
    reset_workflow_settings_cache()


def _inject(
    client: Any, event: str, should_fail: Callable[[Any], bool], status: int, body: dict[str, Any]
) -> list[int]:
    """Answer some requests of `client` with an error response before they reach moto (so the write is
    not applied, as with real throttling); botocore's retry handler then sees the error. The count of
    injected failures is in the returned list."""
    failures: list[int] = []

    def before_send(request: Any, **_: Any) -> AWSResponse | None:
        if not should_fail(request):
            return None
        failures.append(1)
        raw = json.dumps(body).encode()
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/x-amz-json-1.0"
        headers["x-amzn-RequestId"] = "injected"
        return AWSResponse(request.url, status, headers, _Raw(raw))

    client.meta.events.register_first(event, before_send)
    return failures


def _body(request: Any) -> str:
    body = request.body or b""
    return body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)


class _Raw:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data

    def read(self, *_: Any) -> bytes:
        return self._data


def test_dynamodb_throttling_on_job_writes_loses_nothing(
    web: ScholarlyWeb, invocations: Counter[str]
) -> None:
    """Every third UpdateItem on the jobs table is throttled; botocore retries it (standard mode)."""
    from functions.common.aws import dynamodb_resource

    with _runtime(web), TestClient(app) as client:
        counter = itertools.count(1)
        failures = _inject(
            dynamodb_resource().meta.client,
            "before-send.dynamodb.UpdateItem",
            lambda request: '"research-jobs"' in _body(request) and next(counter) % 3 == 0,
            400,
            {
                "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "message": "injected: the level of configured provisioned throughput for the table was exceeded",
            },
        )
        job_id, history = _run_job(client)
        _assert_forward(history)
        assert history[-1]["status"] == "COMPLETED", history[-1]
        results = client.get(f"/api/agent/results/{job_id}").json()
        assert len(failures) >= 5, len(failures)
        _assert_counted_once(job_id, results, invocations)
    reset_workflow_settings_cache()


def test_s3_errors_on_payload_reads_are_retried(web: ScholarlyWeb, invocations: Counter[str]) -> None:
    """The first GetObject of every object answers 503 SlowDown; botocore retries it."""
    from functions.common.aws import s3_client

    with _runtime(web), TestClient(app) as client:
        seen: set[str] = set()
        lock = threading.Lock()

        def first_read(request: Any) -> bool:
            with lock:
                first = request.url not in seen
                seen.add(request.url)
            return first

        failures = _inject(
            s3_client(),
            "before-send.s3.GetObject",
            first_read,
            503,
            {"Error": {"Code": "SlowDown", "Message": "injected"}},
        )
        job_id, history = _run_job(client)
        _assert_forward(history)
        assert history[-1]["status"] == "COMPLETED", history[-1]
        results = client.get(f"/api/agent/results/{job_id}").json()
        assert failures, "no payload read was failed"
        _assert_counted_once(job_id, results, invocations)
    reset_workflow_settings_cache()


def test_a_hanging_search_api_does_not_hold_the_job(web: ScholarlyWeb, invocations: Counter[str]) -> None:
    """Semantic Scholar never answers while the job runs (the web holds its answers until it stops): the
    job finishes with the other connectors, records the failure, and counts each query once."""
    hold = web.hold(web.SEMANTIC_SCHOLAR_BASE, limit=200)  # past the job's polling deadline
    with _runtime(web), TestClient(app) as client:
        job_id, history = _run_job(client)
        _assert_forward(history)
        assert history[-1]["status"] in ("COMPLETED", "PARTIAL"), history[-1]
        results = client.get(f"/api/agent/results/{job_id}").json()
        assert "semantic_scholar" in results["execution_summary"]["failed_connectors"]
        _assert_counted_once(job_id, results, invocations)
    assert web.count(web.SEMANTIC_SCHOLAR_BASE) and not hold.outlasted  # asked, and never answered
    reset_workflow_settings_cache()


def test_concurrent_writes_of_one_object_all_succeed() -> None:
    """Two extractions of one paper at once store its cache under one key (bench/load.py met a 500
    here: moto replaced the object while another request still read it)."""
    from concurrent.futures import ThreadPoolExecutor

    from functions.common.aws import s3_client
    from functions.common.settings import get_settings

    with EmbeddedAws(step_functions=[], state_machines=[]):
        s3, bucket = s3_client(), get_settings().data_bucket
        body = b"x" * 200_000

        def put(index: int) -> None:
            s3.put_object(Bucket=bucket, Key="parsed/same-paper.json", Body=body + str(index).encode())
            s3.get_object(Bucket=bucket, Key="parsed/same-paper.json")["Body"].read()

        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(put, range(200)))  # raises if any request failed
