"""What one comprehensive research job costs in AWS charges, from a measured run.

Runs one `comprehensive` job (30 sources) through the API on the embedded runtime against the simulated
scholarly web of bench/workflow.py, and measures what AWS bills for: every Lambda invocation and its
duration (times the memory the CDK app gives that function), Step Functions state transitions (from
the execution history), API Gateway requests, DynamoDB / S3 / EventBridge calls (counted on boto3's
event hooks). It prints the counts and the bill at the us-east-1 on-demand prices below.

    .venv/bin/python -m bench.job_cost [--sources 36] [--status-polls 30]

Durations are this machine's (2 shared cores, simulated upstream latency 0.3-4 s), not Lambda's: the
figure is an estimate. Lambda bills duration in 1 ms steps, so wall time per invocation is used as is.
"""

from __future__ import annotations

import argparse
import collections
import os
import threading
import time
from typing import Any

import boto3
from fastapi.testclient import TestClient

from bench.workflow import simulated_web
from functions.common import resources
from functions.common.aws import reset_clients
from functions.local_runtime import lambda_adapter
from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, NO_POLITENESS, environment, figure, topic_papers

# us-east-1 list prices (USD) used for the estimate; check https://aws.amazon.com/pricing before relying.
PRICES = {
    "lambda_gb_second_arm": 0.0000133334,
    "lambda_request": 0.20 / 1e6,
    "sfn_transition": 0.025 / 1000,
    "apigw_rest_request": 3.50 / 1e6,
    "dynamodb_write_unit": 0.625 / 1e6,
    "dynamodb_read_unit": 0.125 / 1e6,
    "s3_put": 0.005 / 1000,
    "s3_get": 0.0004 / 1000,
    "eventbridge_event": 1.00 / 1e6,
    "xray_trace": 5.00 / 1e6,
}
DYNAMODB_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
DYNAMODB_READS = {"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}
S3_PUTS = {"PutObject", "CopyObject", "CompleteMultipartUpload", "ListObjectsV2", "ListObjects"}
S3_GETS = {"GetObject", "HeadObject"}


class Meter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.invocations: list[tuple[str, float]] = []
        self.calls: collections.Counter[str] = collections.Counter()

    def install(self) -> None:
        original = lambda_adapter.invoke_in_process

        def timed(function: Any, event: Any) -> tuple[str, bool, str]:
            started = time.perf_counter()
            try:
                return original(function, event)
            finally:
                with self.lock:
                    self.invocations.append((function.function_name, time.perf_counter() - started))

        lambda_adapter.invoke_in_process = timed
        boto3.setup_default_session()
        assert boto3.DEFAULT_SESSION is not None
        boto3.DEFAULT_SESSION.events.register("before-call.*.*", self._count)
        reset_clients()

    def _count(self, model: Any, **_: Any) -> None:
        with self.lock:
            self.calls[f"{model.service_model.service_name}:{model.name}"] += 1


def run(sources: int, polls: int) -> None:
    from functions.orchestrate.app import app

    papers = topic_papers(sources, off_topic=4)
    web = simulated_web(papers, seed=11)
    meter = Meter()
    reset_workflow_settings_cache()
    try:
        with EmbeddedAws(extra_environment=environment(web)) as aws, TestClient(app) as client:
            meter.install()
            started = time.perf_counter()
            job_id = client.post(
                "/api/agent/execute",
                json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "comprehensive"}},
            ).json()["job_id"]
            while not JobStatus(client.get(f"/api/agent/status/{job_id}").json()["status"]).terminal:
                time.sleep(0.2)
            wall = time.perf_counter() - started
            results = client.get(f"/api/agent/results/{job_id}").json()
            sfn = boto3.client("stepfunctions", region_name="us-east-1")
            (execution,) = sfn.list_executions(stateMachineArn=aws.state_machine_arns["research"])[
                "executions"
            ]
            history = sfn.get_execution_history(executionArn=execution["executionArn"], maxResults=1000)
            transitions = sum(1 for event in history["events"] if event["type"].endswith("StateEntered"))
    finally:
        web.stop()
        reset_workflow_settings_cache()
    report(meter, transitions, polls, wall, results)


