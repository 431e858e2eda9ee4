"""Shapes of the agent job API's job records (the request itself is functions/research/planning/request.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ARTIFACT_NAMES: dict[str, str] = {
    "report.md": "text/markdown; charset=utf-8",
    "bibliography.bib": "application/x-bibtex; charset=utf-8",
    "annotated_bibliography.md": "text/markdown; charset=utf-8",
    "quote_library.json": "application/json",
    "search_report.md": "text/markdown; charset=utf-8",
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


class CheckpointView(BaseModel):
    """GET /api/agent/checkpoint/{job_id}: the phase that waits and what a person may edit there
    (docs/checkpoints.md has each phase's payload)."""

    job_id: str
    phase: Literal["plan", "screening", "extraction", "synthesis"]
    payload: dict[str, Any]
    waiting_since: str | None
    on_timeout: Literal["abort", "continue"]


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
    return {"timestamp": utc_now(), "phase": phase, "event": event, "detail": detail}


def decision(decision_type: str, reasoning: str, action_taken: str) -> dict[str, str]:
    return {
        "timestamp": utc_now(),
        "decision_type": decision_type,
        "reasoning": reasoning,
        "action_taken": action_taken,
    }
