"""The knowledge base's FastAPI app (served by Lambda through Mangum, locally by the gateway).

Thin routes: validate (pydantic + the seed's messages in invalid_requests.py), one call into the
knowledge base, shape the answer with the seed's caching headers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Path, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel

from functions.common.faces import kb as kb_face
from functions.common.faces.face import ErrorReply, Face
from functions.common.faces.kb import KnowledgeBaseError
from functions.common.observability import get_logger
from functions.common.web.api import create_app
from functions.common.web.openapi import document_errors, error_responses
from functions.metering.middleware import UsageMiddleware
from functions.rag.api_models import (
    ENTITY_NUMBER_PATTERN,
    ENTITY_TYPE_SCHEMA,
    EntityResponse,
    ExpandGraphRequest,
    ExpandGraphResponse,
    SemanticSearchRequest,
    SemanticSearchResponse,
)
from functions.rag.caching import ENTITY_MAX_AGE, SEARCH_MAX_AGE, ResponseMemo, cached_json, encode
from functions.rag.invalid_requests import validation_message
from functions.rag.knowledge_base import KnowledgeBase, SearchFilters, validate_entity_path
from functions.rag.loader import KnowledgeBaseUnavailable, get_knowledge_base
from functions.rag.model import RELATION_TYPES, SEED_SEARCHABLE_TYPES

logger = get_logger("rag")
# Two routers only because a `traverse_types` value that is not valid is named with the route's own list.
search_router = APIRouter(tags=["knowledge base"])
graph_router = APIRouter(tags=["knowledge base"])
memo = ResponseMemo()
_Route = TypeVar("_Route", bound=Callable[..., Any])

_ERRORS = error_responses(KnowledgeBaseError, (400, 503))
_NOT_MODIFIED: dict[int | str, dict[str, Any]] = {304: {"description": "Not modified (If-None-Match)"}}


def _cached_search(
    router: APIRouter, path: str, answer: type[BaseModel], summary: str
) -> Callable[[_Route], _Route]:
    """The decorator of a POST search route answered from the memo with an ETag: its error statuses and
    the 304 on If-None-Match."""
    return router.post(path, response_model=answer, responses={**_ERRORS, **_NOT_MODIFIED}, summary=summary)


@_cached_search(
    search_router, "/search/semantic", SemanticSearchResponse, "Search the book's passages and numbered items"
)
def semantic_search(body: SemanticSearchRequest, request: Request) -> Response:
    kb = get_knowledge_base()
    key = "search:" + kb.version + ":" + body.model_dump_json()
    return cached_json(request, memo.encoded(key, lambda: _search_answer(kb, body)), SEARCH_MAX_AGE)


def _search_answer(kb: KnowledgeBase, body: SemanticSearchRequest) -> dict[str, Any]:
    filters = None
    if body.filters is not None:
        chapter = body.filters.chapter
        filters = SearchFilters(
            chapter=str(chapter) if chapter is not None else None,
            section=body.filters.section,
            page_number=body.filters.page_number,
        )
    types = [item.value for item in body.traverse_types] if body.traverse_types else None
    outcome = kb.search(body.query, body.k, types, filters)
    return {
        "results": outcome.results,
        "total_count": len(outcome.results),
        "suggestions": outcome.suggestions,
        "metadata": {
            "book_id": kb.book_id,
            "index_version": kb.version,
            "retrieval": kb.retrieval,
            "corrected_terms": outcome.corrected_terms,
        },
    }


@_cached_search(
    graph_router,
    "/search/expand-graph",
    ExpandGraphResponse,
    "Follow the knowledge graph from the given entities",
)
def expand_graph(body: ExpandGraphRequest, request: Request) -> Response:
    kb = get_knowledge_base()
    types = [item.value for item in body.traverse_types] if body.traverse_types else None
    key = "expand:" + kb.version + ":" + json.dumps([body.document_ids, types])
    return cached_json(request, memo.encoded(key, lambda: _expand_answer(kb, body, types)), SEARCH_MAX_AGE)


def _expand_answer(kb: KnowledgeBase, body: ExpandGraphRequest, types: list[str] | None) -> dict[str, Any]:
    outcome = kb.expand(body.document_ids, types)
    return {
        "expanded_documents": outcome.documents,
        "relationship_count": outcome.relationship_count,
        "metadata": outcome.metadata,
    }


@graph_router.get(
    "/entity/{entity_type}/{number}",
    response_model=EntityResponse,
    responses={**error_responses(KnowledgeBaseError, (400, 503, 404)), **_NOT_MODIFIED},
    summary="A numbered formula, algorithm, table or figure",
)
def get_entity(
    request: Request,
    entity_type: Annotated[
        str, Path(description="formula | algorithm | table | figure", json_schema_extra=ENTITY_TYPE_SCHEMA)
    ],
    number: Annotated[
        str,
        Path(
            description='e.g. "3.2", "16.4", "A.1"',
            json_schema_extra={"pattern": ENTITY_NUMBER_PATTERN},
        ),
    ],
) -> Response:
    validate_entity_path(entity_type, number)
    kb = get_knowledge_base()
    return cached_json(request, encode(kb.entity(entity_type, number)), ENTITY_MAX_AGE)


def _face(name: str, valid_types: tuple[str, ...]) -> Face:
    """The knowledge-base face with the seed's validation messages; 503 (Retry-After) until an index loads."""

    def invalid_request(exc: RequestValidationError) -> ErrorReply:
        return kb_face.reply(400, validation_message(exc.errors(), valid_types))

    return kb_face.FACE.with_rules(
        name,
        [
            (RequestValidationError, invalid_request),
            (KnowledgeBaseUnavailable, lambda exc: kb_face.reply(503, exc.message, {"Retry-After": "30"})),
        ],
    )


app = create_app(
    title="rag",
    description="Textbook knowledge base: semantic search, knowledge-graph expansion, numbered-entity lookup.",
    routers=[
        (_face("kb (semantic search)", SEED_SEARCHABLE_TYPES), search_router),
        (_face("kb (graph)", RELATION_TYPES), graph_router),
    ],
    logger=logger,
    middlewares=[UsageMiddleware],  # counts each request per team, route and month (docs/usage.md)
)
# 400 validation, 404 unknown entity (expand-graph reports unknown ids in its metadata), 503 no index loaded (Retry-After), 500 catch-all
document_errors(
    app,
    {
        "POST /search/semantic": (KnowledgeBaseError, [400, 503]),
        "POST /search/expand-graph": (KnowledgeBaseError, [400, 503]),
        "GET /entity/{entity_type}/{number}": (KnowledgeBaseError, [400, 404, 503]),
    },
)
