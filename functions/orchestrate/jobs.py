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
    JobStatus,
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


def progress_percentage(job: dict[str, Any]) -> int:
    """Derived from the phase and monotonic counters, so it never goes backwards."""
    status = JobStatus(job["status"])
    if status.terminal:
        return 100
    if status is JobStatus.SEARCHING:
        total = max(1, int(job.get("queries_total", 0)))
        return 10 + round(25 * min(1.0, int(job.get("queries_done", 0)) / total))
    if status is JobStatus.EXTRACTING:
        total = int(job.get("extract_total", 0))
        done = min(1.0, int(job.get("extract_done", 0)) / total) if total else 1.0
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
            record["idempotency_key"] = idempotency_key
        try:
            self.jobs.create(record)
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
        return json.loads(record["execute_response"]), True

    def _hold_budget(self, team_id: str, record: dict[str, Any], claimed_key: str | None) -> None:
        """Hold the job's share of the team's monthly budget, or refuse a job whose quote cannot fit it
        (BudgetExceeded: 402). A claimed Idempotency-Key is released, so the same request may be sent
        again once the budget allows; a replay of an accepted job never gets here, so never holds twice."""
        estimate = json.loads(record["execute_response"]).get("cost_estimate")
        if self.costs is None or estimate is None:
            return
        try:
            self.costs.check_job_cap(estimate, record["scope_parameters"].get("max_cost_usd"))
            self.costs.hold(team_id, str(record["job_id"]), estimate)
        except Exception:
            if claimed_key:
                self.jobs.release_idempotency_key(team_id, claimed_key, str(record["job_id"]))
            raise

    def _refused_fire(
        self, record: dict[str, Any], idempotency_key: str | None, refused: BudgetExceeded
    ) -> dict[str, Any]:
        """A schedule's fire the team's budget cannot afford is recorded as a FAILED job that says why
        (as the Plan step does on AWS, where Scheduler starts the workflow itself); nothing runs."""
        reason = f"{refused.code}: {refused.message}"
        now = utc_now()
        record.update(
            status=JobStatus.FAILED.value,
            status_rank=JobStatus.FAILED.rank,
            failure_reason=reason,
            finished_at=now,
            updated_at=now,
        )
        record["audit"] = [*record["audit"], audit_event("FAILED", "BUDGET_EXCEEDED", reason)]
        if idempotency_key:
            record["idempotency_key"] = idempotency_key  # the fire is not started again
        self.jobs.create(record)
        response: dict[str, Any] = json.loads(record["execute_response"])
        response["status"] = JobStatus.FAILED.value
        return response

    def _release_budget(self, team_id: str, job_id: str) -> None:
        """A job that will not run (or ran without its last step) gives back what it held unspent."""
        if self.costs is not None:
            self.costs.release(team_id, job_id)

    def _existing_response(self, team_id: str, job_id: str) -> dict[str, Any]:
        for _ in range(20):  # a concurrent first request may still be writing the record
            job = self.jobs.get(team_id, job_id)
            if job is not None:
                response: dict[str, Any] = json.loads(job["execute_response"])
                response["status"] = job["status"]
                return response
            time.sleep(0.05)
        raise Conflict("a request with this Idempotency-Key is still being processed; retry shortly")

    # --- status -----------------------------------------------------------------------------------

    def job(self, team_id: str, job_id: str) -> dict[str, Any]:
        return self._job(team_id, job_id)

    def _job(self, team_id: str, job_id: str) -> dict[str, Any]:
        """The team's job; another team's job id is not found, exactly like an unknown one."""
        try:
            uuid.UUID(job_id)
        except ValueError:
            if not job_id or len(job_id) > 80:
                raise NotFound(f"job {job_id[:80]} not found") from None
        job = self.jobs.get(team_id, job_id)
        if job is None:
            raise NotFound(f"job {job_id} not found")
        return self._reconcile(job)

    def _reconcile(self, job: dict[str, Any]) -> dict[str, Any]:
        """Every job reaches a terminal state: one whose execution ended without the workflow recording
        a final state (a failure step that could not write, an execution stopped by hand) is marked
        FAILED when it is read. Only stale jobs are checked, so polling costs no extra calls."""
        team_id, job_id, arn = str(job["team_id"]), str(job["job_id"]), job.get("execution_arn")
        if JobStatus(job["status"]).terminal or not arn:
            return job
        last_change = datetime.fromisoformat(str(job.get("updated_at") or job.get("created_at")))
        if (self.clock() - last_change).total_seconds() < self.settings.stale_job_seconds:
            return job
        state = self.starter.execution_status(str(arn))
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
        return self.jobs.get(team_id, job_id) or job

    def status(self, team_id: str, job_id: str) -> dict[str, Any]:
        return status_body(self._job(team_id, job_id))

    # --- results ----------------------------------------------------------------------------------

    def results(self, team_id: str, job_id: str) -> dict[str, Any]:
        job = self._job(team_id, job_id)
        status = JobStatus(job["status"])
        if not status.terminal:
            raise JobNotFinished(
                f"job {job_id} is still {status.value} ({progress_percentage(job)}%); results are available "
                "once it reaches COMPLETED, PARTIAL, REFUSED or FAILED",
                status.value,
            )
        audit = list(job.get("audit") or [])
        decisions = list(job.get("decisions") or [])
        audit_summary = {
            "total_decisions_logged": len(decisions) + len(audit),
            "full_audit_log_available": True,
            "audit_log": audit,
        }
        stored = self.artifacts.get_bytes(job["results_key"]) if job.get("results_key") else None
        if stored is None:  # FAILED before Finalize: no synthesis, but the audit trail says why
            return _results_without_synthesis(job, audit_summary, decisions)
        results: dict[str, Any] = json.loads(stored)
        results["status"] = status.value
        results["audit_trail_summary"] = audit_summary
        results["autonomous_decisions"] = decisions
        keys: dict[str, str] = results.pop("artifact_keys", {})
        results["artifacts"] = {
            name: {
                "key": key,
                "api_path": f"/api/agent/results/{job_id}/artifacts/{name}",
                "url": self.artifact_link(key),
            }
            for name, key in keys.items()
        }
        return results

    def artifact(self, team_id: str, job_id: str, name: str) -> tuple[bytes, str]:
        job = self._job(team_id, job_id)
        if name not in ARTIFACT_NAMES:
            raise NotFound(f"no artifact named {name}")
        key = (job.get("artifacts") or {}).get(name)
        data = self.artifacts.get_bytes(key) if key else None
        if data is None:
            raise JobNotFinished(f"artifact {name} of job {job_id} is not written yet", job["status"])
        return data, ARTIFACT_NAMES[name]


