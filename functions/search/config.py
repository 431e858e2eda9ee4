"""Settings of the search function only (the shared ones live in functions.common.settings).

Intervals and time-outs are settings so that tests and benchmarks can shrink them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class SearchSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SEARCH_", case_sensitive=False, extra="ignore")

    # Which connectors answer when a request does not name any (comma-separated; empty = all registered).
    connectors: str = ""
    # Per-connector budget: rate-limit wait + HTTP (with retries) + parsing.
    connector_timeout_seconds: float = 12.0
    # HTTP retries for 429/5xx/transport errors, backoff honouring Retry-After up to max_backoff.
    upstream_retries: int = 2
    max_backoff_seconds: float = 4.0
    # Minimum spacing between requests to each provider, shared by every instance (rate-limit table).
    arxiv_min_interval_seconds: float = 3.0
    semantic_scholar_min_interval_seconds: float = 1.0
    openalex_min_interval_seconds: float = 0.1
    crossref_min_interval_seconds: float = 0.2
    # Circuit breaker per provider.
    breaker_failure_threshold: int = 3
    breaker_cooldown_seconds: float = 30.0
    # Response cache per connector request.
    cache_ttl_seconds: int = 6 * 3600
    # Where the cache and rate-limit buckets live: DynamoDB tables (deployed, local runtime) or memory.
    state_backend: Literal["dynamodb", "memory"] = "dynamodb"
    # Default per-connector result count when the caller does not say.
    default_per_connector: int = Field(default=20, ge=1, le=100)

    def min_interval(self, connector: str) -> float:
        value = getattr(self, f"{connector}_min_interval_seconds", 0.0)
        return float(value)

    @property
    def connector_names(self) -> list[str]:
        return [name.strip() for name in self.connectors.split(",") if name.strip()]
