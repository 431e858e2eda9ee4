"""The embedded runtime keeps its data across restarts (functions/local_runtime/durable.py).

In process: the runtime is started three times on one state directory, and everything made through the
API in the first life is found in the next ones; a job whose execution died with the first life, with no
state of it kept, is FAILED, with its reason, as soon as the second starts. Then the real thing: `python
-m functions.local_runtime` serving loopback HTTP is killed with SIGKILL while a job is searching, and
started again: its data is there and the job goes on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from fastapi.testclient import TestClient

from functions.common.resources import StateMachineSpec
from functions.common.settings import get_settings
from functions.common.storage import S3BlobStore
from functions.common.traces import DynamoDbTraceStore
from functions.local_runtime import durable
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.durable import JOURNAL
from functions.local_runtime.gateway import Gateway, load_function_apps
from functions.local_runtime.recovery import INTERRUPTED_REASON
from functions.orchestrate.models import JobStatus
from functions.orchestrate.store import DynamoDbJobStore
from tests.support.pdfgen import sample_paper_pdf
from tests.support.results import results_document
from tests.support.runtime_process import LocalRuntime
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ADMIN_TOKEN = "durable-admin-secret-for-tests"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
ENV = {"AUTH": "required", "ADMIN_TOKEN": ADMIN_TOKEN}
# A research machine whose execution ends at once without the steps: the job it starts stays where
# `submit` left it (not terminal), as a job does whose execution died with the process that ran it.
VANISHING = {"StartAt": "Gone", "States": {"Gone": {"Type": "Pass", "End": True}}}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _runtime(state_dir: Path, machine: Path) -> EmbeddedAws:
    return EmbeddedAws(
        state_machines=[StateMachineSpec("research", str(machine))],
        extra_environment=ENV,
        state_dir=state_dir,
    )


def _complete(team_id: str, job_id: str) -> None:
    """What Finalize writes for a finished job: results and an artifact in S3, COMPLETED in the table."""
    artifacts = S3BlobStore(get_settings().artifacts_bucket)
    results_key, report_key = f"jobs/{job_id}/results.json", f"jobs/{job_id}/report.md"
    artifacts.put_bytes(report_key, b"# Report\n\nKept across restarts.\n", "text/markdown; charset=utf-8")
    document = results_document(job_id, {"report.md": report_key}, {"research_goal": "kept"})
    artifacts.put_bytes(results_key, document, "application/json")
    jobs = DynamoDbJobStore()
    assert jobs.update(
        team_id, job_id, set_fields={"results_key": results_key, "artifacts": {"report.md": report_key}}
    )
    for status in (JobStatus.PLANNING, JobStatus.SYNTHESIZING, JobStatus.COMPLETED):
        assert jobs.update(team_id, job_id, status=status)


def test_everything_made_in_one_life_is_found_in_the_next(tmp_path: Path) -> None:
    state_dir, machine = tmp_path / "state", tmp_path / "research.asl.json"
    machine.write_text(json.dumps(VANISHING))

    with _runtime(state_dir, machine) as aws, TestClient(Gateway(load_function_apps())) as client:
        assert aws.restored == {"dynamodb_items": 0, "s3_objects": 0, "schedules": 0}
        team = client.post("/admin/teams", json={"name": "Durable lab", "tier": "standard"}, headers=ADMIN)
        assert team.status_code == 201, team.text
        team_id, auth = team.json()["team_id"], _bearer(team.json()["token"])
        uploaded = client.post(
            "/v1/documents",
            files={"file": ("paper.pdf", sample_paper_pdf(), "application/pdf")},
            headers=auth,
        )
        assert uploaded.status_code == 201, uploaded.text
        document = client.get(f"/v1/documents/{uploaded.json()['document_id']}", headers=auth).json()
        schedule = client.post(
            "/api/schedules",
            json={
                "schedule_expression": "cron(0 6 * * ? *)",
                "research_goal": "Weekly survey of durable logs",
            },
            headers=auth,
        )
        assert schedule.status_code == 201, schedule.text
        finished, running = (
            client.post("/api/agent/execute", json={"research_goal": goal}, headers=auth)
            for goal in ("Write-ahead logging in embedded stores", "Crash recovery of key-value stores")
        )
        assert finished.status_code == running.status_code == 202, (finished.text, running.text)
        finished_id, running_id = finished.json()["job_id"], running.json()["job_id"]
        _complete(team_id, finished_id)
        event = {
            "event_id": "ev-1",
            "agent": "answer",
            "event_type": "final",
            "timestamp": "2026-11-23T12:00:00Z",
            "payload": {"kept": True},
        }
        DynamoDbTraceStore().put(team_id, "tr-durable", "what survives a restart?", [event])
        before = {
            "document": document,
            "schedule": client.get(f"/api/schedules/{schedule.json()['schedule_id']}", headers=auth).json(),
            "status": client.get(f"/api/agent/status/{finished_id}", headers=auth).json(),
            "results": client.get(f"/api/agent/results/{finished_id}", headers=auth).json(),
            "trace": client.get("/v1/traces/tr-durable", headers=auth).json(),
        }
        assert before["status"]["status"] == "COMPLETED"
        assert client.get(f"/api/agent/status/{running_id}", headers=auth).json()["status"] != "FAILED"

    for life in (2, 3):
        with _runtime(state_dir, machine) as aws, TestClient(Gateway(load_function_apps())) as client:
            assert aws.restored["s3_objects"] >= 3 and aws.restored["schedules"] == 1, aws.restored
            # the running job's execution is gone: FAILED at start-up, once, with its reason
            assert aws.interrupted_jobs == ([f"{team_id}/{running_id}"] if life == 2 else [])
            status = client.get(f"/api/agent/status/{running_id}", headers=auth)  # the token still opens it
            assert status.status_code == 200, status.text
            assert status.json()["status"] == "FAILED"
            failed = client.get(f"/api/agent/results/{running_id}", headers=auth).json()
            assert failed["failure_reason"] == INTERRUPTED_REASON

            after = {
                "document": client.get(f"/v1/documents/{document['document_id']}", headers=auth).json(),
                "schedule": client.get(
                    f"/api/schedules/{schedule.json()['schedule_id']}", headers=auth
                ).json(),
                "status": client.get(f"/api/agent/status/{finished_id}", headers=auth).json(),
                "results": client.get(f"/api/agent/results/{finished_id}", headers=auth).json(),
                "trace": client.get("/v1/traces/tr-durable", headers=auth).json(),
            }
            for name in ("document", "schedule", "trace"):
                assert after[name] == before[name], name
            assert after["status"]["status"] == "COMPLETED"
            assert (
                after["results"]["synthesis"] == before["results"]["synthesis"] == {"research_goal": "kept"}
            )
            report = client.get(f"/api/agent/results/{finished_id}/artifacts/report.md", headers=auth)
            assert report.status_code == 200 and report.content == b"# Report\n\nKept across restarts.\n"
            assert report.headers["content-type"].startswith("text/markdown")
            assert client.get("/api/schedules", headers=auth).json()["count"] == 1


def test_a_torn_last_line_is_skipped_and_the_rest_loads(tmp_path: Path) -> None:
    """A kill in the middle of an append leaves a partial last line: it is ignored, never fatal."""
    state_dir = tmp_path / "state"
    with EmbeddedAws(step_functions=[], state_machines=[], state_dir=state_dir):
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(get_settings().jobs_table)
        item: dict[str, Any] = {
            "pk": "kept",
            "sk": "JOB",
            "n": 3,
            "nested": {"list": [1, "two", b"\x00\xff"]},
            "tags": {"a", "b"},
        }
        table.put_item(Item=item)
        table.put_item(Item={"pk": "deleted", "sk": "JOB"})
        table.delete_item(Key={"pk": "deleted", "sk": "JOB"})
    with open(state_dir / JOURNAL, "ab") as journal:
        journal.write(b'{"t":"ddb","r":"us-east-1","k":["research-jobs",{"S":"torn"')
    with EmbeddedAws(step_functions=[], state_machines=[], state_dir=state_dir) as aws:
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(get_settings().jobs_table)
        assert aws.restored["dynamodb_items"] == 1
        stored: dict[str, Any] = table.get_item(Key={"pk": "kept", "sk": "JOB"})["Item"]
        assert stored["n"] == 3 and stored["tags"] == {"a", "b"}
        assert stored["nested"]["list"][2].value == b"\x00\xff"
        assert "Item" not in table.get_item(Key={"pk": "deleted", "sk": "JOB"})
    # the journal was rewritten compacted: whole lines only, one per live key
    lines = (state_dir / JOURNAL).read_bytes().splitlines(keepends=True)
    assert len(lines) == 1 and all(line.endswith(b"\n") for line in lines)


def test_the_journal_is_compacted_while_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many updates of one item do not grow the journal without bound, and the last one is what loads."""
    monkeypatch.setattr(durable, "_COMPACT_MIN_BYTES", 4096)
    state_dir = tmp_path / "state"
    with EmbeddedAws(step_functions=[], state_machines=[], state_dir=state_dir):
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(get_settings().jobs_table)
        table.put_item(Item={"pk": "busy", "sk": "JOB", "n": 0, "padding": "x" * 200})
        for _ in range(300):
            table.update_item(
                Key={"pk": "busy", "sk": "JOB"},
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": 1},
            )
            assert (state_dir / JOURNAL).stat().st_size < 8192
    with EmbeddedAws(step_functions=[], state_machines=[], state_dir=state_dir):
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(get_settings().jobs_table)
        assert table.get_item(Key={"pk": "busy", "sk": "JOB"})["Item"]["n"] == 300


