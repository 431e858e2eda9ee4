"""Plan: the job's first state. A job the job service started has its record and plan already; a job an
EventBridge Scheduler target started (a schedule's fire) gets them here. Either way the plan's queries
become the first Search iteration's."""

from __future__ import annotations

from dataclasses import dataclass

from functions.common.errors import InvalidInput, RetryableStepError
from functions.common.traces import DynamoDbTraceStore
from functions.metering.job_budget import JobBudget
from functions.metering.wiring import budgets
from functions.orchestrate.config import WorkflowSettings, get_workflow_settings
from functions.orchestrate.contracts import CheckpointPhases, PlanInput, PlanOutput, SearchState
from functions.orchestrate.progress import JobProgress
from functions.orchestrate.records import NewJobRecord
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import JobStep
from functions.orchestrate.store import DynamoDbJobStore
from functions.orchestrate.wiring import job_records
from functions.research.planning.request import ExecuteRequest


@dataclass(kw_only=True)
class Plan(JobStep):
    new_record: NewJobRecord
    settings: WorkflowSettings
    budget: JobBudget

    def __call__(self, request: PlanInput) -> PlanOutput:
        execution = request.input
        job_id = str(execution.job_id or request.execution_name or "")
        if not job_id:
            raise InvalidInput("the state machine input names no job and the execution has no name")
        progress = self.progress(execution.team, job_id)
        if self.jobs.get(progress.team_id, job_id) is None:
            self._record_scheduled(request, progress)
        job = progress.job()
        plan = job.research_plan
        progress.planned(plan, list(dict.fromkeys(query.connector for query in plan.settings.queries)))
        return PlanOutput(
            job_id=job_id,
            team_id=progress.team_id,
            search=SearchState(pending=plan.settings.queries),
            focus_areas=plan.settings.focus_areas,
            max_concurrency=max(1, self.settings.extract_max_concurrency),
            checkpoints=CheckpointPhases.requested(job.scope_parameters.get("human_checkpoints")),
        )

    def _record_scheduled(self, request: PlanInput, progress: JobProgress) -> None:
        """The record of a job a schedule started; a ValidationError when its request is invalid, and
        BudgetExceeded when the team's month cannot hold it (MarkFailed records either)."""
        execution = request.input
        fired = ExecuteRequest.model_validate(execution.request_fields())
        record = self.new_record(
            progress.team_id, progress.job_id, fired, execution.source or "schedule", execution.schedule_id
        )
        self.jobs.create(record.stored())
        self.budget.hold(progress.team_id, progress.job_id, record.cost_estimate)
        if self.jobs.get(progress.team_id, progress.job_id) is None:
            raise RetryableStepError(f"job {progress.job_id} record not readable after creation")


def build() -> Plan:
    return Plan(
        jobs=DynamoDbJobStore(),
        new_record=job_records().new_record,
        settings=get_workflow_settings(),
        budget=JobBudget(budgets()),
        traces=DynamoDbTraceStore(),
    )


handler = step_handler("plan", PlanInput, build)
