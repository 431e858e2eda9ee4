"""Request and response bodies of the knowledge-base API (field names as in the seed contract)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator
from pydantic.config import JsonDict

from functions.common.validation import JsonStrictInt
from functions.rag.model import (
    CHUNK_PREFIX,
    CITATION_PREFIX,
    LOOKUP_TYPES,
    EntityType,
    RelationType,
)

QUERY_MIN_LENGTH = 3
QUERY_MAX_LENGTH = 1000
K_MIN, K_MAX, K_DEFAULT = 1, 20, 5
MAX_DOCUMENT_IDS = 50

# What the validation enforces, stated in the OpenAPI document (the messages stay the seed's, from
# functions/rag/invalid_requests.py, so these are documentation, not a second validation):
# a query is 3..1000 characters once stripped of surrounding whitespace, at most 1000 as sent;
QUERY_PATTERN = r"^\s*\S[\s\S]+\S\s*$"  # with minLength 3: at least 3 characters once stripped
QUERY_SCHEMA: JsonDict = {
    "minLength": QUERY_MIN_LENGTH,
    "maxLength": QUERY_MAX_LENGTH,
    "pattern": QUERY_PATTERN,
}
# a document id is <type>_<number> (functions/rag/model.py `canonical_document_id`);
_ID_PREFIXES = sorted({*(t.value for t in EntityType), "algo", CHUNK_PREFIX, CITATION_PREFIX})
DOCUMENT_ID_SCHEMA_PATTERN = r"^\s*(?:" + "|".join(_ID_PREFIXES) + r")_[0-9A-Za-z]+(?:_[0-9A-Za-z]+)*\s*$"
# GET /entity/{entity_type}/{number}: the seed's four types, numbers X.Y (functions/rag/model.py).
ENTITY_TYPE_SCHEMA: JsonDict = {"enum": list(LOOKUP_TYPES)}
ENTITY_NUMBER_PATTERN = r"^(?:[0-9]+|[A-Z])\.[0-9]+$"


class SearchFiltersBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chapter: StrictStr | JsonStrictInt | None = Field(default=None, description='Chapter number, e.g. "4"')
    section: StrictStr | None = Field(default=None, description='Section number; "4.1" also matches 4.1.x')
    page_number: JsonStrictInt | None = Field(default=None, description="Printed page number")


class SemanticSearchRequest(BaseModel):
    query: StrictStr = Field(
        description="Natural-language query (3 to 1000 characters)", json_schema_extra=QUERY_SCHEMA
    )
    k: JsonStrictInt = Field(default=K_DEFAULT, ge=K_MIN, le=K_MAX)
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
        if len(value) > QUERY_MAX_LENGTH:
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
    document_ids: list[
        Annotated[StrictStr, Field(json_schema_extra={"pattern": DOCUMENT_ID_SCHEMA_PATTERN})]
    ] = Field(min_length=1, max_length=MAX_DOCUMENT_IDS)
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
