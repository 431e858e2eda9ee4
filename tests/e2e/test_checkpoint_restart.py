"""A job waiting at a human checkpoint survives restarts of the embedded runtime (`python -m
functions.local_runtime` on one state directory, over a local scholarly web): stopped cleanly (SIGTERM)
and then killed (SIGKILL) while the job waits after screening, the runtime starts again with the job
waiting at the same checkpoint, since the same moment, with the same payload; approved, it completes."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, environment, serve, topic_papers
from tests.support.runtime_process import LocalRuntime
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]


@pytest.fixture
def web() -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as server:
        serve(server, topic_papers(9, off_topic=3))
        yield server


def _runtime(state_dir: Path, web: ScholarlyWeb) -> LocalRuntime:
    return LocalRuntime(
        state_dir,
        environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4"),
    )


def _status(client: httpx.Client, job_id: str) -> dict[str, Any]:
    response = client.get(f"/api/agent/status/{job_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _waiting(client: httpx.Client, job_id: str, timeout: float = 90) -> dict[str, Any]:
    """The job's status once it waits at a checkpoint."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = _status(client, job_id)
        assert not JobStatus(status["status"]).terminal, status
        if status.get("awaiting_checkpoint"):
            return status
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} never waited at its checkpoint")


def _checkpoint(client: httpx.Client, job_id: str, timeout: float = 60) -> dict[str, Any]:
    """What the checkpoint shows, once the execution has armed it (until then: 409, nothing waits)."""
    deadline = time.monotonic() + timeout
    while True:
        shown = client.get(f"/api/agent/checkpoint/{job_id}")
        if shown.status_code == 200 or time.monotonic() > deadline:
            break
        assert shown.status_code == 409, shown.text
        time.sleep(0.2)
    assert shown.status_code == 200, shown.text
    body: dict[str, Any] = shown.json()
    return body


def _finished(client: httpx.Client, job_id: str, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = _status(client, job_id)
        if JobStatus(status["status"]).terminal:
            return status
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish after its approval")


def test_a_waiting_checkpoint_survives_sigterm_and_sigkill_and_the_job_completes(
    tmp_path: Path, web: ScholarlyWeb
) -> None:
    state_dir = tmp_path / "state"
    runtime = _runtime(state_dir, web)
    try:
        with httpx.Client(base_url=runtime.base, timeout=30) as client:
            started = client.post(
                "/api/agent/execute",
                json={
                    "research_goal": GOAL,
                    "scope_parameters": {"discovery_depth": "rapid", "human_checkpoints": ["screening"]},
                },
            )
            assert started.status_code == 202, started.text
            job_id = started.json()["job_id"]
            before = _waiting(client, job_id)
            shown = _checkpoint(client, job_id)
        assert before["checkpoint"]["phase"] == "screening" and before["checkpoint"]["waiting_since"]
        assert shown["phase"] == "screening" and shown["payload"]["candidates"]
    finally:
        runtime.stop(signal.SIGTERM)
    assert runtime.process.returncode is not None

    for how in (signal.SIGKILL, None):  # one life stopped by a kill, the last one approves
        runtime = _runtime(state_dir, web)
        try:
            assert (
                "1 job(s) waiting at a checkpoint when the runtime stopped: waiting again"
                in runtime.printed()
            )
            with httpx.Client(base_url=runtime.base, timeout=30) as client:
                after = _status(client, job_id)
                assert after["awaiting_checkpoint"] is True
                assert after["checkpoint"] == before["checkpoint"]  # same phase, same window start
                assert after["status"] == before["status"]
                assert _checkpoint(client, job_id) == shown  # the same payload, waiting since the same time
                if how is None:
                    decided = client.post(
                        f"/api/agent/checkpoint/{job_id}/approve", json={"reason": "restarted"}
                    )
                    assert decided.status_code == 200, decided.text
                    final = _finished(client, job_id)
                    assert final["status"] in ("COMPLETED", "PARTIAL"), final
                    results = client.get(f"/api/agent/results/{job_id}").json()
                    audit = [entry["event"] for entry in results["audit_trail_summary"]["audit_log"]]
                    assert audit.count("CHECKPOINT_RESUMED") == 2
                    assert audit.count("CHECKPOINT_WAITING") == 1  # the payload was stored once
                    assert results["evidence"], "the approved job extracted nothing"
        finally:
            runtime.stop(how or signal.SIGTERM)
