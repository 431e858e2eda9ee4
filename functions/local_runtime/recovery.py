"""What start-up does with the jobs a stopped runtime left unfinished (their executions died with it).

Each goes on in a new execution of the research state machine, whose `Resume` Choice starts it at the
state its input names (`resume_at`); the new execution's ARN replaces the dead one on the job (status,
approve and abort act on it):

- **A job waiting at a human checkpoint waits there again.** Its record holds what the execution had at
  the checkpoint (`checkpoint_phase`, `checkpoint_state`, `checkpoint_started_at`); the execution starts
  at that phase's checkpoint Task with the kept state, and the window still counts from the original
  `checkpoint_started_at`. Audited `CHECKPOINT_RESUMED`.
- **A running job goes on at the last state it entered** (functions/local_runtime/resume.py keeps each
  state's name and input as the execution enters it), with that input: the state's step is asked again
  with the same payload; one that had finished answers with its kept output, unmetered, and one cut off
  mid-way runs again (in the Extract Map, only the sources whose step had not finished). What the steps
  cut off had reserved of the job's budget is given back first (`release_unrecorded`): their cost was
  never recorded, and the steps that run again reserve anew. Audited `JOB_RESUMED`, naming the state.
- **Anything else ends FAILED** (no research state machine to resume on, no state recorded for the
  job, or an execution that cannot start), as before: `RUNTIME_RESTARTED` with the reason.

Idempotent: a resumed job's record keeps its checkpoint and the table keeps its last state, so a second
restart (even one before the new execution moved on) resumes it again, from the same point, with one
execution per life.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from functions.common.aws import dynamodb_resource
from functions.common.observability import get_logger
from functions.common.settings import get_settings
from functions.common.storage import from_dynamo
from functions.local_runtime.resume import RESUME_KEY, ResumePoint, progress_table
from functions.orchestrate.models import JobStatus, audit_event, utc_now
from functions.orchestrate.store import (
    JOB_SK,
    DynamoDbJobStore,
    JobStore,
    StepFunctionsStarter,
    WorkflowStarter,
)

logger = get_logger("local-recovery")

INTERRUPTED_REASON = (
    "the local runtime stopped while the job was running (its workflow execution did not survive the "
    "restart); start the job again"
)
RESUMED_EVENT = "JOB_RESUMED"


class ResumePoints(Protocol):
    def resume_point(self, team_id: str, job_id: str) -> ResumePoint | None: ...


ReleaseReservations = Callable[[str, str], float]  # (team, job) -> USD given back


@dataclass
class Recovery:
    """What start-up did with each unfinished job ("team/job"): waiting at its checkpoint again, going
    on at the state it had reached, or failed."""

    resumed: list[str] = field(default_factory=list)
    continued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Resumption:
    """How one job goes on: the new execution's input, its audit event and the record's changes."""

    payload: dict[str, Any]
    event: str
    detail: str
    set_fields: dict[str, Any]

    @property
    def state(self) -> str:
        return str(self.payload[RESUME_KEY])


def unfinished_jobs(table: Any) -> Iterator[dict[str, Any]]:
    """Every job record whose status is not terminal."""
    options: dict[str, Any] = {}
    while True:
        page = table.scan(**options)
        for item in page.get("Items", []):
            if item.get("sk") != JOB_SK or "team_id" not in item or "job_id" not in item:
                continue
            try:
                terminal = JobStatus(str(item.get("status"))).terminal
            except ValueError:
                continue
            if not terminal:
                yield item
        if "LastEvaluatedKey" not in page:
            return
        options["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def checkpoint_state(phase: str) -> str:
    """The research machine's checkpoint Task of `phase` ("screening" -> "CheckpointScreening")."""
    return f"Checkpoint{phase[:1].upper()}{phase[1:]}"


def resume_input(job: dict[str, Any]) -> dict[str, Any] | None:
    """The input of an execution that goes straight back to the job's checkpoint; None when the job is
    not waiting at one, or its record lacks what the checkpoint kept."""
    phase = job.get("checkpoint_phase")
    kept = job.get("checkpoint_state")
    if not job.get("awaiting_checkpoint") or not isinstance(phase, str) or not phase or kept is None:
        return None
    try:
        state = json.loads(kept) if isinstance(kept, str) else kept
    except ValueError:
        return None
    if not isinstance(state, dict):
        return None
    return {**from_dynamo(state), RESUME_KEY: checkpoint_state(phase)}


