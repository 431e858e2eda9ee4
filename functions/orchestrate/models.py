"""Shapes of the agent job API: the job record as the job table stores it, and the bodies its routes answer
(the request itself is functions/research/planning/request.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
    model_validator,
)

from functions.research.job.prisma import PrismaFlow
from functions.research.job.report import ExecutionSummary, ResultSource
from functions.research.planning.plan import JobSettings, ResearchPlan
from functions.research.planning.request import CHASING_BY_DEPTH, CheckpointPhase, CitationChasing

ARTIFACT_NAMES: dict[str, str] = {
    "report.md": "text/markdown; charset=utf-8",
    "bibliography.bib": "application/x-bibtex; charset=utf-8",
    "references.ris": "application/x-research-info-systems; charset=utf-8",
    "references.csl.json": "application/vnd.citationstyles.csl+json",
    "annotated_bibliography.md": "text/markdown; charset=utf-8",
    "quote_library.json": "application/json",
    "search_report.md": "text/markdown; charset=utf-8",
    "prisma_flow.svg": "image/svg+xml; charset=utf-8",
}


class JobStatus(StrEnum):
    INITIALIZED = "INITIALIZED"
    PLANNING = "PLANNING"
    SEARCHING = "SEARCHING"
    VALIDATING = "VALIDATING"
    EXTRACTING = "EXTRACTING"
    SYNTHESIZING = "SYNTHESIZING"
    COMPLETED = "COMPLETED"
    PARTIAL = "PARTIAL"
    FAILED = "FAILED"
    REFUSED = "REFUSED"

    @property
    def rank(self) -> int:
        """Position in the job's life; a job only ever moves to a higher rank."""
        return _RANKS[self]

    @property
    def terminal(self) -> bool:
        return self.rank == TERMINAL_RANK


TERMINAL_RANK = 9
_RANKS = {
    JobStatus.INITIALIZED: 0,
    JobStatus.PLANNING: 1,
    JobStatus.SEARCHING: 2,
    JobStatus.VALIDATING: 3,
    JobStatus.EXTRACTING: 4,
    JobStatus.SYNTHESIZING: 5,
    JobStatus.COMPLETED: TERMINAL_RANK,
    JobStatus.PARTIAL: TERMINAL_RANK,
    JobStatus.FAILED: TERMINAL_RANK,
    JobStatus.REFUSED: TERMINAL_RANK,
}

PHASE_DESCRIPTIONS: dict[JobStatus, str] = {
    JobStatus.INITIALIZED: "Job accepted; waiting for the workflow to start",
    JobStatus.PLANNING: "Decomposing the goal into sub-questions and search queries",
    JobStatus.SEARCHING: "Searching scholarly databases",
    JobStatus.VALIDATING: "Scoring and validating sources against the governance policies",
    JobStatus.EXTRACTING: "Extracting data from sources",
    JobStatus.SYNTHESIZING: "Synthesising cited findings and verifying claims",
    JobStatus.COMPLETED: "Research completed",
    JobStatus.PARTIAL: "Research completed with some sources or connectors unavailable, or stopped at its cost budget",
    JobStatus.FAILED: "Research failed",
    JobStatus.REFUSED: "Evidence too thin: synthesis refused",
}


class PlanCheckpoint(BaseModel):
    """The plan checkpoint's payload: the planned connectors and their queries, the publication window."""

    connectors: list[str]
    queries: dict[str, list[str]]  # connector -> its queries
    publication_window_years: int
    available_connectors: list[str]


class CandidateView(BaseModel):
    id: str
    title: str
    url: str
    year: int | None
    venue: str | None
    scores: dict[str, float]
    total_score: float
    weighted_score: float
    explanation: str
    explanations: dict[str, str]
    rejection: str | None
    selected: bool


class ScreeningCheckpoint(BaseModel):
    """The screening checkpoint's payload: every candidate, ranked, and the ones selected; the job's
    citation chasing and the seeds it would chase (the approval's `chase_seeds` chooses others)."""

    candidates: list[CandidateView]
    selected: list[str]
    max_sources: int
    citation_chasing: CitationChasing = "off"
    chase_seeds: list[str] = Field(default_factory=list)


