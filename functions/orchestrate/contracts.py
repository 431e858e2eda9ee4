"""The typed contracts of the research state machine (statemachine/research.asl.json) and the job record.

Each Task state's payload is parsed into its input model at the step boundary, and each step returns its
output model dumped to the JSON the ASL's paths read. Large data (hits, screened candidates, extracted
papers, the synthesis) stays in the data bucket; only keys travel between states (the 256 KB limit).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from functions.common.tenancy import DEFAULT_TEAM, checked_team
from functions.research.job.inputs import Extraction, QueryResult
from functions.research.planning.plan import PlannedQuery
from functions.research.planning.request import CheckpointPhase, checkpoint_phases

# The pause between two Search iterations (a Wait state): short, the providers' queues pace the job.
ITERATION_WAIT_SECONDS = 1


class _Payload(BaseModel):
    """A state's payload: fields the ASL adds that a step does not read are ignored."""

    model_config = ConfigDict(extra="ignore")


class _JobPayload(_Payload):
    job_id: str
    team_id: str | None = None

    @property
    def team(self) -> str:
        """The job's team, carried next to the job id. Executions started before jobs had teams carry
        none: they belong to the default team."""
        return checked_team(str(self.team_id or DEFAULT_TEAM))


# --- Plan ------------------------------------------------------------------------------------------


class ExecutionInput(_Payload):
    """The execution's input: the job service's start, or an EventBridge Scheduler target's (a schedule
    starts the workflow with the request itself and no job record)."""

    job_id: str | None = None
    team_id: str | None = None
    # as the scheduler sent them: an invalid request must still reach MarkFailed, which records why
    research_goal: Any = None
    scope_parameters: Any = None
    callback_url: Any = None
    source: str | None = None
    schedule_id: str | None = None

    @property
    def team(self) -> str:
        return checked_team(str(self.team_id or DEFAULT_TEAM))

    def request_fields(self) -> dict[str, Any]:
        """The fields of an ExecuteRequest, validated by the step that needs one."""
        return {
            "research_goal": self.research_goal,
            "scope_parameters": self.scope_parameters or {},
            "callback_url": self.callback_url,
        }


class PlanInput(_Payload):
    input: ExecutionInput = Field(default_factory=ExecutionInput)
    execution_name: str | None = None


class SearchState(_Payload):
    """What the state machine carries between Search iterations (functions/orchestrate/search_round.py)."""

    pending: list[PlannedQuery] = Field(default_factory=list)
    results: list[QueryResult] = Field(default_factory=list)
    round: int = 0
    started_at: float | None = None
    phase: Literal["plan", "refine"] = "plan"
    done: bool = False
    wait_seconds: int = ITERATION_WAIT_SECONDS


class CheckpointPhases(BaseModel):
    """Which checkpoints the job waits at: the ASL's After* Choice states read `$.checkpoints.<phase>`."""

    plan: bool = False
    screening: bool = False
    extraction: bool = False
    synthesis: bool = False

    @classmethod
    def requested(cls, human_checkpoints: object) -> CheckpointPhases:
        return cls.model_validate(dict.fromkeys(checkpoint_phases(human_checkpoints), True))


class PlanOutput(BaseModel):
    job_id: str
    team_id: str
    search: SearchState
    focus_areas: list[str]
    max_concurrency: int
    checkpoints: CheckpointPhases


# --- Search ----------------------------------------------------------------------------------------


class SearchInput(_JobPayload):
    search: SearchState = Field(default_factory=SearchState)


# --- Screen ----------------------------------------------------------------------------------------


class ScreenInput(_JobPayload):
    search_results: list[QueryResult] = Field(default_factory=list)


class SelectedSource(_Payload):
    source_id: str
    url: str
    title: str = ""


class ScreenOutput(BaseModel):
    # CONTINUE: the candidates are not all embedded yet; the state machine runs Screen again
    action: Literal["REFINE", "EXTRACT", "CONTINUE"]
    refined_queries: list[PlannedQuery] = Field(default_factory=list)
    selected: list[SelectedSource] = Field(default_factory=list)


