"""A research job survives a hard kill (SIGKILL) of the embedded runtime in each of its steps.

`python -m functions.local_runtime` runs on one state directory over a local scholarly web. One job is
started; in each life the runtime holds one step (`LOCAL_HOLD_STEP`, functions/local_runtime/
lambda_adapter.py: the step's first invocation writes a signal file and waits) and the test kills the
runtime once the step is held, so every kill lands at a known point with no timing involved: before
Plan, Screen, one source of the Extract Map and Finalize ran, and after Search and Synthesize had
finished (their output kept and metered, not yet seen by the dead execution). The next life goes on
where the job was (functions/local_runtime/recovery.py). After six kills the job is COMPLETED, billed for
exactly the steps an uninterrupted job of the same goal is billed for (so no step twice), with no
reservation left on its ledger, and its audit trail names each resumption and its state.

The uninterrupted job also shows a clean log: what its runtime printed holds no error, exception or
traceback (before, every job printed moto's `NoSuchJsonPathError` for `$.resume_checkpoint`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, environment, serve, topic_papers
from tests.support.runtime_process import LocalRuntime
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

# (the step Lambda held, and when) in each life but the last: every step of the job once
HOLDS = (
    ("ResearchPlanStep", "before"),
    ("ResearchSearchStep", "after"),
    ("ResearchScreenStep", "before"),
    ("ResearchExtractStep", "before"),
    ("ResearchSynthesizeStep", "after"),
    ("ResearchFinalizeStep", "before"),
)
RESUMED_AT = ["Plan", "Search", "Screen", "Extract", "Synthesize", "Finalize"]
REQUEST = {"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}}
# what would mean a fault in a runtime's output
FAULT = re.compile(r"\bERROR\b|Traceback|Exception=|NoSuchJsonPathError", re.IGNORECASE)
WAIT_SECONDS = 240  # a bound on a wait for a condition, never a duration the test relies on


@dataclass(frozen=True)
class FinishedJob:
    status: dict[str, Any]
    results: dict[str, Any]
    usage: dict[str, Any]
    printed: str


@pytest.fixture(scope="module")
def web() -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as server:
        serve(server, topic_papers(9, off_topic=3))
        yield server


def _environment(web: ScholarlyWeb, **extra: str) -> dict[str, str]:
    # one screening pass (no CONTINUE iteration that a slow embedding pass on a busy machine would add)
    return environment(
        web,
        RESEARCH_EXTRACT_BUDGET_SECONDS="10",
        RESEARCH_EXTRACT_MAX_CONCURRENCY="3",
        RESEARCH_SCREEN_EMBEDDING_SECONDS="40",
        **extra,
    )


def _until(condition: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"waited {WAIT_SECONDS} s: {what}")


def _status(client: httpx.Client, job_id: str) -> dict[str, Any]:
    response = client.get(f"/api/agent/status/{job_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _finish(runtime: LocalRuntime, client: httpx.Client, job_id: str) -> FinishedJob:
    status = _until(
        lambda: (found := _status(client, job_id)) and JobStatus(found["status"]).terminal and found,
        f"job {job_id} never finished",
    )
    results = client.get(f"/api/agent/results/{job_id}").json()
    usage = client.get(f"/api/usage/jobs/{job_id}").json()
    return FinishedJob(status, results, usage, runtime.printed())


@pytest.fixture(scope="module")
def uninterrupted(web: ScholarlyWeb, tmp_path_factory: pytest.TempPathFactory) -> FinishedJob:
    runtime = LocalRuntime(tmp_path_factory.mktemp("uninterrupted"), _environment(web))
    try:
        with httpx.Client(base_url=runtime.base, timeout=30) as client:
            started = client.post("/api/agent/execute", json=REQUEST)
            assert started.status_code == 202, started.text
            return _finish(runtime, client, started.json()["job_id"])
    finally:
        runtime.stop()


def test_a_normal_job_logs_no_error_and_no_exception(uninterrupted: FinishedJob) -> None:
    assert uninterrupted.status["status"] == "COMPLETED", uninterrupted.status
    assert '"step finished"' in uninterrupted.printed  # the steps' own JSON log lines are in it
    faults = [line for line in uninterrupted.printed.splitlines() if FAULT.search(line)]
    assert faults == []


def test_a_job_killed_in_each_step_completes_billed_once_for_each(
    web: ScholarlyWeb, uninterrupted: FinishedJob, tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    job_id = ""
    for life, (step, when) in enumerate(HOLDS):
        signal_file = tmp_path / f"held-{life}"
        runtime = LocalRuntime(
            state_dir,
            _environment(web, LOCAL_HOLD_STEP=f"{step}:{when}", LOCAL_HOLD_SIGNAL=str(signal_file)),
        )
        try:
            if life == 0:
                with httpx.Client(base_url=runtime.base, timeout=30) as client:
                    started = client.post("/api/agent/execute", json=REQUEST)
                    assert started.status_code == 202, started.text
                    job_id = started.json()["job_id"]
            else:
                assert "1 job(s) were running when the runtime stopped: going on where they were" in (
                    runtime.printed()
                )
            _until(signal_file.exists, f"life {life}: {step} was never held ({when})")
            with httpx.Client(base_url=runtime.base, timeout=30) as client:
                assert not JobStatus(_status(client, job_id)["status"]).terminal
        finally:
            runtime.kill()  # SIGKILL while the step is held: no shutdown hook runs

    runtime = LocalRuntime(state_dir, _environment(web))
    try:
        with httpx.Client(base_url=runtime.base, timeout=30) as client:
            finished = _finish(runtime, client, job_id)
    finally:
        runtime.stop()

    assert finished.status["status"] == "COMPLETED", finished.status
    assert finished.results["evidence"], "the restarted job extracted nothing"
    # billed for the same steps as the job that ran without a stop: no step twice, none lost
    assert finished.usage["steps"] == uninterrupted.usage["steps"]
    assert {finished.usage["steps"][name] for name in ("plan", "synthesize", "finalize")} == {1}
    summary = finished.results["execution_summary"]
    assert (
        finished.usage["steps"]["extract"]
        == summary["extractions_successful"] + summary["extractions_failed"]
    )
    # what the steps cut off had reserved was given back: the ledger holds the recorded cost only
    assert finished.usage["committed_usd"] == pytest.approx(finished.usage["cost_usd"], abs=1e-7)
    audit = finished.results["audit_trail_summary"]["audit_log"]
    resumed = [entry["detail"] for entry in audit if entry["event"] == "JOB_RESUMED"]
    assert [re.search(r"goes on at (\w+)", detail)[1] for detail in resumed] == RESUMED_AT  # type: ignore[index]
    assert not any(entry["event"] in ("RUNTIME_RESTARTED", "JOB_FAILED") for entry in audit)
