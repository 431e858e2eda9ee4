"""Checkpoint<Phase> (waitForTaskToken): the job waits after a phase for POST
/api/agent/checkpoint/{job_id}/approve (whose edits become the state) or abort. The task re-arms every 45 s
with a new token until the checkpoint window has passed; then the job aborts, or goes on unchanged when its
`on_timeout` is `continue`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from functions.common.errors import DomainError
from functions.orchestrate.config import WorkflowSettings, get_workflow_settings
from functions.orchestrate.contracts import CheckpointInput, CheckpointOutput
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import JobStep
from functions.orchestrate.store import DynamoDbJobStore


class CheckpointExpired(DomainError):
    code = "CHECKPOINT_EXPIRED"


class CheckpointWindowPassed(DomainError):
    """The ASL catches this by name and goes on to the next phase with the state unchanged."""

    code = "CHECKPOINT_WINDOW_PASSED"


@dataclass(kw_only=True)
class Checkpoint(JobStep):
    settings: WorkflowSettings

    def __call__(self, request: CheckpointInput) -> CheckpointOutput:
        progress = self.progress(request.team, request.job_id)
        job = progress.job()
        started = job.checkpoint_started_at
        now = datetime.now(UTC)
        window = self.settings.checkpoint_window_seconds
        if started and (now - datetime.fromisoformat(started)).total_seconds() > window:
            if job.scope_parameters.get("on_timeout") == "continue":
                progress.checkpoint_window_passed(request.phase, window)
                raise CheckpointWindowPassed(f"no approve/abort within {window} s; continuing unchanged")
            raise CheckpointExpired(f"no approve/abort within {window} s")
        progress.awaiting_checkpoint(
            request.phase, request.task_token, request.resumable_state, None if started else now
        )
        return CheckpointOutput(job_id=request.job_id)


def build() -> Checkpoint:
    return Checkpoint(jobs=DynamoDbJobStore(), settings=get_workflow_settings())


handler = step_handler("checkpoint", CheckpointInput, build)
