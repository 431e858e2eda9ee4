"""The research job's synthesis: evidence with opaque ids, themes, cited summary, claim verification,
confidence, refusal.

Never lets a model write a citation: the writer (extractive theme clustering, or the answer engine's LLM
writer in report style; functions/research/writing/report_writer.py) only refers to evidence ids, every
cited sentence goes through the answer engine's Verifier against the quotes it cites, and unsupported
sentences are dropped. Write, Verify, Red-Team and Decide are the answer engine's stages
(functions/research/stages.py); this module supplies the job's part of them and renders the report
(functions/research/job/render.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from functions.common.models import ExtractedPaper
from functions.research.checking.gate import SINGLE_SOURCE_CONFIDENCE_CAP, GateFacts, GatePolicy, job_policy
from functions.research.checking.verifier import Verifier
from functions.research.job.evidence import count_methodologies, screen_evidence
from functions.research.job.render import (
    ReportSections,
    VerifiedReport,
    executive_summary,
    multi_source_themes,
    report_title,
    synthesis_body,
    verified_sections,
)
from functions.research.job.result import SynthesisResult
from functions.research.planning.plan import JobSettings, ResearchPlan
from functions.research.presets import JOB_SYNTHESIS_STAGES, RENDER
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.retrieval.screening import Candidate
from functions.research.retrieval.untrusted_text import tainted_sources
from functions.research.stages import SHARED_STAGES, PipelineContext, Stage, run_named, stage_result
from functions.research.trace import TraceRecorder
from functions.research.verified_stream import VerifiedStream
from functions.research.writing.drafting import Writers
from functions.research.writing.report_writer import report_writers, without_authority
from functions.research.writing.writer import GAPS_SECTION, Draft, DraftSentence

if TYPE_CHECKING:
    from functions.common.llm import LlmProvider

DEFAULT_LLM_BUDGET_SECONDS = 30.0
WRITER_BUDGET_SHARE = 0.7  # of the model budget; the judge has what the writer leaves
MIN_JUDGE_SECONDS = 3.0


@dataclass(kw_only=True)
class JobContext(PipelineContext):
    """One synthesis: the plan, the screened sources and their evidence, the model and its budget."""

    traces_decision: ClassVar[bool] = False  # its decision is traced when the job finishes

    plan: ResearchPlan[JobSettings]
    sources: list[tuple[Candidate, ExtractedPaper]]
    evidence: list[EvidenceChunk]
    provider: LlmProvider | None
    llm_budget_seconds: float
    deadline: float  # the event loop's clock: when the model budget runs out
    policy: GatePolicy
    drafted: list[DraftSentence] = field(default_factory=list)  # distinct cited sentences
    sections: ReportSections | None = None
    result: SynthesisResult | None = None

    def report(self) -> VerifiedReport:
        sections = stage_result("verify", self.sections)
        return VerifiedReport(self.plan, self.sources, self.evidence, self.verifications, sections)

    # --- Write

    def writers(self) -> Writers:
        share = self.llm_budget_seconds * WRITER_BUDGET_SHARE
        return report_writers(self.plan, self.evidence, self.sources, self.provider, share)

    def settle(self, draft: Draft) -> Draft:
        """A source carrying text addressed to the reader or a model loses its authority over the report;
        the summary repeats theme sentences, so each distinct sentence is one claim."""
        self.notes += draft.notes
        tainted = tainted_sources((chunk.source_id, signals) for chunk, signals in self.quarantined)
        settled = without_authority(draft, {e.chunk_id for e in self.evidence if e.source_id in tainted})
        distinct = {(s.text, tuple(s.chunk_ids)): s for s in [*draft.sentences, *draft.summary] if s.text}
        self.drafted = list(distinct.values())
        return settled

    def draft_details(self, draft: Draft) -> dict[str, object]:
        themes = list(dict.fromkeys(s.section for s in draft.sentences if s.section != GAPS_SECTION))
        return {"writer": draft.writer, "themes": themes, "claims": len(self.drafted)}

    # --- Verify: the LLM judge only while budget is left

    def claimed(self) -> list[DraftSentence]:
        return self.drafted

    def verifying(self) -> tuple[VerifiedStream, float | None]:
        remaining = self.deadline - asyncio.get_running_loop().time()
        judge = self.provider if remaining >= MIN_JUDGE_SECONDS else None
        if self.provider is not None and judge is None:
            self.notes.append("no time left for the LLM judge; claims verified lexically")
        texts = {chunk_id: chunk.text for chunk_id, chunk in self.chunks.items()}
        source_of = {chunk_id: chunk.source_id for chunk_id, chunk in self.chunks.items()}  # agreement
        stream = VerifiedStream(Verifier(judge, source_of), texts)
        return stream, max(remaining, 0.0) if judge is not None else None

    def on_verified(self) -> None:
        kept = {
            (sentence.text, tuple(sentence.chunk_ids))
            for sentence, claim in zip(self.drafted, self.verifications, strict=True)
            if claim.kept
        }
        self.sections = verified_sections(self.written(), kept)
        dropped = sum(1 for claim in self.verifications if not claim.kept)
        if dropped:
            self.notes.append(f"{dropped} unsupported sentence(s) dropped after verification")

    # --- Decide

    def gate_facts(self) -> GateFacts:
        """The job's measures of its verified report."""
        report, plan, claims = self.report(), self.plan, self.verifications
        with_evidence, cited = {item.source_id for item in self.evidence}, report.cited_sources
        themes = report.sections.themes
        supported = [claim for claim in claims if claim.kept]
        multi_source = multi_source_themes(themes, report.source_of)
        strength = min(1.0, len(with_evidence) / max(3, min(plan.settings.target_sources, 10)))
        coverage = len(supported) / len(claims) if claims else 0.0
        agreement = multi_source / len(themes) if themes else 0.0
        cited_share = len(cited) / len(with_evidence) if with_evidence else 0.0
        rationale = (
            f"{len(with_evidence)} source(s) with evidence, {len(cited)} cited; "
            f"{len(supported)}/{len(claims)} claim(s) verified; "
            f"{multi_source}/{len(themes)} theme(s) backed by two or more sources"
        )
        threshold = plan.settings.policies.relevance_threshold
        tainted = tainted_sources((q.source_id, s) for q, s in self.quarantined)
        return GateFacts(
            signals=(strength, coverage, agreement, cited_share),
            rationale=rationale,
            cited_sources=len(cited),
            verified_claims=len(supported),
            # a source carrying text addressed to the reader or a model has lost its authority: it never
            # answers the goal alone
            answered=any(
                c.answers_goal(threshold) for c, _ in self.sources if c.source_id in cited - tainted
            ),
            has_sources=bool(self.sources),
            has_evidence=bool(with_evidence),
            red_team=self.red_team,
        )

    def gate_policy(self) -> GatePolicy:
        return self.policy


