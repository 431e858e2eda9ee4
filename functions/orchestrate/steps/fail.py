"""MarkFailed: any state's uncaught failure ends the job FAILED with the reason Step Functions caught.
A schedule's fire that failed before its record existed gets one here (a placeholder request when its
own was invalid), so that every job that ran reads FAILED with why."""

from __future__ import annotations

from dataclasses import dataclass

from functions.common.traces import DynamoDbTraceStore
from functions.orchestrate.completion import JobCompletion
from functions.orchestrate.contracts import FailInput, FailOutput
from functions.orchestrate.progress import JobProgress
from functions.orchestrate.records import NewJobRecord
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import JobStep
from functions.orchestrate.store import DynamoDbJobStore, EventBridgePublisher
from functions.orchestrate.wiring import job_records
from functions.research.planning.request import ExecuteRequest
from functions.teams.wiring import team_service
from functions.webhooks.wiring import notifier

# Only for recording a FAILED job whose scheduled input was not even a valid request.
PLACEHOLDER_GOAL = "(invalid scheduled research goal)"


@dataclass(kw_only=True)
class Fail(JobStep):
    new_record: NewJobRecord
    completion: JobCompletion

    def __call__(self, request: FailInput) -> FailOutput:
        job_id, reason, execution = request.job_id, request.reason, request.state.execution
        progress = self.progress(execution.team, job_id)
        existing = self.jobs.get(progress.team_id, job_id)
        if existing is None:
            self._record(progress, request)
        elif request.state.error is not None and request.state.error.name == "CheckpointAborted":
            reason = f"CheckpointAborted: {existing.get('checkpoint_reason') or 'aborted by the reviewer'}"
        moved = progress.failed(reason)
        if moved:
            failed_job = self.jobs.get(progress.team_id, job_id) or {"job_id": job_id}
            self.completion.failed(progress.team_id, failed_job, reason)
        return FailOutput(job_id=job_id, status="FAILED", reason=reason, moved=moved)

    def _record(self, progress: JobProgress, request: FailInput) -> None:
        state = request.state
        try:
            fired = ExecuteRequest.model_validate(state.request_fields())
            source = state.source or "schedule"
            record = self.new_record(progress.team_id, progress.job_id, fired, source, state.schedule_id)
        except ValueError:  # incl. pydantic's ValidationError: not even a valid request
            placeholder = ExecuteRequest(research_goal=PLACEHOLDER_GOAL)
            record = self.new_record(progress.team_id, progress.job_id, placeholder, "schedule", None)
        self.jobs.create(record.stored())


def build() -> Fail:
    return Fail(
        jobs=DynamoDbJobStore(),
        new_record=job_records().new_record,
        completion=JobCompletion(
            events=EventBridgePublisher(), webhooks=lambda: notifier(secret_of=team_service().webhook_secret)
        ),
        traces=DynamoDbTraceStore(),
    )


handler = step_handler("fail", FailInput, build)
