"""Start-up recovery's choices (functions/local_runtime/recovery.py), on the in-memory job store."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from functions.local_runtime.recovery import INTERRUPTED_REASON, JobRecovery, resume_input
from functions.local_runtime.resume import ResumePoint
from functions.orchestrate.models import JobStatus
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter

STATE = {"job_id": "j1", "team_id": "t", "screen": {"ratio": Decimal("0.5"), "selected_count": Decimal(7)}}


def _waiting(job_id: str = "j1", **fields: Any) -> dict[str, Any]:
    return {
        "team_id": "t",
        "job_id": job_id,
        "status": JobStatus.VALIDATING.value,
        "status_rank": JobStatus.VALIDATING.rank,
        "awaiting_checkpoint": True,
        "checkpoint_phase": "screening",
        "checkpoint_state": STATE,
        "checkpoint_token": "old",
        **fields,
    }


def test_the_resume_input_is_the_kept_state_as_json_plus_the_checkpoint_state() -> None:
    resumed = resume_input(_waiting())
    assert resumed == {
        "job_id": "j1",
        "team_id": "t",
        "screen": {"ratio": 0.5, "selected_count": 7},
        "resume_at": "CheckpointScreening",
    }
    assert resume_input(_waiting(awaiting_checkpoint=False)) is None
    assert resume_input(_waiting(checkpoint_phase=None)) is None
    assert resume_input(_waiting(checkpoint_state=None)) is None
    assert resume_input(_waiting(checkpoint_state="[1, 2]")) is None  # not an object
    assert resume_input(_waiting(checkpoint_state='{"job_id": "j1"}', checkpoint_phase="plan")) == {
        "job_id": "j1",
        "resume_at": "CheckpointPlan",
    }


class FailingStarter(RecordingStarter):
    def start(self, name: str, payload: dict[str, Any]) -> str:
        raise RuntimeError("no state machine")


def test_a_job_that_cannot_be_resumed_fails_as_before() -> None:
    jobs = InMemoryJobStore()
    jobs.create(_waiting())
    recovery = JobRecovery(jobs, FailingStarter()).recover(iter([_waiting()]))
    assert (recovery.resumed, recovery.failed) == ([], ["t/j1"])
    failed = jobs.get("t", "j1")
    assert failed is not None and failed["status"] == "FAILED"
    assert failed["failure_reason"] == INTERRUPTED_REASON

    jobs = InMemoryJobStore()
    jobs.create(_waiting())
    recovery = JobRecovery(jobs, None).recover(iter([_waiting()]))  # no research machine in this runtime
    assert (recovery.resumed, recovery.failed) == ([], ["t/j1"])


def test_a_resumed_job_names_its_new_execution() -> None:
    jobs, starter = InMemoryJobStore(), RecordingStarter()
    jobs.create(_waiting())
    recovery = JobRecovery(jobs, starter).recover(iter([_waiting()]))
    assert (recovery.resumed, recovery.failed) == (["t/j1"], [])
    assert [name for name, _ in starter.started] == ["j1"]
    job = jobs.get("t", "j1")
    assert job is not None and job["status"] == "VALIDATING" and job["awaiting_checkpoint"] is True
    assert job["execution_arn"].endswith(":execution:research:j1") and job["checkpoint_token"] is None
    assert [entry["event"] for entry in job["audit"]] == ["CHECKPOINT_RESUMED"]


SEARCH_INPUT = {"job_id": "j2", "team_id": "t", "search": {"pending": [], "results": [], "round": 2}}


def _running(job_id: str = "j2") -> dict[str, Any]:
    return {
        "team_id": "t",
        "job_id": job_id,
        "status": JobStatus.SEARCHING.value,
        "status_rank": JobStatus.SEARCHING.rank,
    }


class KeptPoints:
    def __init__(self, points: dict[str, ResumePoint]) -> None:
        self.points = points

    def resume_point(self, team_id: str, job_id: str) -> ResumePoint | None:
        return self.points.get(f"{team_id}/{job_id}")


def test_a_running_job_goes_on_at_the_state_it_entered_last_with_that_input() -> None:
    jobs, starter = InMemoryJobStore(), RecordingStarter()
    jobs.create(_running())
    released: list[str] = []
    points = KeptPoints({"t/j2": ResumePoint("Search", SEARCH_INPUT, "2026-12-01T21:00:00+00:00")})

    def release(team_id: str, job_id: str) -> float:
        released.append(f"{team_id}/{job_id}")
        return 0.01

    recovery = JobRecovery(jobs, starter, points, release).recover(iter([_running()]))
    assert (recovery.resumed, recovery.continued, recovery.failed) == ([], ["t/j2"], [])
    assert starter.started == [("j2", {**SEARCH_INPUT, "resume_at": "Search"})]
    assert released == ["t/j2"]  # what its cut-off step had reserved, given back before it goes on
    job = jobs.get("t", "j2")
    assert job is not None and job["status"] == "SEARCHING"
    assert job["execution_arn"].endswith(":execution:research:j2")
    (resumed,) = job["audit"]
    assert resumed["event"] == "JOB_RESUMED" and "goes on at Search" in resumed["detail"]


def test_a_running_job_with_no_state_kept_or_no_machine_fails_as_before() -> None:
    points = KeptPoints({"t/j2": ResumePoint("Screen", SEARCH_INPUT, "")})
    for starter, kept in ((RecordingStarter(), KeptPoints({})), (None, points), (FailingStarter(), points)):
        jobs = InMemoryJobStore()
        jobs.create(_running())
        recovery = JobRecovery(jobs, starter, kept).recover(iter([_running()]))
        assert (recovery.continued, recovery.failed) == ([], ["t/j2"])
        failed = jobs.get("t", "j2")
        assert failed is not None and failed["failure_reason"] == INTERRUPTED_REASON


def test_a_job_waiting_at_its_checkpoint_resumes_there_even_with_a_state_kept() -> None:
    jobs, starter = InMemoryJobStore(), RecordingStarter()
    jobs.create(_waiting())
    points = KeptPoints({"t/j1": ResumePoint("Screen", SEARCH_INPUT, "")})
    recovery = JobRecovery(jobs, starter, points).recover(iter([_waiting()]))
    assert (recovery.resumed, recovery.continued) == (["t/j1"], [])
    assert starter.started[0][1]["resume_at"] == "CheckpointScreening"
