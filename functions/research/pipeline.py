"""The answer pipeline: Planner → Retriever → Writer → Critic → Verifier → Red-Team → Decision gate →
Finalize, each stage emitting its trace events as it finishes.

A streaming caller hears only verified text: each sentence of the draft is verified as soon as the
writer finishes it and sent if kept (functions/research/verified_stream.py); a refusal carries no draft.

Domain code only: the search, full-text, document and LLM ports are handed in by a composition root
(`functions/answer/wiring.py` for the API). The streaming route passes listeners and receives the
trace events, the writer's deltas and the verified citations as they happen.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from functions.common.errors import UpstreamError
from functions.research.critic import Contradiction, Critique, critique, find_contradictions
from functions.research.evidence import EvidenceChunk, SourceDoc
from functions.research.gate import Decision, decide
from functions.research.planner import AnswerPlan, plan_answer
from functions.research.presets import Effort, FocusMode, Preset
from functions.research.redteam import RedTeamReport, red_team
from functions.research.retriever import Retrieval, Retriever
from functions.research.trace import CRITIC, DECISION, PLANNER, RED_TEAM, VERIFIER, WRITER, TraceRecorder
from functions.research.verified_stream import VerifiedStream
from functions.research.verifier import ClaimVerification, Verifier
from functions.research.writer import (
    CitationNumbers,
    Delta,
    Draft,
    DraftSentence,
    ExtractiveWriter,
    LlmWriter,
    render,
)

if TYPE_CHECKING:
    from functions.common.llm import LlmProvider

CitationsListener = Callable[[list[dict[str, Any]]], Awaitable[None]]


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    preset: str | None = None
    focus_mode: str | None = None
    reasoning_effort: str = "medium"
    top_k: int = 10
    connectors: list[str] | None = None
    documents: Sequence[str] = ()
    max_sources: int | None = None
    enable_verifier: bool = True  # the LLM judge; lexical and numeric verification always run
    temperature: float = 0.2  # the writer's; the judge always runs at 0
    year_start: int | None = None
    min_confidence: float | None = None
    min_sources: int | None = None
    team_id: str | None = None  # the caller's team: its library and documents, its trace


@dataclass(frozen=True)
class Citation:
    citation_id: str
    number: int  # the [n] in the answer text
    source_id: str
    chunk_id: str
    title: str
    url: str
    published_at: str | None
    snippet: str
    chunk_start: int
    chunk_end: int
    origin: str
    page: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AnswerResult:
    question: str
    answer: str
    sentences: list[DraftSentence]
    citations: list[Citation]
    sources: list[SourceDoc]
    chunks: list[EvidenceChunk]
    claim_verifications: list[ClaimVerification]
    critique: Critique | None
    red_team: RedTeamReport
    decision: Decision
    rcs_summaries: list[dict[str, Any]]
    quality_gate: dict[str, Any]
    connectors_used: list[str]
    failed_connectors: dict[str, str]
    writer: str
    model: str
    usage: dict[str, int]
    preset: Preset
    focus: FocusMode
    effort: Effort
    trace_id: str
    notes: list[str] = field(default_factory=list)

    @property
    def contradictions(self) -> list[Contradiction]:
        return self.critique.contradictions if self.critique else []


def rcs_summaries(
    sources: Sequence[SourceDoc], chunks: Sequence[EvidenceChunk], per_source: int = 2
) -> list[dict[str, Any]]:
    """Per-source relevance-scored summaries: each relevant source's best evidence, verbatim."""
    summaries = []
    for source in sources:
        own = sorted((c for c in chunks if c.source_id == source.source_id), key=lambda c: -c.score)[
            :per_source
        ]
        if not own:
            continue
        summaries.append(
            {
                "source_id": source.source_id,
                "source_title": source.title,
                "summary": " ".join(chunk.text for chunk in own),
                "relevance_score": round(source.relevance, 3),
                "evidence_chunk_ids": [chunk.chunk_id for chunk in own],
            }
        )
    return sorted(summaries, key=lambda s: -float(s["relevance_score"]))


def citations_for(
    sentences: Sequence[DraftSentence], chunks: dict[str, EvidenceChunk], sources: dict[str, SourceDoc]
) -> tuple[str, list[Citation]]:
    numbers = CitationNumbers()
    text = render(sentences, numbers)
    citations = []
    for chunk_id, number in numbers.order.items():
        chunk = chunks[chunk_id]
        source = sources[chunk.source_id]
        citations.append(
            Citation(
                citation_id=f"cit-{number:03d}",
                number=number,
                source_id=source.source_id,
                chunk_id=chunk_id,
                title=source.title,
                url=source.url,
                published_at=source.published_at,
                snippet=chunk.text,
                chunk_start=chunk.char_start,
                chunk_end=chunk.char_end,
                origin=chunk.origin,
                page=chunk.page,
            )
        )
    return text, citations


def plan_for(request: AnswerRequest) -> AnswerPlan:
    """The Planner's plan for a request."""
    plan = plan_answer(
        request.question,
        preset=request.preset,
        focus_mode=request.focus_mode,
        reasoning_effort=request.reasoning_effort,
        top_k=request.top_k,
        connectors=request.connectors,
        max_sources=request.max_sources,
        year_start=request.year_start,
    )
    return replace(plan, team_id=request.team_id)


