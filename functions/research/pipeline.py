"""The answer pipeline: Planner → Rank → Lead → Read → Writer → Verifier → Critic → Red-Team → Decision
gate → Finalize, each stage emitting its trace events as it finishes. The preset lists its stages
(functions/research/presets.py); `AnswerPipeline.run` runs them in order over one `AnswerContext`.
Write, Verify, Red-Team and Decide are the stages the research job runs too (functions/research/stages.py):
the context supplies the answer's part of them.

A streaming caller hears only verified text, and only once the decision gate admits the answer: each
sentence of the draft is verified as soon as the writer finishes it (with an LLM while it still writes;
the extractive writer's draft, direct answer first, in one go), and kept sentences are sent from the
moment the gate, asked about the sentences verified so far, would answer rather than refuse
(functions/research/verified_stream.py; the `answer_admitted` trace event marks it). Nothing is sent that
is later refused: a refusal carries no draft. The Rank stage starts reading the full text of the top
sources; the Lead stage runs while it is read: without an LLM, when the preset reads full text, it drafts
the direct answer from the abstracts and sends it if the gate admits it on that evidence (it then opens
the final answer); the Read stage awaits the full text. The critique and
Red-Team run after the stream and only annotate it: an admitted answer is not refused afterwards, a later
objection lowers its confidence (`gate.after_admission`), and `final` carries the authoritative answer.

Domain code only: the search, full-text, document and LLM ports are handed in by a composition root
(`functions/answer/wiring.py` for the API). The streaming route passes listeners and receives the
trace events, the writer's deltas and the verified citations as they happen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from functions.research.checking.critic import Contradiction, Critique, critique, find_contradictions
from functions.research.checking.gate import Decision, GateFacts, GatePolicy, answer_facts, answer_policy
from functions.research.checking.gate import decide as gate_decision
from functions.research.checking.redteam import RedTeamReport, red_team
from functions.research.checking.verifier import ClaimVerification, Verifier
from functions.research.planning.answer import plan_answer
from functions.research.planning.plan import AnswerSettings, ResearchPlan
from functions.research.presets import (
    CRITIQUE,
    FINALIZE,
    LEAD,
    PLAN,
    RANK,
    READ,
    Effort,
    FocusMode,
    Preset,
    preset_named,
)
from functions.research.retrieval.evidence import EvidenceChunk, SourceDoc
from functions.research.retrieval.retriever import Ranked, Retrieval, Retriever
from functions.research.stages import SHARED_STAGES, PipelineContext, Stage, run_named, stage_result
from functions.research.trace import CRITIC, DECISION, PLANNER, TraceRecorder
from functions.research.verified_stream import VerifiedStream
from functions.research.writing.drafting import Writers, write_draft
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
    llm: LlmProvider | None = None  # the writer's (and, when the request enables it, the judge's)
    on_delta: Delta | None = None
    on_citations: CitationsListener | None = None
    plan: ResearchPlan[AnswerSettings] | None = None
    ranked: Ranked | None = None  # the ranked sources, their full text being read
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

    def ranking(self) -> Ranked:
        return stage_result("rank", self.ranked)

    def retrieved(self) -> Retrieval:
        return stage_result("read", self.retrieval)

    def streamed(self) -> VerifiedStream:
        return stage_result("rank", self.shown)

    # --- Write

    def writers(self) -> Writers:
        """The extractive writer, and the LLM writer (its text verified as it streams) when there is a
        model and evidence for it."""
        plan, retrieval = self.planned(), self.retrieved()
        sources = {source.source_id: source for source in retrieval.sources}
        extractive = partial(
            ExtractiveWriter().write,
            plan,
            retrieval.chunks,
            contradictions=self.contradictions,
            primary={source.source_id for source in retrieval.sources if source.answers_question},
            sources=sources,
            tainted=frozenset(retrieval.tainted_sources),
        )
        if self.llm is None or not retrieval.chunks:
            return Writers(extractive)
        model = partial(
            LlmWriter(self.llm).write,
            plan.goal,
            plan.settings.preset.style,
            retrieval.chunks,
            temperature=self.request.temperature,
            on_model_text=self.streamed().feed_model_text,
            concepts=plan.key_phrases,
            authors=attribution_labels(sources),
        )
        return Writers(extractive, model)

    def settle(self, draft: Draft) -> Draft:
        if self.lead:  # sent already: it opens the answer, and the draft's own direct answer goes
            sent = {i for sentence in self.lead for i in sentence.chunk_ids}
            rest = [s for s in draft.sentences[1:] if not sent.intersection(s.chunk_ids)]
            draft.sentences = [*self.lead, *rest]
        return draft

    def draft_details(self, draft: Draft) -> dict[str, object]:
        return {
            "writer": draft.writer,
            "model": draft.model,
            "usage": {"prompt_tokens": draft.prompt_tokens, "completion_tokens": draft.completion_tokens},
            "sentences": len(draft.sentences),
            "cited_chunk_ids": sorted({i for sentence in draft.sentences for i in sentence.chunk_ids}),
            "notes": draft.notes,
        }

    # --- Verify: on the stream, which verified the LLM's sentences as it wrote them

    def verifying(self) -> tuple[VerifiedStream, float | None]:
        return self.streamed(), None

    def on_verified(self) -> None:
        """Nothing beyond the verifications: the stream has sent what it kept once the gate admitted it."""

    # --- Decide

    def facts_on(self, verifications: Sequence[ClaimVerification], challenged: RedTeamReport) -> GateFacts:
        return answer_facts(
            sources=self.retrieved().sources,
            chunks=self.chunks,
            kept=[v for v in verifications if v.kept],
            all_claims=verifications,
            contradictions=self.contradictions,
            red_team=challenged,
        )

    def gate_facts(self) -> GateFacts:
        return self.facts_on(self.verifications, self.challenged())

    def gate_policy(self) -> GatePolicy:
        return answer_policy(
            quality_gate=self.planned().settings.preset.quality_gate,
            min_confidence=self.request.min_confidence,
            min_sources=self.request.min_sources,
        )

    @property
    def admitted(self) -> bool:
        return self.streamed().admitted

    def gate_on(self, verifications: Sequence[ClaimVerification]) -> Decision:
        """What the gate would decide on these verifications, with the Red-Team's view of them."""
        kept = [v for v in verifications if v.kept]
        challenged = red_team(kept, verifications, self.chunks, self.quarantined, self.hostile_sources)
        return gate_decision(self.facts_on(verifications, challenged), self.gate_policy())


