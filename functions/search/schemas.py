"""Request and response bodies of the search routes, field for field as the seed contracts say."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict

from functions.common.validation import JsonInt
from functions.search.models import SourceType
from functions.search.sources import connector_names

MIN_YEAR = 1900


def _current_year() -> int:
    return datetime.now(UTC).year


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain at least one non-space character")
    return value


# the OpenAPI document states what the validators enforce: at least one non-space character
NON_BLANK_PATTERN = r"\S"
QueryText = Annotated[
    str,
    Field(min_length=1, max_length=500, json_schema_extra={"pattern": NON_BLANK_PATTERN}),
    AfterValidator(_non_blank),
]
CONNECTOR_NAMES: tuple[str, ...] = connector_names()
ConnectorName = Annotated[str, Field(json_schema_extra={"enum": list(CONNECTOR_NAMES)})]
CONNECTORS_SCHEMA: JsonDict = {"minItems": 1}


def _year_bounds(schema: dict[str, Any]) -> None:
    schema.update(minimum=MIN_YEAR, maximum=_current_year())


class _Strict(BaseModel):
    # Wrong JSON types are errors ("20" is not a number); unknown fields are ignored.
    model_config = ConfigDict(strict=True, extra="ignore")


# ---- API 1: POST /api/tools/search ---------------------------------------------------------------


class YearRange(_Strict):
    # start <= end is checked too (400), a rule JSON Schema cannot state
    start: JsonInt | None = Field(default=None, json_schema_extra=_year_bounds)
    end: JsonInt | None = Field(default=None, json_schema_extra=_year_bounds)

    @field_validator("start", "end")
    @classmethod
    def _in_range(cls, value: int | None) -> int | None:
        if value is not None and not MIN_YEAR <= value <= _current_year():
            raise ValueError(f"must be between {MIN_YEAR} and {_current_year()}")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> YearRange:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise ValueError("start must not be after end")
        return self


class SearchFilters(_Strict):
    year_range: YearRange | None = None
    source_types: list[SourceType] | None = None
    min_quality_score: float | None = Field(default=None, ge=0.0, le=1.0)


class ToolsSearchRequest(_Strict):
    query: QueryText
    filters: SearchFilters | None = None
    max_results: JsonInt = Field(default=20, ge=1, le=100)


class SearchResult(BaseModel):
    url: str
    title: str
    snippet: str
    relevance_score: float
    year: int
    citations: int | None = None
    authors: list[str] = Field(default_factory=list)
    venue: str | None = None
    doi: str | None = None


class SearchMetrics(BaseModel):
    query_time_ms: int
    sources_searched: int
    sources_failed: int = 0
    from_cache: bool = False


class ToolsSearchResponse(BaseModel):
    results: list[SearchResult]
    total_found: int
    search_metrics: SearchMetrics
    # Additive: the connectors that failed and why (empty when every source answered).
    failed_sources: dict[str, str] = Field(default_factory=dict)


# ---- multi-source API: POST /api/v1/search, GET /api/v1/health ------------------------------------


class V1SearchRequest(_Strict):
    query: QueryText
    top_k: JsonInt = Field(default=10, ge=1, le=50)
    connectors: list[ConnectorName] | None = Field(default=None, json_schema_extra=CONNECTORS_SCHEMA)


class V1Source(BaseModel):
    id: str
    title: str
    url: str
    content: str
    score: float
    connector: str


class V1SearchResponse(BaseModel):
    query: str
    sources: list[V1Source]
    connectors_used: list[str]
    total_results: int
    failed_connectors: dict[str, str] = Field(default_factory=dict)  # additive


class HealthResponse(BaseModel):
    status: Literal["healthy", "degraded"]
    connectors: list[str]
    llm_configured: bool
    circuit_breakers: dict[str, str] = Field(default_factory=dict)  # additive: open/half_open/closed
