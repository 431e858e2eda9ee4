"""One research job on `python -m functions.local_runtime`, killed (SIGKILL) in each of its steps, and the
same job run without a stop (it chases citations, so Chase is one of the steps): used by tests/e2e/test_restart_in_each_step.py and bench/restart.py.

In each life the runtime holds one step (`LOCAL_HOLD_STEP`, functions/local_runtime/lambda_adapter.py:
the step's first invocation writes a signal file and waits for its removal) and is killed once the file
is there, so every kill lands at a known point with no timing involved. The next life goes on where the
job was (functions/local_runtime/recovery.py); the last life holds nothing and the job finishes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from functions.local_runtime.durable import JOURNAL
from functions.local_runtime.resume import PROGRESS_TABLE
from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, environment, serve_cited_only, topic_papers
from tests.support.runtime_process import LocalRuntime
from tests.support.scholarly_web import ScholarlyWeb

# (the step Lambda held, and when) in each life but the last: before Plan, Screen, one source of the
# Extract Map and Finalize ran; after Search, Chase and Synthesize had finished (their output kept and
# metered, not yet seen by the execution that dies)
HOLDS: tuple[tuple[str, str], ...] = (
    ("ResearchPlanStep", "before"),
    ("ResearchSearchStep", "after"),
    ("ResearchScreenStep", "before"),
    ("ResearchChaseStep", "after"),
    ("ResearchExtractStep", "before"),
    ("ResearchSynthesizeStep", "after"),
    ("ResearchFinalizeStep", "before"),
)
# a rapid job that chases citations (off by default at this depth), so that its Chase step has work
REQUEST = {
    "research_goal": GOAL,
    "scope_parameters": {"discovery_depth": "rapid", "citation_chasing": "both"},
}
WAIT_SECONDS = 240  # a bound on a wait for a condition, never a duration anything relies on
T = TypeVar("T")


@dataclass(frozen=True)
class FinishedJob:
    status: dict[str, Any]
    results: dict[str, Any]
    usage: dict[str, Any]  # GET /api/usage/jobs/{job_id}
    printed: str  # what the last runtime printed
    lives: list[float] = field(default_factory=list)  # seconds from each restart to the next hold


def serve_scenario(web: ScholarlyWeb) -> None:
    """Nine on-topic papers and three off-topic ones that searches return, and one on-topic paper that
    only a citation reaches (the nine reference it)."""
    generated = topic_papers(10, off_topic=3)
    serve_cited_only(web, [*generated[:9], *generated[10:]], generated[9])


def runtime_environment(web: ScholarlyWeb, **extra: str) -> dict[str, str]:
    # one screening pass (no CONTINUE iteration that a slow embedding pass on a busy machine would add)
    return environment(
        web,
        RESEARCH_EXTRACT_BUDGET_SECONDS="10",
        RESEARCH_EXTRACT_MAX_CONCURRENCY="3",
        RESEARCH_SCREEN_EMBEDDING_SECONDS="40",
        **extra,
    )


def until(condition: Callable[[], T | None], what: str) -> T:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"waited {WAIT_SECONDS} s: {what}")


def job_status(client: httpx.Client, job_id: str) -> dict[str, Any]:
    response = client.get(f"/api/agent/status/{job_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _start(client: httpx.Client) -> str:
    started = client.post("/api/agent/execute", json=REQUEST)
    assert started.status_code == 202, started.text
    return str(started.json()["job_id"])


def _finish(runtime: LocalRuntime, client: httpx.Client, job_id: str) -> FinishedJob:
    def terminal() -> dict[str, Any] | None:
        found = job_status(client, job_id)
        return found if JobStatus(found["status"]).terminal else None

    def billed() -> dict[str, Any] | None:
        found: dict[str, Any] = client.get(f"/api/usage/jobs/{job_id}").json()
        return found if found.get("final") else None

    status = until(terminal, f"job {job_id} never finished")
    results = client.get(f"/api/agent/results/{job_id}").json()
    # the status turns terminal inside the job's last step, a moment before that step is billed
    usage = until(billed, f"the bill of job {job_id} never closed")
    return FinishedJob(status, results, usage, runtime.printed())


def uninterrupted_job(web: ScholarlyWeb, state_dir: Path) -> FinishedJob:
    runtime = LocalRuntime(state_dir, runtime_environment(web))
    try:
        with httpx.Client(base_url=runtime.base, timeout=30) as client:
            return _finish(runtime, client, _start(client))
    finally:
        runtime.stop()


def job_killed_in_each_step(
    web: ScholarlyWeb, state_dir: Path, signals: Path, holds: tuple[tuple[str, str], ...] = HOLDS
) -> FinishedJob:
    """The job, started in the first life, killed once per hold, finished in the last life."""
    job_id, lives = "", []
    for life, (step, when) in enumerate(holds):
        signal_file = signals / f"held-{life}"
        started = time.monotonic()
        runtime = LocalRuntime(
            state_dir,
            runtime_environment(web, LOCAL_HOLD_STEP=f"{step}:{when}", LOCAL_HOLD_SIGNAL=str(signal_file)),
        )
        try:
            with httpx.Client(base_url=runtime.base, timeout=30) as client:
                if life == 0:
                    job_id = _start(client)
                else:
                    going_on = "1 job(s) were running when the runtime stopped: going on where they were"
                    assert going_on in runtime.printed(), runtime.printed()[-3000:]
                until(signal_file.exists, f"life {life}: {step} was never held ({when})")
                lives.append(time.monotonic() - started)
                assert not JobStatus(job_status(client, job_id)["status"]).terminal
        finally:
            runtime.kill()  # SIGKILL while the step is held: no shutdown hook runs
    runtime = LocalRuntime(state_dir, runtime_environment(web))
    try:
        with httpx.Client(base_url=runtime.base, timeout=30) as client:
            finished = _finish(runtime, client, job_id)
    finally:
        runtime.stop()
    return FinishedJob(finished.status, finished.results, finished.usage, finished.printed, lives)


def resumed_states(job: FinishedJob) -> list[str]:
    """The state each JOB_RESUMED event of the job's audit trail names."""
    audit = job.results["audit_trail_summary"]["audit_log"]
    details = [str(entry["detail"]) for entry in audit if entry["event"] == "JOB_RESUMED"]
    return [detail.split("goes on at ", 1)[1].split(",", 1)[0] for detail in details]


def extractions(job: FinishedJob) -> int:
    summary = job.results["execution_summary"]
    return int(summary["extractions_successful"]) + int(summary["extractions_failed"])


def started_again(web: ScholarlyWeb, state_dir: Path) -> str:
    """Start a runtime on `state_dir` once more and stop it; what it printed."""
    runtime = LocalRuntime(state_dir, runtime_environment(web))
    return runtime.stop()


def kept_progress(state_dir: Path) -> tuple[int, list[str]]:
    """What a state directory's journal says of the runtime's progress table (resume points, kept step
    outputs): how many lines it wrote, and the items still held (the last line of their key has an
    image)."""
    lines, latest = 0, {}
    for line in (state_dir / JOURNAL).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("t") == "ddb" and record["k"][0] == PROGRESS_TABLE:
            lines += 1
            latest["#".join(str(part) for part in record["k"][1:])] = record.get("v") is not None
    return lines, sorted(key for key, present in latest.items() if present)