def _phase_description(status: JobStatus, job: dict[str, Any]) -> str:
    """The phase's description; a PARTIAL job's says what was lost, in words."""
    reasons = [str(reason) for reason in job.get("partial_reasons") or []]
    if status is JobStatus.PARTIAL and reasons:
        return "Research completed, but " + "; ".join(reasons)
    return PHASE_DESCRIPTIONS[status]


def status_body(job: dict[str, Any]) -> dict[str, Any]:
    """The body of GET /api/agent/status/{job_id}."""
    job_id = str(job["job_id"])
    status = JobStatus(job["status"])
    actions = list(job.get("actions") or [])
    discovered, queries_done = int(job.get("sources_discovered", 0)), int(job.get("queries_done", 0))
    if queries_done:
        actions.append(
            f"Found {job.get('hits_found', 0)} results (before de-duplication) in {queries_done} queries"
        )
    if job.get("extract_done"):
        actions.append(
            f"Extracted {job.get('extract_ok', 0)} of {job.get('extract_total', 0)} sources "
            f"({job.get('extract_failed', 0)} failed)"
        )
    body: dict[str, Any] = {
        "job_id": job_id,
        "status": status.value,
        "current_phase": {
            "phase_name": status.value,
            "phase_description": _phase_description(status, job),
            "progress_percentage": progress_percentage(job),
            "intelligent_actions_taken": actions,
        },
        "autonomous_decisions": list(job.get("decisions") or []),
        "quality_metrics": {
            "sources_discovered": discovered,
            "sources_validated": int(job.get("sources_validated", 0)),
            "sources_accepted": int(job.get("sources_accepted", 0)),
            "sources_rejected": int(job.get("sources_rejected", 0)),
            "average_quality_score": float(job.get("average_quality_score", 0.0)),
            "extractions_successful": int(job.get("extract_ok", 0)),
            "extractions_failed": int(job.get("extract_failed", 0)),
        },
        "created_at": job.get("created_at"),
        "updated_at": job.get("updated_at"),
        "source": job.get("source"),
    }
    if job.get("failure_reason"):
        body["failure_reason"] = job["failure_reason"]
    if job.get("awaiting_checkpoint") and not status.terminal:
        phase = job.get("checkpoint_phase") or "screening"
        body["awaiting_checkpoint"] = True
        body["checkpoint"] = {"phase": phase, "waiting_since": job.get("checkpoint_started_at")}
        # named for the checkpoint, not the status the job resumes in; the progress is the work done
        body["current_phase"]["phase_name"] = f"{str(phase).upper()}_CHECKPOINT"
        body["current_phase"]["phase_description"] = (
            f"Waiting for a person at the {phase} checkpoint (GET /api/agent/checkpoint/{job_id})"
        )
    return body


def _results_without_synthesis(
    job: dict[str, Any], audit_summary: dict[str, Any], decisions: list[Any]
) -> dict[str, Any]:
    return {
        "job_id": job["job_id"],
        "status": job["status"],
        "synthesis": None,
        "execution_summary": {
            "total_sources_discovered": int(job.get("sources_discovered", 0)),
            "sources_validated": int(job.get("sources_validated", 0)),
            "extractions_successful": int(job.get("extract_ok", 0)),
        },
        "audit_trail_summary": audit_summary,
        "autonomous_decisions": decisions,
        "sources": [],
        "evidence": [],
        "claims": [],
        "confidence_score": 0.0,
        "refusal": False,
        "refusal_reason": None,
        "failure_reason": job.get("failure_reason"),
        "artifacts": {},
    }