async def render_report(context: JobContext, trace: TraceRecorder) -> None:
    """The report's Markdown and the synthesis result; a refusal says why and carries no themes."""
    plan, decision, report = context.plan, context.decided(), context.report()
    single_source = len(report.cited_sources) == 1
    if single_source and not decision.refusal:
        context.notes.append(
            f"single-source synthesis: confidence capped at {SINGLE_SOURCE_CONFIDENCE_CAP:.2f}; "
            "set scope_parameters.min_sources to require more"
        )
    methodologies = count_methodologies(context.sources, context.evidence)
    years = sorted(c.paper.year for c, _ in context.sources if c.paper.year)
    span = f"{years[0]}-{years[-1]}" if years else "unknown years"
    title = report_title(plan.goal)
    sections = report.sections
    if decision.refusal:
        executive = f"## {title}\n\nNo synthesis was written. {decision.reason}."
        body, sections = executive, ReportSections([], [], [])
    else:
        executive = executive_summary(report, title, span, single_source)
        body = synthesis_body(report, span, methodologies)
    context.result = SynthesisResult(
        research_goal=plan.goal,
        executive_summary=executive,
        synthesis_text=body,
        primary_themes=[name for name, _ in sections.themes],
        gaps_identified=[text for text, _ in sections.gaps],
        sources_analyzed=len(context.sources),
        methodologies_found=len(methodologies),
        methodologies=methodologies,
        evidence=context.evidence,
        claims=context.verifications,
        confidence_score=decision.confidence,
        confidence_rationale=decision.rationale,
        refusal=decision.refusal,
        refusal_reason=decision.reason,
        writer=context.written().writer,
        notes=context.notes,
        red_team=context.challenged().to_dict(),
    )


JOB_STAGES: dict[str, Stage[JobContext]] = {**SHARED_STAGES, RENDER: render_report}


async def synthesize(
    plan: ResearchPlan[JobSettings],
    sources: list[tuple[Candidate, ExtractedPaper]],
    *,
    provider: LlmProvider | None = None,
    min_sources: int | None = None,
    llm_budget_seconds: float = DEFAULT_LLM_BUDGET_SECONDS,
    trace: TraceRecorder | None = None,
    struck_evidence: frozenset[str] = frozenset(),
) -> SynthesisResult:
    """A cited synthesis of the screened (relevant) sources' evidence, or a refusal: refused when no
    verified claim rests on a source that addresses the goal as a whole (sources that match one concept
    add evidence but cannot carry a synthesis alone), or when fewer than `min_sources` sources back a
    verified claim (default: the plan's policy). A synthesis that rests on one source keeps its
    confidence at or below SINGLE_SOURCE_CONFIDENCE_CAP and says so. Model calls share
    `llm_budget_seconds`: a writer that overruns its share gives way to the extractive writer, and a
    judge that overruns the rest to lexical verification, so a slow model never times the step out.
    `trace` hears the Writer, Verifier and Red-Team events (None: they are not kept). A reviewer's
    `struck_evidence` (ids as screen_evidence makes them) is never read."""
    deadline = asyncio.get_running_loop().time() + llm_budget_seconds
    screened = screen_evidence(sources)
    evidence = [item for item in screened.evidence if item.chunk_id not in struck_evidence]
    context = JobContext(
        plan=plan,
        sources=sources,
        evidence=evidence,
        chunks={item.chunk_id: item for item in evidence},
        quarantined=screened.quarantined,
        hostile_sources=screened.hostile_sources,
        provider=provider,
        llm_budget_seconds=llm_budget_seconds,
        deadline=deadline,
        policy=job_policy(min_sources or plan.settings.policies.min_sources),
    )
    recorder = trace or TraceRecorder("synthesis")
    await run_named(JOB_SYNTHESIS_STAGES, JOB_STAGES, context, recorder)
    if context.result is None:
        raise RuntimeError("the job's stages have no render stage")
    return context.result