# --- Chase ---------------------------------------------------------------------------------------


class ChaseInput(_JobPayload):
    """The selection after screening (and its checkpoint) and the searches' results, screened again with
    the chased works."""

    selected: list[SelectedSource] = Field(default_factory=list)
    search_results: list[QueryResult] = Field(default_factory=list)


class ChaseOutput(BaseModel):
    action: Literal["EXTRACT"] = "EXTRACT"
    selected: list[SelectedSource] = Field(default_factory=list)


# --- Checkpoint<Phase> ------------------------------------------------------------------------------

# Keys of the state that belong to one pass through a checkpoint, not to the job's work.
TRANSIENT_STATE_KEYS = ("checkpoint_timeout", "resume_at", "error")


class CheckpointInput(_JobPayload):
    """The checkpoint Task's payload: the phase that waits and the whole state (`"state.$": "$"`), which
    the job record keeps as `checkpoint_state` to resume from and to apply the reviewer's edits to."""

    task_token: str
    phase: CheckpointPhase
    state: dict[str, Any] = Field(default_factory=dict)

    @property
    def resumable_state(self) -> dict[str, Any]:
        return {key: value for key, value in self.state.items() if key not in TRANSIENT_STATE_KEYS}


class CheckpointOutput(BaseModel):
    job_id: str
    waiting: bool = True


# --- Extract (one Map item) ------------------------------------------------------------------------


class ExtractInput(_JobPayload):
    source: SelectedSource
    focus_areas: list[str] | None = None
    priority: int | None = None


# --- Synthesize ------------------------------------------------------------------------------------


class SynthesizeInput(_JobPayload):
    extractions: list[Extraction] = Field(default_factory=list)


class SynthesizeOutput(BaseModel):
    synthesis_key: str
    refused: bool
    confidence_score: float


# --- Finalize --------------------------------------------------------------------------------------


class SynthesisRef(_Payload):
    synthesis_key: str
    refused: bool = False


class FinalizeInput(_JobPayload):
    search_results: list[QueryResult] = Field(default_factory=list)
    extractions: list[Extraction] = Field(default_factory=list)
    synthesis: SynthesisRef


class FinishedOutput(BaseModel):
    job_id: str
    status: str
    moved: bool


# --- MarkFailed ------------------------------------------------------------------------------------


class StepError(_Payload):
    """Step Functions' Catch record: the error's name and its cause (a Lambda's JSON error, often)."""

    Error: Any = "Error"
    Cause: Any = ""

    def reason(self) -> str:
        cause = str(self.Cause)
        try:
            parsed = json.loads(cause)
            if isinstance(parsed, dict) and parsed.get("errorMessage"):
                cause = str(parsed["errorMessage"])
        except ValueError:
            pass
        return f"{self.Error}: {cause}".strip().rstrip(":")[:1000]

    @property
    def name(self) -> str:
        return str(self.Error)


class FailedState(ExecutionInput):
    """The whole state at the failure: the job's ids (or the execution's input, for a Plan that failed)."""

    input: ExecutionInput | None = None
    error: StepError | None = None

    @field_validator("error", mode="before")
    @classmethod
    def _no_error_recorded(cls, value: Any) -> Any:
        return value or None

    @property
    def execution(self) -> ExecutionInput:
        """Whichever of the state and the execution input names the job's team and request."""
        return self if self.team_id or self.input is None else self.input


class FailInput(_Payload):
    state: FailedState = Field(default_factory=FailedState)
    execution_name: str | None = None

    @property
    def job_id(self) -> str:
        inner = self.state.input.job_id if self.state.input else None
        return str(self.state.job_id or inner or self.execution_name)

    @property
    def reason(self) -> str:
        return self.state.error.reason() if self.state.error else "unknown failure"


class FailOutput(FinishedOutput):
    reason: str
