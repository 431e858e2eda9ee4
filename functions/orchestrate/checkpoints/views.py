"""What a person sees at a waiting checkpoint (GET /api/agent/checkpoint/{job_id}): built from the state the
checkpoint stored and the job's step data in the data bucket. Ids shown here are the ids the edits name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from functions.common.models import ExtractedPaper
from functions.common.storage import BlobStore
from functions.orchestrate.models import (
    CandidateView,
    ClaimView,
    ExtractedSourceView,
    ExtractionCheckpoint,
    JobRecord,
    PlanCheckpoint,
    QuoteView,
    ScreeningCheckpoint,
    SynthesisCheckpoint,
)
from functions.orchestrate.payloads import load, screened
from functions.research.job.inputs import Extraction, ScreeningPayload
from functions.research.planning.request import DEFAULT_WINDOW_YEARS, CheckpointPhase
from functions.research.retrieval.chasing import discovered_via, seed_count
from functions.research.retrieval.screening import Candidate

if TYPE_CHECKING:
    from functions.research.job.result import SynthesisResult
    from functions.research.retrieval.evidence import EvidenceChunk


@dataclass(frozen=True)
class CheckpointContext:
    """A waiting checkpoint: the job, the phase, the state it waits with and where its step data lives."""

    job: JobRecord
    phase: CheckpointPhase
    state: dict[str, Any]
    data: BlobStore

    def screening(self) -> ScreeningPayload:
        return screened(self.data, self.job)

    def candidates(self) -> dict[str, Candidate]:
        return self.screening().by_id()

    def extractions(self) -> list[Extraction]:
        return [Extraction.model_validate(item) for item in self.state.get("extractions") or []]

    def extracted(self) -> list[tuple[Candidate, ExtractedPaper]]:
        """The sources whose extraction succeeded, with their papers (as Synthesize reads them)."""
        candidates = self.candidates()
        sources: list[tuple[Candidate, ExtractedPaper]] = []
        for item in self.extractions():
            if item.success and item.parsed_key and item.source_id in candidates:
                paper = load(self.data, item.parsed_key, ExtractedPaper)
                if paper is not None:
                    sources.append((candidates[item.source_id], paper))
        return sources

    def evidence(self) -> list[EvidenceChunk]:
        """The evidence the synthesis would read (its ids are the ones it cites), less what was struck."""
        from functions.research.job.evidence import screen_evidence  # the job API reads it only here

        struck = set(self.job.struck_evidence)
        return [item for item in screen_evidence(self.extracted()).evidence if item.chunk_id not in struck]

    def synthesis(self) -> SynthesisResult | None:
        """The synthesis that waits for the reviewer (None: there is none to read)."""
        from functions.research.job.result import SynthesisResult  # the job API reads it only here

        key = (self.state.get("synthesis") or {}).get("synthesis_key")
        return load(self.data, str(key), SynthesisResult) if key else None


def window_years(job: JobRecord) -> int:
    boundary = job.scope_parameters.get("temporal_boundary") or {}
    return int(boundary.get("publication_window_years") or DEFAULT_WINDOW_YEARS)


def plan_view(context: CheckpointContext, available: tuple[str, ...]) -> PlanCheckpoint:
    pending = (context.state.get("search") or {}).get("pending") or []
    connectors = list(dict.fromkeys(str(query["connector"]) for query in pending))
    return PlanCheckpoint(
        connectors=connectors,
        queries={name: [q["query"] for q in pending if q["connector"] == name] for name in connectors},
        publication_window_years=window_years(context.job),
        available_connectors=list(available),
    )


def _candidate_view(candidate: Candidate, selected: set[str]) -> CandidateView:
    paper = candidate.paper
    return CandidateView(
        id=candidate.source_id,
        title=paper.title,
        url=paper.url,
        year=paper.year,
        venue=paper.venue,
        scores=candidate.scores,
        total_score=candidate.total_score,
        weighted_score=candidate.weighted_score,
        explanation="; ".join(f"{name}: {why}" for name, why in candidate.explanations.items()),
        explanations=candidate.explanations,
        rejection=candidate.rejection,
        selected=candidate.source_id in selected,
    )


def screening_view(context: CheckpointContext) -> ScreeningCheckpoint:
    chosen = [str(item["source_id"]) for item in (context.state.get("screen") or {}).get("selected") or []]
    candidates = context.candidates()
    ranked = sorted(candidates.values(), key=lambda c: (c.rejection is not None, -c.weighted_score))
    mode = context.job.citation_chasing
    seeds = context.screening().chase_seeds or chosen[: seed_count(context.job.depth)]
    return ScreeningCheckpoint(
        candidates=[_candidate_view(candidate, set(chosen)) for candidate in ranked],
        selected=chosen,
        max_sources=len(chosen),
        citation_chasing=mode,
        chase_seeds=seeds if mode != "off" else [],
    )


def extraction_view(context: CheckpointContext) -> ExtractionCheckpoint:
    from functions.research.job.result import stored_evidence  # the job API reads it only here

    quotes: dict[str, list[QuoteView]] = {}
    for quote in context.evidence():  # each in the job's stored form, whose names the view shares
        quotes.setdefault(quote.source_id, []).append(QuoteView.model_validate(stored_evidence(quote)))
    candidates = context.candidates()
    sources = []
    for item in context.extractions():
        candidate = candidates.get(str(item.source_id))
        sources.append(
            ExtractedSourceView(
                id=item.source_id,
                title=candidate.paper.title if candidate else "",
                url=item.url,
                success=item.success,
                failure_reason=item.failure_reason,
                quotes=quotes.get(str(item.source_id), []),
                discovered_via=discovered_via(candidate) if candidate else {},
            )
        )
    return ExtractionCheckpoint(sources=sources)


def synthesis_view(context: CheckpointContext) -> SynthesisCheckpoint:
    synthesis = context.synthesis()
    if synthesis is None:
        return SynthesisCheckpoint(
            executive_summary="",
            report="",
            claims=[],
            confidence_score=None,
            refusal=False,
            refusal_reason=None,
        )
    return SynthesisCheckpoint(
        executive_summary=synthesis.executive_summary,
        report=synthesis.synthesis_text,
        claims=[
            ClaimView(
                id=claim.claim_id,
                text=claim.claim_text,
                evidence_ids=claim.evidence_chunk_ids,
                verdict=claim.verdict,
                kept=claim.kept,
            )
            for claim in synthesis.claims
        ],
        confidence_score=synthesis.confidence_score,
        refusal=synthesis.refusal,
        refusal_reason=synthesis.refusal_reason,
    )
