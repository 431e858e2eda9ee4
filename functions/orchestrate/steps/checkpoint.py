"""HumanCheckpoint (waitForTaskToken): the job waits for POST /api/agent/checkpoint/{job_id}/approve or
abort. The task re-arms every 45 s with a new token until the checkpoint window has passed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from functions.common.errors import DomainError
from functions.orchestrate.config import WorkflowSettings, get_workflow_settings
from functions.orchestrate.contracts import CheckpointInput, CheckpointOutput
from functions.orchestrate.progress import JobProgress
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.store import DynamoDbJobStore, JobStore


class CheckpointExpired(DomainError):
    code = "CHECKPOINT_EXPIRED"


@dataclass
class Checkpoint:
    jobs: JobStore
    settings: WorkflowSettings

    def __call__(self, request: CheckpointInput) -> CheckpointOutput:
        progress = JobProgress(self.jobs, request.team, request.job_id)
        started = progress.job().checkpoint_started_at
        now = datetime.now(UTC)
        window = self.settings.checkpoint_window_seconds
        if started and (now - datetime.fromisoformat(started)).total_seconds() > window:
            raise CheckpointExpired(f"no approve/abort within {window} s")
        progress.awaiting_checkpoint(request.task_token, None if started else now, request.selected_count)
        return CheckpointOutput(job_id=request.job_id)


def build() -> Checkpoint:
    return Checkpoint(jobs=DynamoDbJobStore(), settings=get_workflow_settings())


handler = step_handler("checkpoint", CheckpointInput, build)
