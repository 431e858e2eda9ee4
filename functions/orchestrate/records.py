"""A new job's record: its plan (functions/research/planning/job.py), the execute response describing it
and, with metering, its cost quote. Used by the job service and by the steps that meet a job without a
record (a schedule's fire)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from functions.orchestrate.config import WorkflowSettings, get_workflow_settings
from functions.orchestrate.models import ExecuteResponse, JobRecord, JobStatus, audit_event, utc_now
from functions.research.planning.job import (
    CONNECTORS,
    Renderer,
    SearchBudget,
    build_plan,
    connector_syntax,
    default_search_budget,
    describe,
)
from functions.research.planning.plan import JobSettings, ResearchPlan
from functions.research.planning.request import ExecuteRequest
from functions.research.retrieval.chasing import seed_count

COUNTERS = (
    "queries_total",
    "queries_done",
    "queries_failed",
    "hits_found",
    "sources_discovered",
    "sources_validated",
    "sources_accepted",
    "sources_rejected",
    "extract_total",
    "extract_done",
    "extract_ok",
    "extract_failed",
)


# (team_id, job_id, request, source, schedule_id) -> a new job record: JobRecords.new_record
NewJobRecord = Callable[[str, str, ExecuteRequest, str, "str | None"], JobRecord]


class CostQuotes(Protocol):
    def quote(self, plan: dict[str, Any]) -> dict[str, Any]: ...


@dataclass
class JobRecords:
    settings: WorkflowSettings = field(default_factory=get_workflow_settings)
    render: Renderer = connector_syntax
    # Called only when a plan is built, so that reading a job never resolves the search configuration.
    connectors: Callable[[], tuple[str, ...]] = field(default=lambda: CONNECTORS)
    # The upstreams' rates and today's allowances the plan must fit (read when a plan is built).
    search_budget: Callable[[], SearchBudget] = field(default=default_search_budget)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    costs: CostQuotes | None = None

    def describe(
        self, request: ExecuteRequest
    ) -> tuple[ResearchPlan[JobSettings], dict[str, Any], dict[str, Any]]:
        """(plan, autonomous analysis, execution plan) of the request."""
        plan = build_plan(
            request.research_goal,
            request.scope_parameters,
            now=self.clock(),
            relevance_threshold=self.settings.relevance_threshold,
            min_sources=self.settings.min_sources_for_synthesis,
            connectors=self.connectors(),
            render=self.render,
            budget=self.search_budget(),
        )
        analysis, execution_plan = describe(
            plan,
            extract_concurrency=self.settings.extract_max_concurrency,
            search_concurrency=self.settings.search_max_concurrency,
        )
        return plan, analysis, execution_plan

    def new_record(
        self, team_id: str, job_id: str, request: ExecuteRequest, source: str, schedule_id: str | None = None
    ) -> JobRecord:
        """The job's first record; stored as `record.stored()`, with its counters at 0 and no fields of
        the later phases."""
        plan, analysis, execution_plan = self.describe(request)
        now = utc_now()
        response = ExecuteResponse(
            job_id=job_id,
            status=JobStatus.INITIALIZED,
            autonomous_analysis=analysis,
            execution_plan=execution_plan,
        )
        if self.costs is not None:
            scope = request.scope_parameters
            chasing = {"citation_chasing": scope.chasing, "chase_seeds": seed_count(scope.discovery_depth)}
            response.cost_estimate = self.costs.quote({**plan.to_dict(), **chasing})
        record = JobRecord(
            job_id=job_id,
            team_id=team_id,
            status=JobStatus.INITIALIZED,
            status_rank=JobStatus.INITIALIZED.rank,
            research_goal=request.research_goal,
            scope_parameters=request.scope_parameters.model_dump(mode="json"),
            source=source,
            expires_at=int(self.clock().timestamp()) + self.settings.job_retention_days * 86400,
            created_at=now,
            updated_at=now,
            plan=plan,
            execute_response=response,
            **dict.fromkeys(COUNTERS, 0),
            average_quality_score=0.0,
            actions=[],
            decisions=[],
            audit=[audit_event("INITIALIZED", "JOB_CREATED", f"source {source}")],
        )
        if schedule_id:
            record.schedule_id = schedule_id
        if request.callback_url:  # the webhook of the job's completion (functions/webhooks)
            record.callback_url = request.callback_url
        return record
