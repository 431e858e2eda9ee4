"""Builders shared by the orchestrate unit tests (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime

from functions.common.models import EvidenceQuote, ExtractedPaper, Paper
from functions.research.checking.verifier import ClaimVerification
from functions.research.job.result import SynthesisResult
from functions.research.planning.job import build_plan
from functions.research.planning.plan import JobSettings, ResearchPlan
from functions.research.planning.request import ScopeParameters
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.retrieval.screening import Candidate, source_id_for

NOW = datetime(2026, 6, 1, tzinfo=UTC)
GOAL = "What are recent advances in transformer architectures for long documents?"


def plan(depth: str = "rapid", **scope: object) -> ResearchPlan[JobSettings]:
    return build_plan(GOAL, ScopeParameters.model_validate({"discovery_depth": depth, **scope}), now=NOW)


def paper(index: int, **overrides: object) -> Paper:
    values: dict[str, object] = {
        "title": f"Sparse attention in transformer architectures for long documents, part {index}",
        "url": f"https://arxiv.org/abs/2501.{10000 + index}",
        "arxiv_id": f"2501.{10000 + index}",
        "abstract": "We propose sparse attention for transformer architectures and evaluate it on benchmarks.",
        "year": 2025,
        "authors": ["Smith, J.", "Doe, A."],
        "venue": f"Venue {index % 4}",
        "citations": 40,
        "source": ["arxiv", "openalex", "semantic_scholar", "crossref"][index % 4],
        "relevance_score": 0.9,
    }
    values.update(overrides)
    return Paper.model_validate(values)


def extracted(
    index: int, quotes: list[tuple[str, str]], methodology: str = ""
) -> tuple[Candidate, ExtractedPaper]:
    item = paper(index)
    candidate = Candidate(paper=item, source_id=source_id_for(item.canonical_id), scores={"relevance": 0.9})
    evidence = [
        EvidenceQuote(
            quote=text,
            page=page + 1,
            char_start=10 * page,
            char_end=10 * page + len(text),
            kind=kind,
            relevance_score=0.9 - page / 10,
        )
        for page, (kind, text) in enumerate(quotes)
    ]
    return candidate, ExtractedPaper(
        source_url=item.url,
        canonical_id=item.canonical_id,
        success=True,
        title=item.title,
        evidence=evidence,
        methodology=methodology,
    )


def synthesis_result(
    claims: list[ClaimVerification], evidence: list[EvidenceChunk], synthesis_text: str = ""
) -> SynthesisResult:
    """A written synthesis of `claims` over `evidence`, as the Synthesize step stores it."""
    return SynthesisResult(
        research_goal="How does sleep deprivation affect working memory?",
        executive_summary="summary",
        synthesis_text=synthesis_text,
        primary_themes=[],
        gaps_identified=[],
        sources_analyzed=len({item.source_id for item in evidence}),
        methodologies_found=0,
        methodologies={},
        evidence=evidence,
        claims=claims,
        confidence_score=0.6,
        confidence_rationale="",
        refusal=False,
        refusal_reason=None,
        writer="extractive",
    )
