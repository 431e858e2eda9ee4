"""The search service's own models: what a caller asks, what a connector returns, what comes back."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, Field

from functions.common.models import Paper

SourceType = Literal["academic", "technical", "news"]
SOURCE_TYPES: tuple[SourceType, ...] = get_args(SourceType)


class PaperQuery(BaseModel):
    query: str
    year_start: int | None = None
    year_end: int | None = None
    max_results: int = 20
    per_connector: int = 20  # top_k per source
    connectors: list[str] | None = None  # None = all configured
    min_quality_score: float | None = None
    source_types: list[str] | None = None
    require_year: bool = False  # drop works without a publication year (API 1 requires one)
    # Optional structure behind `query` for engines with boolean syntax: every group must match, any
    # phrase of a group may (concepts AND-ed, synonyms OR-ed). Engines without it search `query`.
    concepts: list[list[str]] | None = None
    # Internal, never part of a request body: the caller's team, set by the routes from the request's
    # team (functions.common.web.api.TeamId) and by the workflow from its job. Only the `library` connector
    # reads it (a team sees only its own uploads; None = no library results). Upstream connectors ignore
    # it, so their cached answers stay shared.
    team_id: str | None = None
    # Internal too: whose turn at a provider the request takes (turns are shared fairly per team, then
    # per job), how valuable it is within its job (0 first), and the epoch time by which its turn must
    # have come (a request still waiting then is "not run", not failed). Never part of the cache key.
    job_id: str | None = None
    priority: int = 0
    deadline: float | None = None


class FoundPaper(Paper):
    """A Paper as search sees it: plus its kind of source and its rank in each connector's answer."""

    source_type: SourceType = "academic"
    connector_ranks: dict[str, int] = Field(default_factory=dict)


class ConnectorResult(BaseModel):
    """One connector's answer to one request: papers, or why there are none."""

    connector: str
    papers: list[FoundPaper] = Field(default_factory=list)
    total: int = 0  # matches the upstream reports (may exceed len(papers))
    error: str | None = None
    # The request never left: its turn at the provider did not come before its deadline (our own
    # scheduling, not the upstream's answer). `error` says so; it is not a failure of the upstream.
    not_run: bool = False
    from_cache: bool = False
    # Served by an identical request of another job that was in flight at the same time.
    coalesced: bool = False
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


class SearchOutcome(BaseModel):
    papers: list[Paper]  # FoundPaper instances: de-duplicated, sorted by relevance_score desc
    total_found: int
    connectors_used: list[str]
    failed_connectors: dict[str, str]  # connector -> reason
    query_time_ms: float
    from_cache: bool = False
    rrf_scores: dict[str, float] = Field(default_factory=dict)  # canonical_id -> RRF (k=60) score
    # Of `failed_connectors`, those whose request was not run in time (rate budget), not failed upstream.
    not_run: dict[str, str] = Field(default_factory=dict)
    cache_hits: int = 0
    coalesced: int = 0
