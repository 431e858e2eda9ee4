"""The human checkpoint API behind /api/agent/checkpoint/{job_id}: what waits, approve (with the phase's
edits) and abort, each recorded in the job's audit trail and decisions with who decided and when."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.common.errors import Conflict, UpstreamError
from functions.common.storage import BlobStore
from functions.orchestrate.checkpoints.edits import (
    ExtractionEdits,
    PlanEdits,
    ScreeningEdits,
    SynthesisEdits,
    parse_edits,
)
from functions.orchestrate.checkpoints.review import (
    Review,
    review_extraction,
    review_plan,
    review_screening,
    review_synthesis,
)
from functions.orchestrate.checkpoints.views import (
    CheckpointContext,
    extraction_view,
    plan_view,
    screening_view,
    synthesis_view,
)
from functions.orchestrate.checkpoints.waiting import CHECKPOINT_CLEARED
from functions.orchestrate.models import (
    CheckpointAborted,
    CheckpointApproved,
    CheckpointView,
    ExtractionCheckpoint,
    JobRecord,
    JobStatus,
    PlanCheckpoint,
    ScreeningCheckpoint,
    SynthesisCheckpoint,
    WaitingCheckpoint,
    WaitingCheckpoints,
    audit_event,
    decision,
)
from functions.orchestrate.store import JobStore, TaskTokens
from functions.research.planning.job import CONNECTORS, Renderer, connector_syntax
from functions.research.planning.request import CheckpointPhase


@dataclass
class CheckpointService:
    jobs: JobStore
    find_job: Callable[[str, str], JobRecord]  # the team's job; NotFound for another team's
    data: BlobStore
    tokens: TaskTokens | None
    render: Renderer = connector_syntax
    connectors: Callable[[], tuple[str, ...]] = lambda: CONNECTORS

    def waiting(self, team_id: str) -> WaitingCheckpoints:
        """The team's jobs waiting at a checkpoint, longest waiting first."""
        jobs = [
            job for job in self.jobs.waiting_at_checkpoint(team_id) if not JobStatus(job["status"]).terminal
        ]
        jobs.sort(key=lambda job: (job.get("checkpoint_started_at") or "", job["job_id"]))
        return WaitingCheckpoints(
            checkpoints=[
                WaitingCheckpoint(
                    job_id=job["job_id"],
                    phase=job.get("checkpoint_phase") or "screening",
                    waiting_since=job.get("checkpoint_started_at"),
                    goal=job.get("research_goal"),
                )
                for job in jobs
            ]
        )

    def show(self, team_id: str, job_id: str) -> CheckpointView:
        context = self._waiting(team_id, job_id)
        return CheckpointView(
            job_id=job_id,
            phase=context.phase,
            payload=self._view(context),
            waiting_since=context.job.checkpoint_started_at,
            on_timeout=context.job.scope_parameters.get("on_timeout") or "abort",
        )

    def approve(
        self, team_id: str, job_id: str, body: dict[str, Any] | None, caller: str
    ) -> CheckpointApproved:
        context, tokens = self._waiting(team_id, job_id), self._tokens()
        edits = parse_edits(context.phase, body)
        review = self._review(context, edits)
        detail = "; ".join(review.changes) or "approved unchanged"
        if edits.reason:
            detail += f" ({edits.reason})"
        token = self._record(context, "APPROVED", caller, detail, review.record)
        tokens.succeed(token, review.state)  # the state the job goes on with (ResultPath "$")
        self._cleared(context)
        return CheckpointApproved(job_id=job_id, phase=context.phase, changes=review.changes)

    def abort(self, team_id: str, job_id: str, reason: str | None, caller: str) -> CheckpointAborted:
        context, tokens = self._waiting(team_id, job_id), self._tokens()
        token = self._record(context, "ABORTED", caller, reason or "aborted by the reviewer", {})
        tokens.fail(token, "CheckpointAborted", reason or "aborted by the reviewer")
        self._cleared(context)
        return CheckpointAborted(job_id=job_id, phase=context.phase)

    def _waiting(self, team_id: str, job_id: str) -> CheckpointContext:
        job = self.find_job(team_id, job_id)
        if not job.awaiting_checkpoint or not job.checkpoint_token or job.status.terminal:
            raise Conflict(f"job {job_id} is not waiting at a checkpoint")
        phase: CheckpointPhase = job.checkpoint_phase or "screening"
        return CheckpointContext(job, phase, job.checkpoint_state or {}, self.data)

    def _view(
        self, context: CheckpointContext
    ) -> PlanCheckpoint | ScreeningCheckpoint | ExtractionCheckpoint | SynthesisCheckpoint:
        if context.phase == "plan":
            return plan_view(context, self.connectors())
        if context.phase == "extraction":
            return extraction_view(context)
        if context.phase == "synthesis":
            return synthesis_view(context)
        return screening_view(context)

    def _review(self, context: CheckpointContext, edits: object) -> Review:
        if isinstance(edits, PlanEdits):
            return review_plan(context, edits, self.connectors(), self.render)
        if isinstance(edits, ExtractionEdits):
            return review_extraction(context, edits)
        if isinstance(edits, SynthesisEdits):
            return review_synthesis(context, edits)
        assert isinstance(edits, ScreeningEdits)
        return review_screening(context, edits)

    def _record(
        self, context: CheckpointContext, verdict: str, caller: str, detail: str, fields: dict[str, Any]
    ) -> str:
        """Recorded before the task resumes: an abort fails the job at once, and a terminal job takes no
        more writes. Returns the waiting task's token."""
        job = context.job
        who = {"team_id": job.team_id, "caller": caller}
        entry = {**audit_event(job.status, f"CHECKPOINT_{verdict}", f"{context.phase}: {detail}"), "by": who}
        reasoning = f"Reviewer {verdict.lower()} the {context.phase} checkpoint: {detail}"
        self.jobs.update(
            job.team_id,
            job.job_id,
            set_fields={**fields, "checkpoint_reason": detail},
            append={
                "audit": [entry],
                "decisions": [
                    {**decision("HUMAN_CHECKPOINT", reasoning, verdict), "phase": context.phase, "by": who}
                ],
            },
        )
        return str(job.checkpoint_token)

    def _cleared(self, context: CheckpointContext) -> None:
        job = context.job
        self.jobs.update(job.team_id, job.job_id, set_fields={**CHECKPOINT_CLEARED, "checkpoint_state": None})

    def _tokens(self) -> TaskTokens:
        if self.tokens is None:
            raise UpstreamError("checkpoint decisions are not configured")
        return self.tokens