class AnswerPipeline:
    def __init__(self, retriever: Retriever, llm: LlmProvider | None = None) -> None:
        self.retriever = retriever
        self.llm = llm
        self.stages: Mapping[str, Stage[AnswerContext]] = {
            PLAN: self.plan,
            RANK: self.rank,
            LEAD: self.lead,
            READ: self.read,
            CRITIQUE: self.critique,
            FINALIZE: self.finalize,
            **SHARED_STAGES,
        }

    async def run(
        self, request: AnswerRequest, trace: TraceRecorder, **listeners: Unpack[Listeners]
    ) -> AnswerResult:
        context = AnswerContext(request=request, llm=self.llm, **listeners)
        preset = preset_named(request.preset)
        try:
            await run_named(preset.stages, self.stages, context, trace)
        finally:
            if context.ranked is not None:  # done once Read ran; else a stage failed while it was read
                context.ranked.reading.cancel()
        if context.result is None:
            raise RuntimeError(f"preset {preset.name} has no finalize stage")
        return context.result

    async def plan(self, context: AnswerContext, trace: TraceRecorder) -> None:
        context.plan = plan_for(context.request)
        await trace.emit(PLANNER, "plan", "plan_created", **context.plan.to_payload())

    async def rank(self, context: AnswerContext, trace: TraceRecorder) -> None:
        """The sources ranked, their full text being read; the stream that shows only verified sentences,
        and only once the gate admits the answer."""
        context.verifier = Verifier(self.llm if context.request.enable_verifier else None, context.source_of)

        async def admits(verifications: Sequence[ClaimVerification]) -> bool:
            return await self._admits(context, trace, verifications)

        context.shown = VerifiedStream(context.verifier, context.texts, context.on_delta, admits)
        context.ranked = await self.retriever.rank(context.planned(), trace, context.request.documents)

    async def lead(self, context: AnswerContext, trace: TraceRecorder) -> None:
        """While the full text is read, without an LLM: the direct answer from the abstracts, verified and
        sent if the gate would answer with the whole draft the abstracts support and admits the lead
        itself; else forgotten, and the full text decides. Nothing to do with an LLM (its sentences
        stream as it writes) or when no full text is read."""
        if self.llm is not None or not self.retriever.reads_full_text(context.planned()):
            return
        self._use(context, await self.retriever.abstracts(context.ranking(), trace))
        draft = await write_draft(context.writers())
        claims = [(sentence.claim, sentence.chunk_ids) for sentence in draft.sentences]
        whole = await Verifier(None, context.source_of).verify(claims, context.texts)
        if context.gate_on(whole).refusal:
            return
        await context.streamed().add(draft.sentences[:1])
        if context.streamed().admitted:
            context.lead = draft.sentences[:1]
        else:
            context.streamed().withdraw()

    async def read(self, context: AnswerContext, trace: TraceRecorder) -> None:
        """The whole evidence, once the full text is read."""
        self._use(context, await self.retriever.read(context.ranking(), trace))

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

    async def _admits(
        self, context: AnswerContext, trace: TraceRecorder, verifications: Sequence[ClaimVerification]
    ) -> bool:
        """The gate on the sentences verified so far: would it answer? It says so in the trace when it would."""
        decision = context.gate_on(verifications)
        if not decision.refusal:
            await trace.emit(
                DECISION,
                "stream",
                "answer_admitted",
                claims=len(verifications),
                confidence=decision.confidence,
                elapsed_ms=context.elapsed_ms(),
            )
        return not decision.refusal

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
