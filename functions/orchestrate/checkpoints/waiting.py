"""What a waiting checkpoint keeps on the job record (the checkpoint step's bookkeeping): its phase, task
token, window and the state to resume from; and its end when the window passes with `on_timeout: continue`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from functions.orchestrate.models import JobRecord, audit_event, decision
from functions.orchestrate.store import JobStore

# A checkpoint no longer waits: the next one starts a window of its own.
CHECKPOINT_CLEARED: dict[str, Any] = {
    "awaiting_checkpoint": False,
    "checkpoint_token": None,
    "checkpoint_started_at": None,
}


@dataclass(frozen=True)
class CheckpointWait:
    jobs: JobStore
    job: JobRecord

    def armed(self, phase: str, task_token: str, state: dict[str, Any], started_at: datetime | None) -> None:
        """Each re-armed checkpoint task brings a new token; the first also starts the window and stores
        the state the job resumes from (and the reviewer's edits apply to)."""
        fields: dict[str, Any] = {
            "checkpoint_token": task_token,
            "awaiting_checkpoint": True,
            "checkpoint_phase": phase,
        }
        appended: dict[str, list[Any]] = {}
        if started_at is not None:
            fields["checkpoint_started_at"] = started_at.isoformat()
            fields["checkpoint_state"] = state
            appended["actions"] = [f"Awaiting human review of the {phase} checkpoint"]
            appended["audit"] = [audit_event(self.job.status, "CHECKPOINT_WAITING", phase)]
        self.jobs.update(self.job.team_id, self.job.job_id, set_fields=fields, append=appended)

    def window_passed(self, phase: str, window_seconds: int) -> None:
        """on_timeout `continue`: the job goes on unchanged, and says so."""
        detail = f"{phase}: no decision within {window_seconds} s; continuing unchanged"
        self.jobs.update(
            self.job.team_id,
            self.job.job_id,
            set_fields={**CHECKPOINT_CLEARED, "checkpoint_state": None},
            append={
                "audit": [audit_event(self.job.status, "CHECKPOINT_TIMED_OUT", detail)],
                "decisions": [{**decision("HUMAN_CHECKPOINT", detail, "CONTINUED"), "phase": phase}],
            },
        )
