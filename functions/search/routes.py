"""Thin routers: parse, one call into SearchService, shape the contract's response.

The caller's team (`TeamId`) goes into `PaperQuery.team_id`, never from the body: the `library`
connector then answers only with that team's uploads."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, Request

from functions.common.errors import NotFound
from functions.common.models import Paper, short_hash
from functions.common.settings import built_from_settings, get_settings
from functions.common.web.api import TeamId, client_identity
from functions.search.models import PaperQuery
from functions.search.schemas import (
    HealthResponse,
    SearchMetrics,
    SearchResult,
    ToolsSearchRequest,
    ToolsSearchResponse,
    V1SearchRequest,
    V1SearchResponse,
    V1Source,
)
from functions.search.team_keys import base_provider
from functions.search.text import snippet_from

if TYPE_CHECKING:
    from functions.search.service import SearchService


@built_from_settings
@lru_cache(maxsize=1)
def get_service() -> SearchService:
    """One service per container: shared HTTP clients, breakers, cache and limiter adapters.

    The service, its connectors and the HTTP client are imported here, by the first request, not with the
    handler (bench/cold_start.py); under SnapStart the handler imports them before the snapshot."""
    from functions.search.service import SearchService

    return SearchService.from_settings()


def metadata_line(paper: Paper) -> str:
    authors = ", ".join(paper.authors[:3]) + (" et al." if len(paper.authors) > 3 else "")
    parts = [paper.title.rstrip(".") + "."]
    if authors:
        parts.append(f"{authors} ({paper.year})." if paper.year else f"{authors}.")
    if paper.venue:
        parts.append(f"{paper.venue}.")
    return " ".join(parts)


def snippet(paper: Paper) -> str:
    return snippet_from(paper.abstract, fallback=metadata_line(paper))


def api_doi(paper: Paper) -> str | None:
    if paper.doi:
        return paper.doi
    return f"10.48550/arXiv.{paper.arxiv_id}" if paper.arxiv_id else None


ServiceDep = Annotated["SearchService", Depends(get_service)]
tools_router = APIRouter(tags=["search"])
v1_router = APIRouter(prefix="/api/v1", tags=["search"])


@tools_router.post("/api/tools/search", response_model=ToolsSearchResponse)
async def tools_search(
    body: ToolsSearchRequest, request: Request, service: ServiceDep, team: TeamId
) -> ToolsSearchResponse:
    await service.admit_client_async(client_identity(request))
    filters = body.filters
    years = filters.year_range if filters else None
    outcome = await service.search(
        PaperQuery(
            query=body.query,
            year_start=years.start if years else None,
            year_end=years.end if years else None,
            max_results=body.max_results,
            per_connector=max(body.max_results, service.search_settings.default_per_connector),
            min_quality_score=filters.min_quality_score if filters else None,
            source_types=list(filters.source_types) if filters and filters.source_types else None,
            require_year=True,
            team_id=team,
        )
    )
    results = [
        SearchResult(
            url=paper.url,
            title=paper.title,
            snippet=snippet(paper),
            relevance_score=paper.relevance_score,
            year=paper.year or 0,
            citations=paper.citations,
            authors=paper.authors,
            venue=paper.venue,
            doi=api_doi(paper),
        )
        for paper in outcome.papers
    ]
    return ToolsSearchResponse(
        results=results,
        total_found=outcome.total_found,
        search_metrics=SearchMetrics(
            query_time_ms=round(outcome.query_time_ms),
            sources_searched=len(outcome.connectors_used) + len(outcome.failed_connectors),
            sources_failed=len(outcome.failed_connectors),
            from_cache=outcome.from_cache,
        ),
        failed_sources=outcome.failed_connectors,
    )


@v1_router.post("/search", response_model=V1SearchResponse)
async def v1_search(
    body: V1SearchRequest, request: Request, service: ServiceDep, team: TeamId
) -> V1SearchResponse:
    await service.admit_client_async(client_identity(request))
    selected = body.connectors if body.connectors is not None else service.connector_names
    outcome = await service.search(
        PaperQuery(
            query=body.query,
            per_connector=body.top_k,
            max_results=body.top_k * max(1, len(selected)),
            connectors=body.connectors,
            team_id=team,
        )
    )
    if not outcome.papers:
        raise NotFound("No search results found")
    ranked = sorted(outcome.papers, key=lambda p: outcome.rrf_scores.get(p.canonical_id, 0.0), reverse=True)
    sources = [
        V1Source(
            id=f"{service.connector_prefix(paper.source)}_{short_hash(paper.url)}",
            title=paper.title,
            url=paper.url,
            content=snippet(paper),
            score=outcome.rrf_scores.get(paper.canonical_id, 0.0),
            connector=paper.source,
        )
        for paper in ranked
    ]
    return V1SearchResponse(
        query=body.query,
        sources=sources,
        connectors_used=outcome.connectors_used,
        total_results=len(sources),
        failed_connectors=outcome.failed_connectors,
    )


@v1_router.get("/health", response_model=HealthResponse)
async def health(service: ServiceDep) -> HealthResponse:
    # the providers' own breakers: a team's own key (`<provider>@team:<id>`) failing is that team's
    # matter, and its id is no one else's
    breakers = {
        name: state for name, state in service.breakers.states().items() if base_provider(name) == name
    }
    return HealthResponse(
        status="degraded" if any(state == "open" for state in breakers.values()) else "healthy",
        connectors=service.connector_names,
        llm_configured=get_settings().llm_provider != "none",
        circuit_breakers=breakers,
    )