class QuoteView(BaseModel):
    evidence_id: str
    quote: str
    page: int
    section: str | None
    kind: str


class ExtractedSourceView(BaseModel):
    id: str | None
    title: str
    url: str | None
    success: bool
    failure_reason: str | None
    quotes: list[QuoteView]
    # how the job found it (a search, or a seed's references or citations: the seed's id)
    discovered_via: dict[str, Any] = Field(default_factory=dict)


class ExtractionCheckpoint(BaseModel):
    """The extraction checkpoint's payload: each source's outcome and the quotes the synthesis would read."""

    sources: list[ExtractedSourceView]


class ClaimView(BaseModel):
    id: str
    text: str
    evidence_ids: list[str]
    verdict: str
    kept: bool


class SynthesisCheckpoint(BaseModel):
    """The synthesis checkpoint's payload: the written report and its claims."""

    executive_summary: str
    report: str
    claims: list[ClaimView]
    confidence_score: float | None
    refusal: bool
    refusal_reason: str | None


class CheckpointView(BaseModel):
    """GET /api/agent/checkpoint/{job_id}: the phase that waits and what a person may edit there
    (docs/checkpoints.md has each phase's payload)."""

    job_id: str
    phase: Literal["plan", "screening", "extraction", "synthesis"]
    payload: PlanCheckpoint | ScreeningCheckpoint | ExtractionCheckpoint | SynthesisCheckpoint
    waiting_since: str | None
    on_timeout: Literal["abort", "continue"]


class CheckpointApproved(BaseModel):
    """POST /api/agent/checkpoint/{job_id}/approve: the job goes on, with these changes (in words)."""

    job_id: str
    phase: Literal["plan", "screening", "extraction", "synthesis"]
    decision: Literal["approved"] = "approved"
    changes: list[str]


class CheckpointAborted(BaseModel):
    """POST /api/agent/checkpoint/{job_id}/abort: the job ends FAILED."""

    job_id: str
    phase: Literal["plan", "screening", "extraction", "synthesis"]
    decision: Literal["aborted"] = "aborted"


class WaitingCheckpoint(BaseModel):
    """One job of GET /api/agent/checkpoints: the checkpoint it waits at, since when, and its goal."""

    job_id: str
    phase: Literal["plan", "screening", "extraction", "synthesis"]
    waiting_since: str | None
    goal: str | None


class WaitingCheckpoints(BaseModel):
    """GET /api/agent/checkpoints: the calling team's jobs waiting at a checkpoint, longest waiting first."""

    checkpoints: list[WaitingCheckpoint]