class AnswerPipeline:
    def __init__(self, retriever: Retriever, llm: LlmProvider | None = None) -> None:
        self.retriever = retriever
        self.llm = llm

    async def _write(
        self,
        plan: AnswerPlan,
        retrieval: Retrieval,
        contradictions: list[Contradiction],
        request: AnswerRequest,
        shown: VerifiedStream,
    ) -> Draft:
        extractive = ExtractiveWriter()
        primary = {source.source_id for source in retrieval.sources if source.answers_question}
        if self.llm is None or not retrieval.chunks:
            return await extractive.write(
                plan, retrieval.chunks, contradictions=contradictions, primary=primary
            )
        try:
            return await LlmWriter(self.llm).write(
                plan.question,
                plan.preset.style,
                retrieval.chunks,
                temperature=request.temperature,
                on_model_text=shown.feed_model_text,
            )
        except UpstreamError as exc:  # the answer still comes, from the evidence itself
            draft = await extractive.write(
                plan, retrieval.chunks, contradictions=contradictions, primary=primary
            )
            draft.notes.append(f"LLM writer failed ({exc.message}); the extractive writer answered")
            return draft

    async def run(
        self,
        request: AnswerRequest,
        trace: TraceRecorder,
        *,
        on_delta: Delta | None = None,
        on_citations: CitationsListener | None = None,
    ) -> AnswerResult:
        started = time.perf_counter()
        plan = plan_for(request)
        await trace.emit(PLANNER, "plan", "plan_created", **plan.to_payload())

        retrieval = await self.retriever.retrieve(plan, trace, request.documents)
        chunk_map = {chunk.chunk_id: chunk for chunk in retrieval.chunks}
        source_map = {source.source_id: source for source in retrieval.sources}
        contradictions = find_contradictions(retrieval.chunks) if plan.preset.critic else []

        # Only verified sentences are ever streamed: each is verified as the writer finishes it.
        verifier = Verifier(self.llm if request.enable_verifier else None)
        shown = VerifiedStream(verifier, {i: c.text for i, c in chunk_map.items()}, on_delta)
        draft = await self._write(plan, retrieval, contradictions, request, shown)
        claims = [
            (f"clm-{index + 1:03d}", sentence.chunk_ids) for index, sentence in enumerate(draft.sentences)
        ]
        await trace.emit(
            WRITER,
            "write",
            "draft_written",
            writer=draft.writer,
            model=draft.model,
            usage={"prompt_tokens": draft.prompt_tokens, "completion_tokens": draft.completion_tokens},
            sentences=len(draft.sentences),
            cited_chunk_ids=sorted({i for _, ids in claims for i in ids}),
            notes=draft.notes,
        )

        review = critique(plan, claims, chunk_map, contradictions) if plan.preset.critic else None
        if review is not None:
            await trace.emit(
                CRITIC,
                "critique",
                "critique_generated",
                uncovered_sub_questions=review.uncovered_sub_questions,
                single_source_claim_ids=[item["claim_id"] for item in review.single_source_claims],
                contradictions=[c.evidence_chunk_ids for c in review.contradictions],
            )

        verifications = await shown.finish(draft.sentences)
        kept = [v for v in verifications if v.kept]
        kept_sentences = [s for s, v in zip(draft.sentences, verifications, strict=True) if v.kept]
        await trace.emit(
            VERIFIER,
            "verify",
            "verification_completed",
            claim_ids=[v.claim_id for v in verifications],
            verdicts={v.claim_id: v.verdict for v in verifications},
            removed=[v.claim_id for v in verifications if not v.kept],
        )

        report = red_team(kept, verifications, chunk_map, retrieval.quarantined, retrieval.hostile_sources)
        await trace.emit(
            RED_TEAM,
            "critique",
            "redteam_completed",
            flags=[flag.to_dict() for flag in report.flags],
            force_refusal=report.force_refusal,
        )

        decision = decide(
            sources=retrieval.sources,
            chunks=chunk_map,
            kept=kept,
            all_claims=verifications,
            critique=review,
            red_team=report,
            quality_gate=plan.preset.quality_gate,
            min_confidence=request.min_confidence,
            min_sources=request.min_sources,
        )
        await trace.emit(
            DECISION,
            "refuse" if decision.refusal else "finalize",
            "decision",
            refusal=decision.refusal,
            reason_code=decision.reason_code,
            reason=decision.reason,
            confidence=decision.confidence,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
        )

        if decision.refusal:
            answer, citations = f"No answer: {decision.reason}.", list[Citation]()
        else:
            answer, citations = citations_for(kept_sentences, chunk_map, source_map)
            if on_citations is not None:
                await on_citations([c.to_dict() for c in citations])
        return AnswerResult(
            question=request.question,
            answer=answer,
            sentences=[] if decision.refusal else kept_sentences,
            citations=citations,
            sources=retrieval.sources,
            chunks=retrieval.chunks,
            # A refusal carries no draft: its sentences were not verified, or not enough of them were.
            claim_verifications=[] if decision.refusal else verifications,
            critique=review,
            red_team=report,
            decision=decision,
            rcs_summaries=rcs_summaries(retrieval.sources, retrieval.chunks) if plan.preset.rcs else [],
            quality_gate={
                "decision": "refuse" if decision.refusal else "proceed",
                "passed_sources": len(retrieval.sources),
                "filtered_sources": retrieval.filtered_sources,
                "confidence": decision.confidence,
                "reason_code": decision.reason_code,
            },
            connectors_used=retrieval.connectors_used,
            failed_connectors=retrieval.failed_connectors,
            writer=draft.writer,
            model=draft.model,
            usage={
                "prompt_tokens": draft.prompt_tokens + verifier.prompt_tokens,
                "completion_tokens": draft.completion_tokens + verifier.completion_tokens,
            },
            preset=plan.preset,
            focus=plan.focus,
            effort=plan.effort,
            trace_id=trace.trace_id,
            notes=[*retrieval.notes, *draft.notes, *(review.notes if review else [])],
        )
