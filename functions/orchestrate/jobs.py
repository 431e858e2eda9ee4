"""The job service behind the agent API: start a job, report its status, hand out its results.

Callers that are not HTTP (the local scheduler) start jobs through `functions.orchestrate.wiring.start_job`,
which validates like the API and uses the deployed job service.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from functions.common.errors import Conflict, InvalidInput, NotFound, UpstreamError
from functions.common.storage import BlobStore
from functions.metering.budget import BudgetExceeded
from functions.orchestrate.config import WorkflowSettings, get_workflow_settings
from functions.orchestrate.models import (
    ARTIFACT_NAMES,
    PHASE_DESCRIPTIONS,
    ArtifactLink,
    AuditEntry,
    AuditTrailSummary,
    CurrentPhase,
    ExecutionCounts,
    JobRecord,
    JobResults,
    JobStatus,
    JobStatusResponse,
    QualityMetrics,
    WaitingAt,
    audit_event,
    utc_now,
)
from functions.orchestrate.records import JobRecords
from functions.orchestrate.store import JobStore, WorkflowStarter
from functions.research.planning.job import (
    CONNECTORS,
    Renderer,
    SearchBudget,
    connector_syntax,
    default_search_budget,
)
from functions.research.planning.request import ExecuteRequest


class JobCosts(Protocol):
    def quote(self, plan: dict[str, Any]) -> dict[str, Any]: ...

    def hold(self, team_id: str, job_id: str, quote: dict[str, Any]) -> float | None:
        """Hold the job's share of the team's month; BudgetExceeded when its low figure does not fit."""
        ...

    def release(self, team_id: str, job_id: str) -> float:
        """Give back to the month what the job's hold did not spend (once)."""
        ...

    def check_job_cap(self, quote: dict[str, Any], max_cost_usd: float | None) -> None:
        """InvalidInput when the job's `max_cost_usd` is below what it costs even doing nothing."""
        ...


class JobNotFinished(Conflict):
    code = "JOB_NOT_FINISHED"

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