class CheckpointDecision(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reason: str | None = Field(default=None, max_length=500)


# --- entries of a job record's audit log and decisions ---------------------------------------------


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def audit_event(phase: str, event: str, detail: str) -> dict[str, str]:
    """An AuditEntry as the job store appends it."""
    return {"timestamp": utc_now(), "phase": phase, "event": event, "detail": detail}


def decision(decision_type: str, reasoning: str, action_taken: str) -> dict[str, str]:
    """A Decision as the job store appends it."""
    return {
        "timestamp": utc_now(),
        "decision_type": decision_type,
        "reasoning": reasoning,
        "action_taken": action_taken,
    }


class Reviewer(BaseModel):
    """Who decided at a human checkpoint."""

    team_id: str
    caller: str


class AuditEntry(BaseModel):
    """One entry of a job's audit log (read back from the record; `audit_event` writes one)."""

    timestamp: str
    phase: str
    event: str
    detail: str
    by: Reviewer | None = None  # a checkpoint's decision only


class Decision(BaseModel):
    """One of a job's autonomous (or a reviewer's) decisions (read back; `decision` writes one)."""

    timestamp: str
    decision_type: str
    reasoning: str
    action_taken: str
    phase: str | None = None  # a human checkpoint's only
    by: Reviewer | None = None


# --- the job record --------------------------------------------------------------------------------


class ExecuteResponse(BaseModel):
    """The body of POST /api/agent/execute, kept on the job record (an Idempotency-Key replay returns it
    with the job's current status)."""

    job_id: str
    status: JobStatus
    autonomous_analysis: dict[str, Any]
    execution_plan: dict[str, Any]
    cost_estimate: dict[str, Any] | None = None  # with metering: the plan's quote (functions/metering)

    @model_validator(mode="before")
    @classmethod
    def _stored_as_json(cls, value: Any) -> Any:
        """Records written before the response was a map hold it as a JSON string."""
        return json.loads(value) if isinstance(value, str) else value


def _stored_plan(value: Any) -> ResearchPlan[JobSettings] | None:
    if value is None or isinstance(value, ResearchPlan):
        return value
    return ResearchPlan.from_dict(value) if value else None  # {}: a record without a plan


def _plan_dict(plan: ResearchPlan[JobSettings] | None) -> dict[str, Any] | None:
    return plan.to_dict() if plan is not None else None


# The job's plan: a ResearchPlan, stored as its `to_dict()`.
StoredPlan = Annotated[
    ResearchPlan[JobSettings] | None,
    PlainValidator(_stored_plan),
    PlainSerializer(_plan_dict),
    WithJsonSchema({"type": "object"}),
]


class JobRecord(BaseModel):
    """A job as the job table stores it (functions/orchestrate/store.py): every field a writer sets.

    Written by the job service (functions/orchestrate/records.py, jobs.py), the steps' bookkeeping
    (progress.py), the checkpoints (checkpoints/) and the local runtime's recovery. Stored as
    `stored()`, which holds only the fields that were set."""

    job_id: str
    team_id: str
    status: JobStatus
    status_rank: int = 0
    research_goal: str | None = None
    scope_parameters: dict[str, Any] = Field(default_factory=dict)  # the request's, as sent
    source: str | None = None  # api, schedule, cli...
    schedule_id: str | None = None
    callback_url: str | None = None  # the webhook of the job's completion (functions/webhooks)
    idempotency_key: str | None = None
    expires_at: int | None = None  # the table's TTL (epoch seconds)
    created_at: str | None = None
    updated_at: str | None = None
    finished_at: str | None = None
    plan: StoredPlan = None
    execute_response: ExecuteResponse | None = None
    execution_arn: str | None = None
    failure_reason: str | None = None
    # counters of the job's progress (status and quality metrics)
    queries_total: int = 0
    queries_done: int = 0
    queries_failed: int = 0
    queries_not_run: int = 0
    hits_found: int = 0
    search_cache_hits: int = 0
    search_coalesced: int = 0
    sources_discovered: int = 0
    sources_validated: int = 0
    sources_accepted: int = 0
    sources_rejected: int = 0
    average_quality_score: float = 0.0
    extract_total: int = 0
    extract_done: int = 0
    extract_ok: int = 0
    extract_failed: int = 0
    refined: bool = False
    screening_key: str | None = None
    # work the job's budget refused (functions/metering/job_budget.py)
    budget_skipped_queries: int = 0
    budget_skipped_sources: int = 0
    budget_skipped_synthesis: int = 0
    budget_reason: str | None = None
    # a human checkpoint (functions/orchestrate/checkpoints)
    awaiting_checkpoint: bool = False
    checkpoint_phase: CheckpointPhase | None = None
    checkpoint_started_at: str | None = None
    checkpoint_reason: str | None = None
    checkpoint_state: dict[str, Any] | None = None  # the state machine's state, resumed from
    checkpoint_token: str | None = None
    # evidence ids a reviewer struck (extraction or synthesis checkpoint): no synthesis cites them
    struck_evidence: list[str] = Field(default_factory=list)
    # the outcome (Finalize)
    results_key: str | None = None
    artifacts: dict[str, str] = Field(default_factory=dict)  # artifact name -> key
    confidence_score: float | None = None
    refusal_reason: str | None = None
    partial_reasons: list[str] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)
    audit: list[AuditEntry] = Field(default_factory=list)

    @property
    def research_plan(self) -> ResearchPlan[JobSettings]:
        if self.plan is None:
            raise ValueError(f"job {self.job_id} has no plan")
        return self.plan

    @property
    def depth(self) -> str:
        return str(self.scope_parameters.get("discovery_depth") or "rapid")

    @property
    def citation_chasing(self) -> CitationChasing:
        """The scope's `citation_chasing` (validated at submission), else the depth's default."""
        asked = self.scope_parameters.get("citation_chasing")
        if asked in ("off", "backward", "forward", "both"):
            return asked  # type: ignore[no-any-return]
        return CHASING_BY_DEPTH.get(self.depth, "off")

    @property
    def cost_estimate(self) -> dict[str, Any] | None:
        return self.execute_response.cost_estimate if self.execute_response else None

    def stored(self) -> dict[str, Any]:
        """The record as the job store holds it: the fields that were set."""
        return self.model_dump(mode="json", exclude_unset=True)

    def as_dict(self) -> dict[str, Any]:
        """The record as stored (for the living review and the webhook, which read it as a mapping)."""
        return self.stored()


