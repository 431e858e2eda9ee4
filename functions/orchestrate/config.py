"""Workflow settings (environment variables), read once per cold start like `functions.common.settings`."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from functions.research.planning.job import DEFAULT_RELEVANCE_THRESHOLD, SEARCH_SECONDS_BY_DEPTH
from functions.research.planning.plan import DEFAULT_MIN_SOURCES


class WorkflowSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RESEARCH_", case_sensitive=False, extra="ignore")

    # Per-source extraction budget; stays under the 45 s Task timeout so the step, not Step Functions,
    # records a slow source as timed out (tests shorten it to keep the suite fast).
    extract_budget_seconds: float = 38.0
    # How long one extraction waits for its turn at a provider before it hands the wait to the state
    # machine (StepDeferred, retried later for free): a Lambda is billed while it waits, and a retry costs
    # about what one to two seconds of the extraction's waiting cost (a transition, an invocation).
    extract_turn_wait_seconds: float = Field(default=2.0, gt=0)
    # The Synthesize step's time for model calls (writer, then judge), inside the same 45 s timeout: a
    # slow model falls back to the extractive writer and lexical verification instead of failing the job.
    synthesis_llm_budget_seconds: float = 30.0
    # Extract Map's MaxConcurrency (passed to the state machine through MaxConcurrencyPath).
    extract_max_concurrency: int = 16
    search_max_concurrency: int = 20
    # A job's search time by depth (JSON to override, e.g. {"rapid": 30}), spent over Search iterations
    # of at most `search_iteration_seconds` each (inside the 45 s task limit); a refinement round gets
    # `refine_search_share` of it. The planner plans as many queries per connector as fit in it when
    # `search_sharing_jobs` jobs share each provider (docs/capacity.md).
    search_seconds_by_depth: dict[str, float] = Field(default_factory=lambda: dict(SEARCH_SECONDS_BY_DEPTH))
    search_iteration_seconds: float = Field(default=26.0, gt=0, le=35.0)
    refine_search_share: float = Field(default=0.5, gt=0, le=1.0)
    search_sharing_jobs: int = Field(default=4, ge=1)
    relevance_threshold: float = DEFAULT_RELEVANCE_THRESHOLD
    # One Screen iteration embeds candidates (most lexically promising first) for at most this long, which
    # keeps the step far from its 45 s limit when many jobs share the CPU; what it had no time for is
    # embedded in a further iteration (the state machine loops), up to `screen_embedding_rounds`
    # iterations, after which the rest are scored lexically.
    screen_embedding_seconds: float = Field(default=20.0, gt=0)
    screen_embedding_rounds: int = Field(default=8, ge=1)
    # The Chase step (citation chasing, after screening) inside its 45 s task: this long for the graph
    # requests' turns, then this long to embed the chased works (beyond it they are scored lexically).
    chase_seconds: float = Field(default=18.0, gt=0, le=25.0)
    chase_embedding_seconds: float = Field(default=12.0, gt=0, le=15.0)
    # How long a human checkpoint may wait for approve/abort before the job fails.
    checkpoint_window_seconds: int = 24 * 3600
    # Sources backing a verified claim before a synthesis is written (else REFUSED); a caller may
    # demand more with `scope_parameters.min_sources`.
    min_sources_for_synthesis: int = DEFAULT_MIN_SOURCES
    # Job records (and their results) expire from the jobs table after this many days (DynamoDB TTL);
    # idempotency keys after one day.
    job_retention_days: int = 30
    # A job not updated for this long is checked against its execution when read: one whose execution
    # has ended without recording a final state is marked FAILED (longer than any Task's 45 s).
    stale_job_seconds: int = 120
    # Artifact download links are presigned for this long.
    artifact_link_seconds: int = 3600

    def search_seconds(self, depth: str, *, refinement: bool = False) -> float:
        seconds = float(self.search_seconds_by_depth.get(depth, SEARCH_SECONDS_BY_DEPTH["rapid"]))
        return seconds * self.refine_search_share if refinement else seconds


@lru_cache(maxsize=1)
def get_workflow_settings() -> WorkflowSettings:
    return WorkflowSettings()


def reset_workflow_settings_cache() -> None:
    get_workflow_settings.cache_clear()