def report(meter: Meter, transitions: int, polls: int, wall: float, results: dict[str, Any]) -> None:
    memory = {spec.logical_id: spec.memory_mb for spec in resources.STEP_FUNCTIONS}
    by_function: dict[str, list[float]] = collections.defaultdict(list)
    for name, seconds in meter.invocations:
        by_function[name].append(seconds)
    summary = results.get("execution_summary", {})
    figure(f"job: status {results.get('status')}, wall {wall:.1f} s, summary {summary}")
    figure(f"\n{'step Lambda':<26}{'calls':>6}{'mean s':>8}{'max s':>8}{'MB':>6}{'GB-s':>9}")
    gb_seconds = 0.0
    for name, durations in sorted(by_function.items()):
        gbs = sum(durations) * memory.get(name, 1024) / 1024
        gb_seconds += gbs
        figure(
            f"{name:<26}{len(durations):>6}{sum(durations) / len(durations):>8.2f}"
            f"{max(durations):>8.2f}{memory.get(name, 1024):>6}{gbs:>9.1f}"
        )
    api_requests = 2 + polls  # execute + results + status polls of a typical client
    api_gb_seconds = api_requests * 0.05 * 512 / 1024  # ~50 ms per API call on the 512 MB function
    invocations = len(meter.invocations) + api_requests
    calls = meter.calls
    dynamo_writes = sum(calls[f"dynamodb:{operation}"] for operation in DYNAMODB_WRITES)
    dynamo_reads = sum(calls[f"dynamodb:{operation}"] for operation in DYNAMODB_READS)
    s3_puts = sum(calls[f"s3:{operation}"] for operation in S3_PUTS)
    s3_gets = sum(calls[f"s3:{operation}"] for operation in S3_GETS)
    events = calls.get("events:PutEvents", 0) + 1  # + the state machine's own ResearchJob* event
    figure(f"\nAWS calls made by the functions: {dict(sorted(calls.items()))}")
    lines = [
        (
            "Lambda duration (arm64)",
            f"{gb_seconds + api_gb_seconds:.1f} GB-s",
            (gb_seconds + api_gb_seconds) * PRICES["lambda_gb_second_arm"],
        ),
        ("Lambda requests", f"{invocations}", invocations * PRICES["lambda_request"]),
        ("Step Functions transitions", f"{transitions}", transitions * PRICES["sfn_transition"]),
        ("API Gateway requests", f"{api_requests}", api_requests * PRICES["apigw_rest_request"]),
        ("DynamoDB writes (<=1 KB)", f"{dynamo_writes}", dynamo_writes * PRICES["dynamodb_write_unit"]),
        ("DynamoDB reads", f"{dynamo_reads}", dynamo_reads * PRICES["dynamodb_read_unit"]),
        ("S3 PUT/LIST", f"{s3_puts}", s3_puts * PRICES["s3_put"]),
        ("S3 GET/HEAD", f"{s3_gets}", s3_gets * PRICES["s3_get"]),
        ("EventBridge events", f"{events}", events * PRICES["eventbridge_event"]),
        ("X-Ray traces", f"{api_requests + 1}", (api_requests + 1) * PRICES["xray_trace"]),
    ]
    figure(f"\n{'charge':<28}{'quantity':>14}{'USD':>12}")
    for label, quantity, usd in lines:
        figure(f"{label:<28}{quantity:>14}{usd:>12.6f}")
    total = sum(usd for _, _, usd in lines)
    figure(f"{'TOTAL per job':<28}{'':>14}{total:>12.6f}   (~${total * 1000:.2f} per 1,000 jobs)")


def main() -> None:
    print(f"conditions: {NO_POLITENESS}")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sources", type=int, default=36, help="on-topic papers on the simulated web")
    parser.add_argument("--status-polls", type=int, default=30, help="status requests a client makes per job")
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    run(args.sources, args.status_polls)


if __name__ == "__main__":
    main()