# --- GET /api/agent/status/{job_id} ------------------------------------------------------------------


class CurrentPhase(BaseModel):
    phase_name: str  # the status, or `<PHASE>_CHECKPOINT` while a person is asked
    phase_description: str
    progress_percentage: int
    intelligent_actions_taken: list[str]


class QualityMetrics(BaseModel):
    sources_discovered: int
    sources_validated: int
    sources_accepted: int
    sources_rejected: int
    average_quality_score: float
    extractions_successful: int
    extractions_failed: int


class WaitingAt(BaseModel):
    phase: str
    waiting_since: str | None


class JobStatusResponse(BaseModel):
    """GET /api/agent/status/{job_id}. `failure_reason` only when the job failed, `awaiting_checkpoint`
    and `checkpoint` only while it waits at a human checkpoint."""

    job_id: str
    status: JobStatus
    current_phase: CurrentPhase
    autonomous_decisions: list[Decision]
    quality_metrics: QualityMetrics
    created_at: str | None
    updated_at: str | None
    source: str | None
    failure_reason: str | None = None
    awaiting_checkpoint: bool | None = None
    checkpoint: WaitingAt | None = None


# --- GET /api/agent/results/{job_id} -----------------------------------------------------------------


class AuditTrailSummary(BaseModel):
    total_decisions_logged: int
    full_audit_log_available: bool
    audit_log: list[AuditEntry]


class ArtifactLink(BaseModel):
    key: str
    api_path: str
    url: str


class ExecutionCounts(BaseModel):
    """The execution summary of a job that FAILED before it had results."""

    total_sources_discovered: int
    sources_validated: int
    extractions_successful: int


class StoredExecutionSummary(ExecutionSummary):
    """A results document's execution summary; documents written before these four were reported (and
    kept across restarts in LOCAL_STATE_DIR) lack them, and answer without them."""

    queries_not_run: dict[str, str] = Field(default_factory=dict)
    partial_reasons: list[str] = Field(default_factory=list)
    search_stats: dict[str, int] = Field(default_factory=dict)
    prisma_flow: PrismaFlow | None = None


class JobResultSource(ResultSource):
    is_retracted: bool | None = None  # a scheduled run's (its living review refreshes the flags)


class JobResults(BaseModel):
    """GET /api/agent/results/{job_id}: the stored results document (functions/research/job/report.py)
    with the job's status, audit trail and artifact links; a job that FAILED before Finalize has no
    synthesis and says why (`failure_reason`). A scheduled run adds `changes_since_last_run`."""

    job_id: str
    status: JobStatus
    synthesis: dict[str, Any] | None
    execution_summary: StoredExecutionSummary | ExecutionCounts
    audit_trail_summary: AuditTrailSummary
    autonomous_decisions: list[Decision]
    sources: list[JobResultSource]
    evidence: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    methodologies: dict[str, Any] | None = None
    confidence_score: float
    confidence_rationale: str | None = None
    refusal: bool
    refusal_reason: str | None
    writer: str | None = None
    failure_reason: str | None = None
    artifacts: dict[str, ArtifactLink]
    changes_since_last_run: dict[str, Any] | None = None
