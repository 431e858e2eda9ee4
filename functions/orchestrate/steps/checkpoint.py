"""Checkpoint<Phase> (waitForTaskToken): the job waits after a phase for POST
/api/agent/checkpoint/{job_id}/approve (whose edits become the state) or abort. The task re-arms every 45 s
with a new token until the checkpoint window has passed; then the job aborts, or goes on unchanged when its
`on_timeout` is `continue`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from functions.common.errors import DomainError
from functions.common.observability import get_logger
from functions.orchestrate.checkpoints.waiting import CheckpointWait
from functions.orchestrate.config import WorkflowSettings, get_workflow_settings
from functions.orchestrate.contracts import CheckpointInput, CheckpointOutput
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import JobStep
from functions.orchestrate.store import DynamoDbJobStore
from functions.teams.wiring import team_service
from functions.webhooks.notify import WebhookNotifier
from functions.webhooks.wiring import notifier

logger = get_logger("orchestrate")


class CheckpointExpired(DomainError):
    code = "CHECKPOINT_EXPIRED"


class CheckpointWindowPassed(DomainError):
    """The ASL catches this by name and goes on to the next phase with the state unchanged."""

    code = "CHECKPOINT_WINDOW_PASSED"


@dataclass(kw_only=True)
class Checkpoint(JobStep):
    settings: WorkflowSettings
    webhooks: Callable[[], WebhookNotifier | None] = field(default=lambda: None)

    def __call__(self, request: CheckpointInput) -> CheckpointOutput:
        progress = self.progress(request.team, request.job_id)
        job = progress.job()
        wait = CheckpointWait(self.jobs, job)
        started = job.checkpoint_started_at
        now = datetime.now(UTC)
        window = self.settings.checkpoint_window_seconds
        if started and (now - datetime.fromisoformat(started)).total_seconds() > window:
            if job.scope_parameters.get("on_timeout") == "continue":
                wait.window_passed(request.phase, window)
                raise CheckpointWindowPassed(f"no approve/abort within {window} s; continuing unchanged")
            raise CheckpointExpired(f"no approve/abort within {window} s")
        wait.armed(request.phase, request.task_token, request.resumable_state, None if started else now)
        if not started and job.callback_url:
            self._announce(progress.team_id, progress.job().as_dict(), request.phase, now.isoformat())
        return CheckpointOutput(job_id=request.job_id)

    def _announce(self, team_id: str, job: dict[str, object], phase: str, since: str) -> None:
        """`job.checkpoint_waiting` to the job's callback; a failed delivery never fails the checkpoint."""
        try:
            hooks = self.webhooks()
            if hooks is not None:
                hooks.checkpoint_waiting(team_id, job, phase, since)
        except Exception:
            logger.warning("checkpoint webhook not delivered", job_id=job.get("job_id"), exc_info=True)


def build() -> Checkpoint:
    return Checkpoint(
        jobs=DynamoDbJobStore(),
        settings=get_workflow_settings(),
        webhooks=lambda: notifier(secret_of=team_service().webhook_secret),
    )


handler = step_handler("checkpoint", CheckpointInput, build, keeps=None)
