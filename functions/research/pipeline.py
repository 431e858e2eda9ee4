"""The answer pipeline: Planner → Retriever → Writer → Verifier → Critic → Red-Team → Decision gate →
Finalize, each stage emitting its trace events as it finishes. The preset lists its stages
(functions/research/presets.py); `AnswerPipeline.run` runs them in order over one `AnswerContext`.

A streaming caller hears only verified text, and only once the decision gate admits the answer: each
sentence of the draft is verified as soon as the writer finishes it (with an LLM while it still writes;
the extractive writer's draft, direct answer first, in one go), and kept sentences are sent from the
moment the gate, asked about the sentences verified so far, would answer rather than refuse
(functions/research/verified_stream.py; the `answer_admitted` trace event marks it). Nothing is sent that
is later refused: a refusal carries no draft. Without an LLM, when the preset reads full text, the
direct answer is drafted from the abstracts while the PDFs are read (`Retriever.retrieve(on_abstracts=…)`)
and sent if the gate admits it on that evidence; it then opens the final answer. The critique and
Red-Team run after the stream and only annotate it: an admitted answer is not refused afterwards, a later
objection lowers its confidence (`gate.after_admission`), and `final` carries the authoritative answer.

Domain code only: the search, full-text, document and LLM ports are handed in by a composition root
(`functions/answer/wiring.py` for the API). The streaming route passes listeners and receives the
trace events, the writer's deltas and the verified citations as they happen.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from functions.common.errors import UpstreamError
from functions.research.checking.critic import Contradiction, Critique, critique, find_contradictions
from functions.research.checking.gate import (
    Decision,
    GateFacts,
    GatePolicy,
    after_admission,
    answer_facts,
    answer_policy,
    decide,
)
from functions.research.checking.redteam import RedTeamReport, red_team
from functions.research.checking.verifier import ClaimVerification, Verifier
from functions.research.planning.answer import plan_answer
from functions.research.planning.plan import AnswerSettings, ResearchPlan
from functions.research.presets import (
    CRITIQUE,
    DECIDE,
    FINALIZE,
    PLAN,
    RED_TEAM,
    RETRIEVE,
    VERIFY,
    WRITE,
    Effort,
    FocusMode,
    Preset,
    preset_named,
)
from functions.research.retrieval.evidence import EvidenceChunk, SourceDoc
from functions.research.retrieval.retriever import Retrieval, Retriever
from functions.research.stages import (
    PipelineContext,
    Stage,
    challenge,
    gate,
    run_stages,
    stage_list,
    stage_result,
    verified,
)
from functions.research.trace import CRITIC, DECISION, PLANNER, WRITER, TraceRecorder
from functions.research.verified_stream import VerifiedStream
from functions.research.writing.writer import (
    CitationNumbers,
    Delta,
    Draft,
    DraftSentence,
    ExtractiveWriter,
    LlmWriter,
    attribution_labels,
    render,
)

if TYPE_CHECKING:
    from functions.common.llm import LlmProvider

CitationsListener = Callable[[list[dict[str, Any]]], Awaitable[None]]


class Listeners(TypedDict, total=False):
    """Who hears an answer while it is written: each verified stretch of text, then the citations."""

    on_delta: Delta | None
    on_citations: CitationsListener | None


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


def plan_for(request: AnswerRequest) -> ResearchPlan[AnswerSettings]:
    """The Planner's plan for a request."""
    return plan_answer(
        request.question,
        preset=request.preset,
        focus_mode=request.focus_mode,
        reasoning_effort=request.reasoning_effort,
        top_k=request.top_k,
        connectors=request.connectors,
        max_sources=request.max_sources,
        year_start=request.year_start,
        team_id=request.team_id,
    )


