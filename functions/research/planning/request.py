"""What a research job is asked to do: the agent job API's execute body and its scope (API 0 of the
search/extract seed), shared by the job routes, the schedules that start jobs and the planner."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from functions.common.callback_urls import check_callback_url
from functions.common.errors import InvalidInput
from functions.common.settings import get_settings

DiscoveryDepth = Literal["rapid", "focused", "comprehensive", "exhaustive"]
ImpactLevel = Literal["cutting_edge", "high_impact", "established", "baseline"]
CheckpointPhase = Literal["plan", "screening", "extraction", "synthesis"]
CHECKPOINT_PHASES: tuple[CheckpointPhase, ...] = ("plan", "screening", "extraction", "synthesis")
CheckpointTimeout = Literal["abort", "continue"]
CitationChasing = Literal["off", "backward", "forward", "both"]
# chasing when the caller does not say: the thorough depths follow the citations, the quick ones do not
CHASING_BY_DEPTH: dict[str, CitationChasing] = {
    "rapid": "off",
    "focused": "off",
    "comprehensive": "both",
    "exhaustive": "both",
}

SOURCES_BY_DEPTH: dict[str, int] = {"rapid": 10, "focused": 15, "comprehensive": 30, "exhaustive": 50}
DEFAULT_WINDOW_YEARS = 3

MIN_COST_USD, MAX_COST_USD = 0.000001, 1_000_000_000.0  # a micro-dollar .. a billion dollars
# what `_meaningful` checks, stated in the OpenAPI document: at least 10 non-blank characters
RESEARCH_GOAL_PATTERN = r"(?:\S\s*){10}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TemporalBoundary(_Strict):
    publication_window_years: int = Field(default=DEFAULT_WINDOW_YEARS, ge=1, le=10)


class QualityThreshold(_Strict):
    impact_level: ImpactLevel = "baseline"


class ScopeParameters(_Strict):
    temporal_boundary: TemporalBoundary = Field(default_factory=TemporalBoundary)
    quality_threshold: QualityThreshold = Field(default_factory=QualityThreshold)
    discovery_depth: DiscoveryDepth = "focused"
    source_diversity_requirement: bool = True
    # Extension: the phases after which the job waits for a person (waitForTaskToken, docs/checkpoints.md);
    # `true` is the screening checkpoint alone.
    human_checkpoints: bool | list[CheckpointPhase] = False
    # Extension: what a checkpoint's window passing does: end the job (abort) or go on unchanged.
    on_timeout: CheckpointTimeout = "abort"
    # Extension: relevant sources with verified evidence the synthesis needs (else REFUSED); unset, the
    # deployment's default (one source, with confidence capped and a single-source caveat).
    min_sources: int | None = Field(default=None, ge=1, le=50)
    # Extension: a hard budget in USD (docs/usage.md): the job takes on no work that would exceed it and
    # finishes PARTIAL with a BUDGET_REACHED decision naming what it skipped.
    # bounded so that DynamoDB can store it (beyond 1e125 or below 1e-130 its numbers overflow: a 500)
    max_cost_usd: float | None = Field(default=None, ge=MIN_COST_USD, le=MAX_COST_USD, allow_inf_nan=False)
    # Extension: follow the best selected sources' references (backward), the works citing them
    # (forward), both or neither (docs/workflow.md, "Citation chasing"); unset, by depth (CHASING_BY_DEPTH).
    citation_chasing: CitationChasing | None = None

    @property
    def target_sources(self) -> int:
        return SOURCES_BY_DEPTH[self.discovery_depth]

    @property
    def chasing(self) -> CitationChasing:
        return self.citation_chasing or CHASING_BY_DEPTH[self.discovery_depth]


class ExecuteRequest(_Strict):
    research_goal: str = Field(
        min_length=10, max_length=500, json_schema_extra={"pattern": RESEARCH_GOAL_PATTERN}
    )
    scope_parameters: ScopeParameters = Field(default_factory=ScopeParameters)
    # Extension: receives the job's completion as a signed POST (functions/webhooks, docs/living-reviews.md).
    callback_url: str | None = Field(default=None, max_length=2048)

    @field_validator("callback_url")
    @classmethod
    def _callback(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return check_callback_url(value, get_settings().private_hosts_for("webhook"))
        except InvalidInput as exc:
            raise ValueError(exc.message) from None

    @field_validator("research_goal")
    @classmethod
    def _meaningful(cls, value: str) -> str:
        stripped = " ".join(value.split())
        if sum(not char.isspace() for char in stripped) < 10:
            raise ValueError("research_goal must have at least 10 non-blank characters")
        return stripped


def checkpoint_phases(human_checkpoints: object) -> list[CheckpointPhase]:
    """The phases a job waits after, in workflow order: `true` is screening, a list names them."""
    if human_checkpoints is True:
        return ["screening"]
    named = set(human_checkpoints) if isinstance(human_checkpoints, list) else set()
    return [phase for phase in CHECKPOINT_PHASES if phase in named]