# --- the real process, killed -------------------------------------------------------------------------


@pytest.fixture
def scholarly_web() -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as web:
        for path in (ScholarlyWeb.ARXIV_PATH, ScholarlyWeb.SEMANTIC_SCHOLAR_PATH, ScholarlyWeb.OPENALEX_PATH):
            web.set_latency(path, 30)  # the job is still searching when the runtime is killed
        yield web


def test_a_hard_killed_runtime_keeps_its_data_and_the_job_it_was_running_goes_on(
    tmp_path: Path, scholarly_web: ScholarlyWeb
) -> None:
    state_dir = tmp_path / "state"
    first = LocalRuntime(state_dir, {**scholarly_web.env(), **ENV})
    try:
        with httpx.Client(base_url=first.base, timeout=30) as client:
            team = client.post("/admin/teams", json={"name": "Killed lab", "tier": "standard"}, headers=ADMIN)
            assert team.status_code == 201, team.text
            auth = _bearer(team.json()["token"])
            uploaded = client.post(
                "/v1/documents",
                files={"file": ("paper.pdf", sample_paper_pdf(), "application/pdf")},
                headers=auth,
            )
            assert uploaded.status_code == 201, uploaded.text
            document_id = uploaded.json()["document_id"]
            schedule = client.post(
                "/api/schedules",
                json={"schedule_expression": "rate(1 day)", "research_goal": "Daily check of crash safety"},
                headers=auth,
            )
            assert schedule.status_code == 201, schedule.text
            job = client.post(
                "/api/agent/execute", json={"research_goal": "Crash-safe logging"}, headers=auth
            )
            assert job.status_code == 202, job.text
            job_id = job.json()["job_id"]
            deadline = time.monotonic() + 30  # wait until the workflow is searching (the upstreams hang)
            searches = (
                ScholarlyWeb.ARXIV_PATH,
                ScholarlyWeb.SEMANTIC_SCHOLAR_PATH,
                ScholarlyWeb.OPENALEX_PATH,
            )
            while not any(scholarly_web.count(path) for path in searches) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert any(scholarly_web.count(path) for path in searches), (
                "the job never reached the search step"
            )
            assert client.get(f"/api/agent/status/{job_id}", headers=auth).json()["status"] not in {
                "COMPLETED",
                "FAILED",
            }
    finally:
        first.kill()  # SIGKILL: no shutdown hook runs

    second = LocalRuntime(state_dir, {**scholarly_web.env(), **ENV})
    try:
        with httpx.Client(base_url=second.base, timeout=30) as client:
            document = client.get(f"/v1/documents/{document_id}", headers=auth)
            assert document.status_code == 200, document.text  # the team token still opens the API
            assert document.json()["filename"] == "paper.pdf"
            kept = client.get(f"/api/schedules/{schedule.json()['schedule_id']}", headers=auth)
            assert kept.status_code == 200 and kept.json()["research_goal"] == "Daily check of crash safety"
            # the job goes on where it was (tests/e2e/test_restart_in_each_step.py follows one to the end)
            assert (
                "1 job(s) were running when the runtime stopped: going on where they were" in second.printed()
            )
            status = client.get(f"/api/agent/status/{job_id}", headers=auth).json()
            assert status["status"] != "FAILED", status
    finally:
        second.kill()
