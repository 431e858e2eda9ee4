"""What start-up does with the jobs a stopped runtime left unfinished (their executions died with it).

A job waiting at a human checkpoint resumes waiting there: its record holds what the execution had at
the checkpoint (`checkpoint_phase`, `checkpoint_state`, `checkpoint_started_at`), and the research state
machine starts at that phase's checkpoint Task when its input names `resume_checkpoint`. A new execution
is started with the kept state, its ARN replaces the dead one on the job (status, approve and abort act on
it), and the window still counts from the original `checkpoint_started_at`.

Every other unfinished job ends FAILED, as before: between checkpoints the job's progress lives in the
execution (the Map's iterations, the retries, the step in flight), not in its record, so there is no
consistent point to start from; running it again from the start would repeat its searches and spend its
budget twice without asking. The caller starts it again.

Idempotent: a resumed job's record keeps its checkpoint, so a second restart (even one before the new
execution reached its checkpoint) resumes it again, from the same state, with one execution per life.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from functions.common.aws import dynamodb_resource
from functions.common.observability import get_logger
from functions.common.settings import get_settings
from functions.common.storage import from_dynamo
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
RESUME_INPUT_KEY = "resume_checkpoint"


@dataclass
class Recovery:
    """What start-up did: the jobs ("team/job") resumed at their checkpoint, and those failed."""

    resumed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


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
    return {**from_dynamo(state), RESUME_INPUT_KEY: phase}


@dataclass
class JobRecovery:
    jobs: JobStore
    starter: WorkflowStarter | None  # None: no research state machine to resume on, every job fails

    def recover(self, unfinished: Iterator[dict[str, Any]]) -> Recovery:
        recovery = Recovery()
        for job in unfinished:
            team_id, job_id = str(job["team_id"]), str(job["job_id"])
            payload = resume_input(job)
            if (
                payload is not None
                and self.starter is not None
                and self._resume(self.starter, team_id, job_id, str(job["status"]), payload)
            ):
                recovery.resumed.append(f"{team_id}/{job_id}")
            elif self._fail(team_id, job_id, INTERRUPTED_REASON):
                recovery.failed.append(f"{team_id}/{job_id}")
        return recovery

    def _resume(
        self, starter: WorkflowStarter, team_id: str, job_id: str, status: str, payload: dict[str, Any]
    ) -> bool:
        phase = payload[RESUME_INPUT_KEY]
        # The dead execution's token is dropped before the new execution starts: the new one writes
        # its own when it arms the checkpoint, and this write must not come after (and erase) it.
        if not self.jobs.update(
            team_id,
            job_id,
            set_fields={"checkpoint_token": None, "updated_at": utc_now()},
            append={
                "audit": [
                    audit_event(
                        status,
                        "CHECKPOINT_RESUMED",
                        f"the local runtime restarted; the job waits again at its {phase} checkpoint",
                    )
                ]
            },
        ):
            return False
        try:
            execution_arn = starter.start(job_id, payload)
        except Exception:
            logger.exception("checkpoint not resumed", team_id=team_id, job_id=job_id)
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


def recover_interrupted_jobs(research_state_machine_arn: str | None) -> Recovery:
    """Resume the jobs that waited at a checkpoint on `research_state_machine_arn`; fail the rest."""
    table = dynamodb_resource().Table(get_settings().jobs_table)
    starter = StepFunctionsStarter(research_state_machine_arn) if research_state_machine_arn else None
    return JobRecovery(DynamoDbJobStore(table), starter).recover(unfinished_jobs(table))
