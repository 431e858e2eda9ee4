"""Request and response bodies of the knowledge-base API (field names as in the seed contract)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from functions.rag.model import EntityType, RelationType

QUERY_MIN_LENGTH = 3
QUERY_MAX_LENGTH = 1000
K_MIN, K_MAX, K_DEFAULT = 1, 20, 5
MAX_DOCUMENT_IDS = 50


class SearchFiltersBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chapter: StrictStr | StrictInt | None = Field(default=None, description='Chapter number, e.g. "4"')
    section: StrictStr | None = Field(default=None, description='Section number; "4.1" also matches 4.1.x')
    page_number: StrictInt | None = Field(default=None, description="Printed page number")


class SemanticSearchRequest(BaseModel):
    query: StrictStr = Field(description="Natural-language query (3 to 1000 characters)")
    k: StrictInt = Field(default=K_DEFAULT, ge=K_MIN, le=K_MAX)
    traverse_types: list[EntityType] | None = Field(
        default=None, description="Restrict results to these entity types"
    )
    filters: SearchFiltersBody | None = None

    @field_validator("query")
    @classmethod
    def _long_enough(cls, value: str) -> str:
        stripped = value.strip()
        if len(stripped) < QUERY_MIN_LENGTH:
            raise ValueError(f"query must be at least {QUERY_MIN_LENGTH} characters")
        if len(stripped) > QUERY_MAX_LENGTH:
            raise ValueError(f"query must be at most {QUERY_MAX_LENGTH} characters")
        return stripped


class EntityFields(BaseModel):
    """What every answer says of a book entity."""

    id: str
    type: str
    content: str
    number: str
    title: str
    chapter: str
    section: str
    page_number: int | None


class SearchResult(EntityFields):
    score: float


class SemanticSearchResponse(BaseModel):
    results: list[SearchResult]
    total_count: int
    suggestions: list[str] = Field(
        description="The query with unknown words replaced by the book's own words"
    )
    metadata: dict[str, Any]


class ExpandGraphRequest(BaseModel):
    document_ids: list[StrictStr] = Field(min_length=1, max_length=MAX_DOCUMENT_IDS)
    traverse_types: list[RelationType] | None = None


class Relationship(BaseModel):
    type: str
    target_id: str
    target_type: str


class ExpandedDocument(EntityFields):
    hop: int = Field(description="0 for a requested document, 1 for a connected one")
    relationships: list[Relationship]


class ExpandGraphResponse(BaseModel):
    expanded_documents: list[ExpandedDocument]
    relationship_count: int
    metadata: dict[str, Any]


class EntityResponse(EntityFields):
    references: list[str]
    cited_by: list[str]


class ErrorResponse(BaseModel):
    detail: str
    status_code: int
    error_code: str
    timestamp: str
