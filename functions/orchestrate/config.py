"""Workflow settings (environment variables), read once per cold start like `functions.common.settings`."""

from __future__ import annotations

from functools import lru_cache

from pydantic_settings import BaseSettings, SettingsConfigDict

from functions.research.planning import DEFAULT_MIN_SOURCES, DEFAULT_RELEVANCE_THRESHOLD


class WorkflowSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RESEARCH_", case_sensitive=False, extra="ignore")

    # Per-source extraction budget; stays under the 45 s Task timeout so the step, not Step Functions,
    # records a slow source as timed out (tests shorten it to keep the suite fast).
    extract_budget_seconds: float = 38.0
    # The Synthesize step's time for model calls (writer, then judge), inside the same 45 s timeout: a
    # slow model falls back to the extractive writer and lexical verification instead of failing the job.
    synthesis_llm_budget_seconds: float = 30.0
    # Extract Map's MaxConcurrency (passed to the state machine through MaxConcurrencyPath).
    extract_max_concurrency: int = 16
    search_max_concurrency: int = 20
    relevance_threshold: float = DEFAULT_RELEVANCE_THRESHOLD
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


@lru_cache(maxsize=1)
def get_workflow_settings() -> WorkflowSettings:
    return WorkflowSettings()


def reset_workflow_settings_cache() -> None:
    get_workflow_settings.cache_clear()