@dataclass(kw_only=True)
class AnswerContext(PipelineContext):
    """One answer's run: the request, its listeners, and what each stage adds."""

    request: AnswerRequest
    on_delta: Delta | None = None
    on_citations: CitationsListener | None = None
    started: float = field(default_factory=time.perf_counter)
    plan: ResearchPlan[AnswerSettings] | None = None
    retrieval: Retrieval | None = None
    contradictions: list[Contradiction] = field(default_factory=list)
    verifier: Verifier | None = None
    shown: VerifiedStream | None = None  # the draft's sentences, each verified as the writer ends it
    # The direct answer sent from the abstracts while the full text was read: it opens the final answer.
    lead: list[DraftSentence] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # what the Verifier checks against, by chunk id
    source_of: dict[str, str] = field(default_factory=dict)  # each chunk's source, for agreement
    review: Critique | None = None
    result: AnswerResult | None = None

    def planned(self) -> ResearchPlan[AnswerSettings]:
        return stage_result("plan", self.plan)

    def retrieved(self) -> Retrieval:
        return stage_result("retrieve", self.retrieval)

    def streamed(self) -> VerifiedStream:
        return stage_result("retrieve", self.shown)


class AnswerPipeline:
    def __init__(self, retriever: Retriever, llm: LlmProvider | None = None) -> None:
        self.retriever = retriever
        self.llm = llm
        self.stages: Mapping[str, Stage[AnswerContext]] = {
            PLAN: self.plan,
            RETRIEVE: self.retrieve,
            WRITE: self.write,
            CRITIQUE: self.critique,
            VERIFY: self.verify,
            RED_TEAM: challenge,
            DECIDE: self.decide,
            FINALIZE: self.finalize,
        }

    async def run(
        self, request: AnswerRequest, trace: TraceRecorder, **listeners: Unpack[Listeners]
    ) -> AnswerResult:
        context = AnswerContext(request=request, **listeners)
        preset = preset_named(request.preset)
        await run_stages(stage_list(preset.stages, self.stages), context, trace)
        if context.result is None:
            raise RuntimeError(f"preset {preset.name} has no finalize stage")
        return context.result

    async def plan(self, context: AnswerContext, trace: TraceRecorder) -> None:
        context.plan = plan_for(context.request)
        await trace.emit(PLANNER, "plan", "plan_created", **context.plan.to_payload())

    async def retrieve(self, context: AnswerContext, trace: TraceRecorder) -> None:
        plan = context.planned()
        # Only verified sentences are ever streamed, and only once the gate admits the answer.
        context.verifier = Verifier(self.llm if context.request.enable_verifier else None, context.source_of)

        async def admits(verifications: Sequence[ClaimVerification]) -> bool:
            return await self._admits(context, trace, verifications)

        context.shown = VerifiedStream(context.verifier, context.texts, context.on_delta, admits)

        async def lead(abstracts: Retrieval) -> None:
            await self._lead(context, abstracts)

        # Without an LLM the direct answer is written from the abstracts while the full text is read.
        early = lead if self.llm is None else None
        retrieval = await self.retriever.retrieve(plan, trace, context.request.documents, on_abstracts=early)
        self._use(context, retrieval)

    def _use(self, context: AnswerContext, retrieval: Retrieval) -> None:
        """The evidence the next stages work on, with that of a direct answer already sent."""
        context.retrieval = retrieval
        pinned = {i: context.chunks[i] for sentence in context.lead for i in sentence.chunk_ids}
        context.chunks = {**{chunk.chunk_id: chunk for chunk in retrieval.chunks}, **pinned}
        context.quarantined = retrieval.quarantined
        context.hostile_sources = retrieval.hostile_sources
        critic = context.planned().settings.preset.critic
        context.contradictions = find_contradictions(list(context.chunks.values())) if critic else []
        context.texts.update({chunk_id: chunk.text for chunk_id, chunk in context.chunks.items()})
        context.source_of.update({chunk_id: chunk.source_id for chunk_id, chunk in context.chunks.items()})
        labels = attribution_labels({source.source_id: source for source in retrieval.sources})
        context.streamed().attributions = list(labels.values())

    async def _lead(self, context: AnswerContext, abstracts: Retrieval) -> None:
        """The direct answer from the abstracts, verified and sent if the gate would answer with the whole
        draft the abstracts support and admits the lead itself; else forgotten, and the full text decides."""
        self._use(context, abstracts)
        draft = await self._draft(context)
        claims = [(sentence.claim, sentence.chunk_ids) for sentence in draft.sentences]
        whole = await Verifier(None, context.source_of).verify(claims, context.texts)
        if self._gate_on(context, whole).refusal:
            return
        await context.streamed().add(draft.sentences[:1])
        if context.streamed().admitted:
            context.lead = draft.sentences[:1]
        else:
            context.streamed().withdraw()

    async def write(self, context: AnswerContext, trace: TraceRecorder) -> None:
        draft = await self._draft(context)
        if context.lead:  # sent already: it opens the answer, and the draft's own direct answer goes
            sent = {i for sentence in context.lead for i in sentence.chunk_ids}
            rest = [s for s in draft.sentences[1:] if not sent.intersection(s.chunk_ids)]
            draft.sentences = [*context.lead, *rest]
        context.draft = draft
        await trace.emit(
            WRITER,
            "write",
            "draft_written",
            writer=draft.writer,
            model=draft.model,
            usage={"prompt_tokens": draft.prompt_tokens, "completion_tokens": draft.completion_tokens},
            sentences=len(draft.sentences),
            cited_chunk_ids=sorted({i for sentence in draft.sentences for i in sentence.chunk_ids}),
            notes=draft.notes,
        )

    async def _draft(self, context: AnswerContext) -> Draft:
        plan, retrieval = context.planned(), context.retrieved()
        sources = {source.source_id: source for source in retrieval.sources}
        extractive = partial(
            ExtractiveWriter().write,
            plan,
            retrieval.chunks,
            contradictions=context.contradictions,
            primary={source.source_id for source in retrieval.sources if source.answers_question},
            sources=sources,
            tainted=frozenset(retrieval.tainted_sources),
        )
        if self.llm is None or not retrieval.chunks:
            return await extractive()
        try:
            return await LlmWriter(self.llm).write(
                plan.goal,
                plan.settings.preset.style,
                retrieval.chunks,
                temperature=context.request.temperature,
                on_model_text=context.streamed().feed_model_text,
                concepts=plan.key_phrases,
                authors=attribution_labels(sources),
            )
        except UpstreamError as exc:  # the answer still comes, from the evidence itself
            draft = await extractive()
            draft.notes.append(f"LLM writer failed ({exc.message}); the extractive writer answered")
            return draft

    async def critique(self, context: AnswerContext, trace: TraceRecorder) -> None:
        claims = [
            (f"clm-{index + 1:03d}", sentence.chunk_ids)
            for index, sentence in enumerate(context.written().sentences)
        ]
        review = critique(context.planned(), claims, context.chunks, context.contradictions)
        context.review = review
        await trace.emit(
            CRITIC,
            "critique",
            "critique_generated",
            uncovered_sub_questions=review.uncovered_sub_questions,
            single_source_claim_ids=[item["claim_id"] for item in review.single_source_claims],
            contradictions=[c.evidence_chunk_ids for c in review.contradictions],
        )

    async def verify(self, context: AnswerContext, trace: TraceRecorder) -> None:
        context.verifications = await context.streamed().finish(context.written().sentences)
        await verified(trace, context.verifications)

    def _facts(
        self,
        context: AnswerContext,
        verifications: Sequence[ClaimVerification],
        challenged: RedTeamReport,
    ) -> GateFacts:
        return answer_facts(
            sources=context.retrieved().sources,
            chunks=context.chunks,
            kept=[v for v in verifications if v.kept],
            all_claims=verifications,
            contradictions=context.contradictions,
            red_team=challenged,
        )

    def _policy(self, context: AnswerContext) -> GatePolicy:
        request = context.request
        return answer_policy(
            quality_gate=context.planned().settings.preset.quality_gate,
            min_confidence=request.min_confidence,
            min_sources=request.min_sources,
        )

    def _gate_on(self, context: AnswerContext, verifications: Sequence[ClaimVerification]) -> Decision:
        """What the gate would decide on these verifications, with the Red-Team's view of them."""
        kept = [v for v in verifications if v.kept]
        challenged = red_team(
            kept, verifications, context.chunks, context.quarantined, context.hostile_sources
        )
        return decide(self._facts(context, verifications, challenged), self._policy(context))

    async def _admits(
        self, context: AnswerContext, trace: TraceRecorder, verifications: Sequence[ClaimVerification]
    ) -> bool:
        """The gate on the sentences verified so far: would it answer? It says so in the trace when it would."""
        decision = self._gate_on(context, verifications)
        if not decision.refusal:
            await trace.emit(
                DECISION,
                "stream",
                "answer_admitted",
                claims=len(verifications),
                confidence=decision.confidence,
                elapsed_ms=round((time.perf_counter() - context.started) * 1000, 1),
            )
        return not decision.refusal

    async def decide(self, context: AnswerContext, trace: TraceRecorder) -> None:
        facts = self._facts(context, context.verifications, context.challenged())
        decision = gate(context, facts, self._policy(context))
        if context.streamed().admitted:  # sent: later objections lower confidence, never retract
            decision = context.decision = after_admission(decision, facts, self._policy(context))
        await trace.emit(
            DECISION,
            "refuse" if decision.refusal else "finalize",
            "decision",
            refusal=decision.refusal,
            reason_code=decision.reason_code,
            reason=decision.reason,
            confidence=decision.confidence,
            elapsed_ms=round((time.perf_counter() - context.started) * 1000, 1),
        )

    async def finalize(self, context: AnswerContext, trace: TraceRecorder) -> None:
        plan, retrieval, draft, decision = (
            context.planned(),
            context.retrieved(),
            context.written(),
            context.decided(),
        )
        kept_sentences = [s for s, v in zip(draft.sentences, context.verifications, strict=True) if v.kept]
        if decision.refusal:
            answer, citations = f"No answer: {decision.reason}.", list[Citation]()
        else:
            sources = {source.source_id: source for source in retrieval.sources}
            answer, citations = citations_for(kept_sentences, context.chunks, sources)
            if context.on_citations is not None:
                await context.on_citations([c.to_dict() for c in citations])
        verifier = context.verifier or Verifier()
        context.result = AnswerResult(
            question=context.request.question,
            answer=answer,
            sentences=[] if decision.refusal else kept_sentences,
            citations=citations,
            sources=retrieval.sources,
            chunks=list(context.chunks.values()),  # with a direct answer sent from the abstracts
            # A refusal carries no draft: its sentences were not verified, or not enough of them were.
            claim_verifications=[] if decision.refusal else context.verifications,
            critique=context.review,
            red_team=context.challenged(),
            decision=decision,
            rcs_summaries=rcs_summaries(retrieval.sources, retrieval.chunks)
            if plan.settings.preset.rcs
            else [],
            quality_gate=quality_gate_report(decision, retrieval),
            connectors_used=retrieval.connectors_used,
            failed_connectors=retrieval.failed_connectors,
            writer=draft.writer,
            model=draft.model,
            usage={
                "prompt_tokens": draft.prompt_tokens + verifier.prompt_tokens,
                "completion_tokens": draft.completion_tokens + verifier.completion_tokens,
            },
            preset=plan.settings.preset,
            focus=plan.settings.focus,
            effort=plan.settings.effort,
            trace_id=trace.trace_id,
            notes=[*retrieval.notes, *draft.notes, *(context.review.notes if context.review else [])],
        )


def quality_gate_report(decision: Decision, retrieval: Retrieval) -> dict[str, Any]:
    return {
        "decision": "refuse" if decision.refusal else "proceed",
        "passed_sources": len(retrieval.sources),
        "filtered_sources": retrieval.filtered_sources,
        "confidence": decision.confidence,
        "reason_code": decision.reason_code,
    }