def _fingerprint(request: ExecuteRequest) -> str:
    return hashlib.sha256(json.dumps(request.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def progress_percentage(job: JobRecord) -> int:
    """Derived from the phase and monotonic counters, so it never goes backwards."""
    status = job.status
    if status.terminal:
        return 100
    if status is JobStatus.SEARCHING:
        total = max(1, job.queries_total)
        return 10 + round(25 * min(1.0, job.queries_done / total))
    if status is JobStatus.EXTRACTING:
        total = job.extract_total
        done = min(1.0, job.extract_done / total) if total else 1.0
        return 40 + round(45 * done)
    return {
        JobStatus.INITIALIZED: 0,
        JobStatus.PLANNING: 5,
        JobStatus.VALIDATING: 37,
        JobStatus.SYNTHESIZING: 90,
    }[status]


@dataclass
class JobService:
    jobs: JobStore
    starter: WorkflowStarter
    artifacts: BlobStore
    settings: WorkflowSettings = field(default_factory=get_workflow_settings)
    render: Renderer = connector_syntax
    # Called only when a plan is built, so that reading a job never resolves the search configuration.
    connectors: Callable[[], tuple[str, ...]] = field(default=lambda: CONNECTORS)
    # The upstreams' rates and today's allowances the plan must fit (read when a plan is built).
    search_budget: Callable[[], SearchBudget] = field(default=default_search_budget)
    artifact_link: Callable[[str], str] = field(default=lambda key: key)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # Metering (functions/metering/budget.py Budgets): the cost quote of a plan, the monthly budget check.
    costs: JobCosts | None = None

    @property
    def records(self) -> JobRecords:
        """The builder of a new job's record and plan, over this service's settings and quotes."""
        return JobRecords(
            settings=self.settings,
            render=self.render,
            connectors=self.connectors,
            search_budget=self.search_budget,
            clock=self.clock,
            costs=self.costs,
        )

    # --- execute ----------------------------------------------------------------------------------

    def submit(
        self,
        team_id: str,
        request: ExecuteRequest,
        *,
        idempotency_key: str | None = None,
        client_id: str = "anonymous",
        source: str = "api",
        schedule_id: str | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Record and start the team's job; returns (response body, created). A repeated key (per team
        and client) returns the first job."""
        job_id = str(uuid.uuid4())
        if idempotency_key:
            if not 1 <= len(idempotency_key) <= 255:
                raise InvalidInput("Idempotency-Key must be 1-255 characters", field="Idempotency-Key")
            existing = self.jobs.claim_idempotency_key(
                team_id, f"{client_id}:{idempotency_key}", job_id, _fingerprint(request)
            )
            if existing is not None:
                return self._existing_response(team_id, existing), False
        record = self.records.new_record(team_id, job_id, request, source, schedule_id)
        try:
            self._hold_budget(team_id, record, f"{client_id}:{idempotency_key}" if idempotency_key else None)
        except BudgetExceeded as refused:
            if not schedule_id:
                raise
            return self._refused_fire(record, idempotency_key, refused), True
        if idempotency_key:
            record.idempotency_key = idempotency_key
        try:
            self.jobs.create(record.stored())
        except Exception:
            self._release_budget(team_id, job_id)
            raise
        try:
            execution_arn = self.starter.start(
                job_id,
                {
                    "job_id": job_id,
                    "team_id": team_id,
                    "research_goal": request.research_goal,
                    "scope_parameters": request.scope_parameters.model_dump(mode="json"),
                    "source": source,
                },
            )
        except Exception as exc:
            self.jobs.update(
                team_id,
                job_id,
                status=JobStatus.FAILED,
                set_fields={"failure_reason": f"could not start the workflow: {exc}"},
            )
            self._release_budget(team_id, job_id)
            raise UpstreamError("the research workflow could not be started") from exc
        self.jobs.update(team_id, job_id, set_fields={"execution_arn": execution_arn})
        return _response_body(record), True

    def _hold_budget(self, team_id: str, record: JobRecord, claimed_key: str | None) -> None:
        """Hold the job's share of the team's monthly budget, or refuse a job whose quote cannot fit it
        (BudgetExceeded: 402). A claimed Idempotency-Key is released, so the same request may be sent
        again once the budget allows; a replay of an accepted job never gets here, so never holds twice."""
        estimate = record.cost_estimate
        if self.costs is None or estimate is None:
            return
        try:
            self.costs.check_job_cap(estimate, record.scope_parameters.get("max_cost_usd"))
            self.costs.hold(team_id, record.job_id, estimate)
        except Exception:
            if claimed_key:
                self.jobs.release_idempotency_key(team_id, claimed_key, record.job_id)
            raise

    def _refused_fire(
        self, record: JobRecord, idempotency_key: str | None, refused: BudgetExceeded
    ) -> dict[str, Any]:
        """A schedule's fire the team's budget cannot afford is recorded as a FAILED job that says why
        (as the Plan step does on AWS, where Scheduler starts the workflow itself); nothing runs."""
        reason = f"{refused.code}: {refused.message}"
        now = utc_now()
        record.status, record.status_rank = JobStatus.FAILED, JobStatus.FAILED.rank
        record.failure_reason, record.finished_at, record.updated_at = reason, now, now
        record.audit = [
            *record.audit,
            AuditEntry.model_validate(audit_event("FAILED", "BUDGET_EXCEEDED", reason)),
        ]
        if idempotency_key:
            record.idempotency_key = idempotency_key  # the fire is not started again
        self.jobs.create(record.stored())
        return _response_body(record)

    def _release_budget(self, team_id: str, job_id: str) -> None:
        """A job that will not run (or ran without its last step) gives back what it held unspent."""
        if self.costs is not None:
            self.costs.release(team_id, job_id)

    def _existing_response(self, team_id: str, job_id: str) -> dict[str, Any]:
        for _ in range(20):  # a concurrent first request may still be writing the record
            job = self.jobs.get(team_id, job_id)
            if job is not None:
                return _response_body(JobRecord.model_validate(job))
            time.sleep(0.05)
        raise Conflict("a request with this Idempotency-Key is still being processed; retry shortly")

    # --- status -----------------------------------------------------------------------------------

    def job(self, team_id: str, job_id: str) -> JobRecord:
        return self._job(team_id, job_id)

    def _job(self, team_id: str, job_id: str) -> JobRecord:
        """The team's job; another team's job id is not found, exactly like an unknown one."""
        try:
            uuid.UUID(job_id)
        except ValueError:
            if not job_id or len(job_id) > 80:
                raise NotFound(f"job {job_id[:80]} not found") from None
        found = self.jobs.get(team_id, job_id)
        if found is None:
            raise NotFound(f"job {job_id} not found")
        return self._reconcile(JobRecord.model_validate(found))

    def _reconcile(self, job: JobRecord) -> JobRecord:
        """Every job reaches a terminal state: one whose execution ended without the workflow recording
        a final state (a failure step that could not write, an execution stopped by hand) is marked
        FAILED when it is read. Only stale jobs are checked, so polling costs no extra calls."""
        team_id, job_id, arn = job.team_id, job.job_id, job.execution_arn
        if job.status.terminal or not arn:
            return job
        last_change = datetime.fromisoformat(str(job.updated_at or job.created_at))
        if (self.clock() - last_change).total_seconds() < self.settings.stale_job_seconds:
            return job
        state = self.starter.execution_status(arn)
        if state == "RUNNING":
            return job
        reason = f"the workflow execution ended ({state or 'not found'}) without recording a final state"
        self.jobs.update(
            team_id,
            job_id,
            status=JobStatus.FAILED,
            set_fields={"failure_reason": reason, "finished_at": utc_now(), "updated_at": utc_now()},
            append={"audit": [audit_event("FAILED", "JOB_RECONCILED", reason)]},
        )
        self._release_budget(team_id, job_id)
        reconciled = self.jobs.get(team_id, job_id)
        return JobRecord.model_validate(reconciled) if reconciled is not None else job

    def status(self, team_id: str, job_id: str) -> JobStatusResponse:
        return status_body(self._job(team_id, job_id))

    # --- results ----------------------------------------------------------------------------------

    def results(self, team_id: str, job_id: str) -> JobResults:
        job = self._job(team_id, job_id)
        status = job.status
        if not status.terminal:
            raise JobNotFinished(
                f"job {job_id} is still {status.value} ({progress_percentage(job)}%); results are available "
                "once it reaches COMPLETED, PARTIAL, REFUSED or FAILED",
                status.value,
            )
        audit_summary = AuditTrailSummary(
            total_decisions_logged=len(job.decisions) + len(job.audit),
            full_audit_log_available=True,
            audit_log=job.audit,
        )
        stored = self.artifacts.get_bytes(job.results_key) if job.results_key else None
        if stored is None:  # FAILED before Finalize: no synthesis, but the audit trail says why
            return _results_without_synthesis(job, audit_summary)
        # the stored document (ResearchResults, and a scheduled run's changes) with the job's own fields
        document: dict[str, Any] = json.loads(stored)
        keys: dict[str, str] = document.pop("artifact_keys", {})
        return JobResults.model_validate(
            {
                **document,
                "status": status,
                "audit_trail_summary": audit_summary,
                "autonomous_decisions": job.decisions,
                "artifacts": {
                    name: ArtifactLink(
                        key=key,
                        api_path=f"/api/agent/results/{job_id}/artifacts/{name}",
                        url=self.artifact_link(key),
                    )
                    for name, key in keys.items()
                },
            }
        )

    def artifact(self, team_id: str, job_id: str, name: str) -> tuple[bytes, str]:
        job = self._job(team_id, job_id)
        if name not in ARTIFACT_NAMES:
            raise NotFound(f"no artifact named {name}")
        key = job.artifacts.get(name)
        data = self.artifacts.get_bytes(key) if key else None
        if data is None:
            raise JobNotFinished(f"artifact {name} of job {job_id} is not written yet", job.status.value)
        return data, ARTIFACT_NAMES[name]


def _response_body(record: JobRecord) -> dict[str, Any]:
    """The execute response kept on the record, with the job's status now."""
    if record.execute_response is None:
        raise NotFound(f"job {record.job_id} has no execute response")
    return record.execute_response.model_copy(update={"status": record.status}).model_dump(
        mode="json", exclude_unset=True
    )


def _phase_description(status: JobStatus, job: JobRecord) -> str:
    """The phase's description; a PARTIAL job's says what was lost, in words."""
    if status is JobStatus.PARTIAL and job.partial_reasons:
        return "Research completed, but " + "; ".join(job.partial_reasons)
    return PHASE_DESCRIPTIONS[status]


def _actions(job: JobRecord) -> list[str]:
    """The actions the steps recorded, and what the counters say was searched and extracted."""
    actions = list(job.actions)
    if job.queries_done:
        actions.append(
            f"Found {job.hits_found} results (before de-duplication) in {job.queries_done} queries"
        )
    if job.extract_done:
        actions.append(
            f"Extracted {job.extract_ok} of {job.extract_total} sources ({job.extract_failed} failed)"
        )
    return actions


def status_body(job: JobRecord) -> JobStatusResponse:
    """The body of GET /api/agent/status/{job_id}."""
    status = job.status
    body = JobStatusResponse(
        job_id=job.job_id,
        status=status,
        current_phase=CurrentPhase(
            phase_name=status.value,
            phase_description=_phase_description(status, job),
            progress_percentage=progress_percentage(job),
            intelligent_actions_taken=_actions(job),
        ),
        autonomous_decisions=job.decisions,
        quality_metrics=QualityMetrics(
            sources_discovered=job.sources_discovered,
            sources_validated=job.sources_validated,
            sources_accepted=job.sources_accepted,
            sources_rejected=job.sources_rejected,
            average_quality_score=job.average_quality_score,
            extractions_successful=job.extract_ok,
            extractions_failed=job.extract_failed,
        ),
        created_at=job.created_at,
        updated_at=job.updated_at,
        source=job.source,
    )
    if job.failure_reason:
        body.failure_reason = job.failure_reason
    if job.awaiting_checkpoint and not status.terminal:
        phase = job.checkpoint_phase or "screening"
        body.awaiting_checkpoint = True
        body.checkpoint = WaitingAt(phase=phase, waiting_since=job.checkpoint_started_at)
        # named for the checkpoint, not the status the job resumes in; the progress is the work done
        body.current_phase.phase_name = f"{phase.upper()}_CHECKPOINT"
        body.current_phase.phase_description = (
            f"Waiting for a person at the {phase} checkpoint (GET /api/agent/checkpoint/{job.job_id})"
        )
    return body


def _results_without_synthesis(job: JobRecord, audit_summary: AuditTrailSummary) -> JobResults:
    return JobResults(
        job_id=job.job_id,
        status=job.status,
        synthesis=None,
        execution_summary=ExecutionCounts(
            total_sources_discovered=job.sources_discovered,
            sources_validated=job.sources_validated,
            extractions_successful=job.extract_ok,
        ),
        audit_trail_summary=audit_summary,
        autonomous_decisions=job.decisions,
        sources=[],
        evidence=[],
        claims=[],
        confidence_score=0.0,
        refusal=False,
        refusal_reason=None,
        failure_reason=job.failure_reason,
        artifacts={},
    )
