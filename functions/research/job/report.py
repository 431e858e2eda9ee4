"""A research job's results document (`GET /api/agent/results/{job_id}`, stored as results.json): a pure
function of the synthesis, the screened sources and how their searches and extractions went."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from functions.research.job.inputs import Extraction, ScreeningPayload
from functions.research.job.prisma import PrismaFlow
from functions.research.job.result import stored_claim, stored_evidence
from functions.research.retrieval.chasing import discovered_via
from functions.research.retrieval.screening import Candidate

if TYPE_CHECKING:
    from functions.research.job.result import SynthesisResult

BUDGET_NOT_EXTRACTED = "not extracted: the budget was reached"
SYNTHESIS_FIELDS = (
    "research_goal",
    "executive_summary",
    "synthesis_text",
    "primary_themes",
    "gaps_identified",
    "sources_analyzed",
    "methodologies_found",
)


@dataclass(frozen=True)
class SearchSummary:
    """How the job's searches went: requests planned and not run, upstreams that answered errors."""

    requests_planned: int
    not_run: Mapping[str, int]
    failed_connectors: list[str]
    hits: int = 0
    cache_hits: int = 0
    coalesced: int = 0


class ResultSource(BaseModel):
    source_id: str
    citation_key: str
    title: str
    authors: list[str]
    year: int | None
    venue: str | None
    doi: str | None
    url: str
    found_by: list[str]
    scores: dict[str, Any]
    score_explanations: dict[str, str]
    total_score: float
    extraction_success: bool
    failure_reason: str | None
    cited: bool
    # how the job found it: {"method": "search" | "references" | "citations", "seed", "connector"}
    discovered_via: dict[str, Any] = Field(
        default_factory=lambda: {"method": "search", "seed": None, "connector": None}
    )


class ExecutionSummary(BaseModel):
    total_sources_discovered: int
    search_hits: int
    sources_validated: int
    sources_selected: int
    extractions_successful: int
    extractions_failed: int
    queries_executed: int
    failed_connectors: list[str]
    queries_not_run: dict[str, str]
    partial_reasons: list[str]
    search_stats: dict[str, int]
    prisma_flow: PrismaFlow | None  # None only in documents stored before the flow was recorded
    # what citation chasing did (ChasingRecord.summary); None: the job did not chase
    citation_chasing: dict[str, Any] | None = None


class ResearchResults(BaseModel):
    """A scheduled run's living review adds `changes_since_last_run` (and each source's `is_retracted`)
    to the stored document (functions/schedules/living.py)."""

    job_id: str
    status: str
    synthesis: dict[str, Any]
    execution_summary: ExecutionSummary
    sources: list[ResultSource]
    evidence: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    methodologies: dict[str, Any]
    confidence_score: float
    confidence_rationale: str | None
    refusal: bool
    refusal_reason: str | None
    writer: str | None
    artifact_keys: dict[str, str]


def build_results(
    job_id: str,
    status: str,
    synthesis: SynthesisResult,
    screening: ScreeningPayload,
    sources: list[Candidate],
    citation_keys: Mapping[str, str],
    extractions: list[Extraction],
    search: SearchSummary,
    partial_reasons: list[str],
    artifact_keys: Mapping[str, str],
    prisma_flow: PrismaFlow,
) -> ResearchResults:
    """`screening`: the Screen step's payload (validated and passed counts, sources skipped for the
    budget); `partial_reasons`: why a PARTIAL job lost coverage (empty otherwise); `prisma_flow`: the
    job's PRISMA 2020 flow (functions/research/job/prisma.py)."""
    failed = sum(1 for item in extractions if not item.success)
    return ResearchResults(
        job_id=job_id,
        status=status,
        synthesis={name: getattr(synthesis, name) for name in SYNTHESIS_FIELDS},
        execution_summary=ExecutionSummary(
            total_sources_discovered=screening.validated,
            search_hits=search.hits,
            sources_validated=screening.passed,
            sources_selected=len(sources),
            extractions_successful=len(extractions) - failed,
            extractions_failed=failed,
            queries_executed=search.requests_planned - sum(search.not_run.values()),
            failed_connectors=search.failed_connectors,
            queries_not_run={
                name: f"{count} not run: {name}'s rate budget"
                for name, count in sorted(search.not_run.items())
            },
            partial_reasons=partial_reasons,
            search_stats={
                "requests_planned": search.requests_planned,
                "cache_hits": search.cache_hits,
                "coalesced": search.coalesced,
            },
            prisma_flow=prisma_flow,
            citation_chasing=screening.chasing.summary() if screening.chasing else None,
        ),
        sources=result_sources(sources, citation_keys, synthesis, extractions, set(screening.budget_skipped)),
        evidence=[stored_evidence(item) for item in synthesis.evidence],
        claims=[stored_claim(claim) for claim in synthesis.claims],
        methodologies=dict(synthesis.methodologies),
        confidence_score=synthesis.confidence_score,
        confidence_rationale=synthesis.confidence_rationale,
        refusal=synthesis.refusal,
        refusal_reason=synthesis.refusal_reason,
        writer=synthesis.writer,
        artifact_keys=dict(artifact_keys),
    )


def result_sources(
    sources: list[Candidate],
    citation_keys: Mapping[str, str],
    synthesis: SynthesisResult,
    extractions: list[Extraction],
    budget_skipped: set[str],
) -> list[ResultSource]:
    """Each selected source: its scores, how its extraction went and whether a kept claim cites it."""
    by_source = {item.source_id: item for item in extractions if item.source_id}
    cited_ids = {i for claim in synthesis.claims if claim.kept for i in claim.evidence_chunk_ids}
    cited_sources = {e.source_id for e in synthesis.evidence if e.chunk_id in cited_ids}
    entries = []
    for candidate in sources:
        paper, outcome = candidate.paper, by_source.get(candidate.source_id, Extraction())
        skipped = candidate.source_id in budget_skipped
        entries.append(
            ResultSource(
                source_id=candidate.source_id,
                citation_key=citation_keys[candidate.source_id],
                title=paper.title,
                authors=paper.authors,
                year=paper.year,
                venue=paper.venue,
                doi=paper.doi,
                url=paper.url,
                found_by=paper.found_by or [paper.source],
                scores=candidate.scores,
                score_explanations=candidate.explanations,
                total_score=candidate.total_score,
                extraction_success=outcome.success,
                failure_reason=outcome.failure_reason or (BUDGET_NOT_EXTRACTED if skipped else None),
                cited=candidate.source_id in cited_sources,
                discovered_via=discovered_via(candidate),
            )
        )
    return entries