def continue_input(point: ResumePoint) -> dict[str, Any]:
    """The input of an execution that starts at the state the job had entered last, with its input."""
    return {**point.input, RESUME_KEY: point.state}


@dataclass
class JobRecovery:
    jobs: JobStore
    starter: WorkflowStarter | None  # None: no research state machine to resume on, every job fails
    points: ResumePoints | None = None  # None: nothing recorded where running jobs were
    release: ReleaseReservations | None = None

    def recover(self, unfinished: Iterator[dict[str, Any]]) -> Recovery:
        recovery = Recovery()
        for job in unfinished:
            team_id, job_id = str(job["team_id"]), str(job["job_id"])
            name = f"{team_id}/{job_id}"
            resumption = self._resumption(job) if self.starter is not None else None
            if (
                resumption is not None
                and self.starter is not None
                and self._resume(self.starter, team_id, job_id, str(job["status"]), resumption)
            ):
                waiting = resumption.event == "CHECKPOINT_RESUMED"
                (recovery.resumed if waiting else recovery.continued).append(name)
                continue
            if self._fail(team_id, job_id, INTERRUPTED_REASON):
                recovery.failed.append(name)
        return recovery

    def _resumption(self, job: dict[str, Any]) -> Resumption | None:
        team_id, job_id = str(job["team_id"]), str(job["job_id"])
        waiting = resume_input(job)
        if waiting is not None:
            # The dead execution's token is dropped before the new execution starts: the new one writes
            # its own when it arms the checkpoint, and this write must not come after (and erase) it.
            phase = str(job["checkpoint_phase"])
            return Resumption(
                waiting,
                "CHECKPOINT_RESUMED",
                f"the local runtime restarted; the job waits again at its {phase} checkpoint",
                {"checkpoint_token": None},
            )
        point = self.points.resume_point(team_id, job_id) if self.points is not None else None
        if point is None:
            return None
        return Resumption(
            continue_input(point),
            RESUMED_EVENT,
            f"the local runtime restarted; the job goes on at {point.state}, entered at "
            f"{point.entered_at}, from what its finished steps had stored (a step cut off runs again)",
            {},
        )

    def _resume(
        self, starter: WorkflowStarter, team_id: str, job_id: str, status: str, resumption: Resumption
    ) -> bool:
        if resumption.event == RESUMED_EVENT and self.release is not None:
            try:
                self.release(team_id, job_id)
            except Exception:  # the budgets stay stricter than they need to be; the job goes on
                logger.warning("interrupted steps' reservations kept", job_id=job_id, exc_info=True)
        if not self.jobs.update(
            team_id,
            job_id,
            set_fields={**resumption.set_fields, "updated_at": utc_now()},
            append={"audit": [audit_event(status, resumption.event, resumption.detail)]},
        ):
            return False
        try:
            execution_arn = starter.start(job_id, resumption.payload)
        except Exception:
            logger.exception("job not resumed", team_id=team_id, job_id=job_id, state=resumption.state)
            return False
        self.jobs.update(team_id, job_id, set_fields={"execution_arn": execution_arn})
        return True

    def _fail(self, team_id: str, job_id: str, reason: str) -> bool:
        now = utc_now()
        return self.jobs.update(
            team_id,
            job_id,
            status=JobStatus.FAILED,
            set_fields={"failure_reason": reason, "finished_at": now, "updated_at": now},
            append={"audit": [audit_event("FAILED", "RUNTIME_RESTARTED", reason)]},
        )


def _release_unrecorded(team_id: str, job_id: str) -> float:
    from functions.metering.wiring import budgets, metering_enabled

    return budgets().release_unrecorded(team_id, job_id) if metering_enabled() else 0.0


def recover_interrupted_jobs(research_state_machine_arn: str | None) -> Recovery:
    """Resume the unfinished jobs of `research_state_machine_arn` where they were; fail the rest; forget
    what is kept of every job that does not go on."""
    table = dynamodb_resource().Table(get_settings().jobs_table)
    starter = StepFunctionsStarter(research_state_machine_arn) if research_state_machine_arn else None
    points = progress_table()
    recovered = JobRecovery(DynamoDbJobStore(table), starter, points, _release_unrecorded).recover(
        unfinished_jobs(table)
    )
    if points is not None:
        names = (name.partition("/") for name in (*recovered.resumed, *recovered.continued))
        points.forget_all_but({(team_id, job_id) for team_id, _, job_id in names})
    return recovered
