"""Settings of the search function only (the shared ones live in functions.common.settings).

Intervals and time-outs are settings so that tests and benchmarks can shrink them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from functions.common.outbound.upstream_turns import ProviderManners
from functions.search.team_keys import base_provider


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
    # Requests that are not searches reach providers too: PDFs from arxiv.org (paced, never a parallel
    # burst; docs/capacity.md says why 1 s and what 3 s would cost) and Unpaywall's open-access lookups.
    arxiv_pdf_min_interval_seconds: float = 1.0
    unpaywall_min_interval_seconds: float = 0.1
    # Providers that allow one connection at a time (a turn is held for the whole exchange).
    exclusive_providers: str = "arxiv"
    # Added to every interval between two requests as they leave: the receiving side's clock and
    # scheduling jitter must not see two requests closer than the interval.
    politeness_margin_seconds: float = Field(default=0.05, ge=0.0, le=1.0)
    # Fair sharing among teams: how far (in seconds of a provider's turns) a team with few requests
    # waiting may be served ahead of the least-served team that is asking (docs/search.md, fair turns).
    fairness_lag_seconds: float = Field(default=5.0, ge=0.0, le=60.0)
    # Where turns at the providers are kept: a DynamoDB item per provider, shared by every Lambda
    # (deployed), or this process's memory (the single-process local runtime, unit tests).
    turns_backend: Literal["dynamodb", "memory"] | None = None  # None: as `state_backend`
    # Daily allowances: OpenAlex `search=` calls on the service's key (1,000 a day on a free key; lookups
    # by id are free), Unpaywall calls. 0 = unlimited. A team with its own OpenAlex key has as many again,
    # counted apart.
    openalex_searches_per_day: int = Field(default=1000, ge=0)
    unpaywall_calls_per_day: int = Field(default=100_000, ge=0)
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
        value = getattr(self, f"{base_provider(connector)}_min_interval_seconds", 0.0)
        return float(value)

    def manners(self, provider: str) -> ProviderManners:
        """A team's own budget at a provider (`<provider>@team:<id>`) keeps the provider's manners."""
        provider = base_provider(provider)
        exclusive = {name.strip() for name in self.exclusive_providers.split(",") if name.strip()}
        return ProviderManners(
            interval=self.min_interval(provider),
            exclusive=provider in exclusive,
            margin=self.politeness_margin_seconds,
            lag=self.fairness_lag_seconds,
        )

    @property
    def effective_turns_backend(self) -> Literal["dynamodb", "memory"]:
        return self.turns_backend or self.state_backend

    @property
    def connector_names(self) -> list[str]:
        return [name.strip() for name in self.connectors.split(",") if name.strip()]
