"""Start-up recovery's choices (functions/local_runtime/recovery.py), on the in-memory job store."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from functions.local_runtime.recovery import INTERRUPTED_REASON, JobRecovery, resume_input
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


def test_the_resume_input_is_the_kept_state_as_json_plus_the_phase() -> None:
    resumed = resume_input(_waiting())
    assert resumed == {
        "job_id": "j1",
        "team_id": "t",
        "screen": {"ratio": 0.5, "selected_count": 7},
        "resume_checkpoint": "screening",
    }
    assert resume_input(_waiting(awaiting_checkpoint=False)) is None
    assert resume_input(_waiting(checkpoint_phase=None)) is None
    assert resume_input(_waiting(checkpoint_state=None)) is None
    assert resume_input(_waiting(checkpoint_state="[1, 2]")) is None  # not an object
    assert resume_input(_waiting(checkpoint_state='{"job_id": "j1"}')) == {
        "job_id": "j1",
        "resume_checkpoint": "screening",
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
