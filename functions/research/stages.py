"""The pipeline's one stage form, and the stages both drivers share.

A stage is `async (context, trace) -> None`: it reads what earlier stages left in the shared, typed
context, adds its own result, and emits its own trace events. A driver is an ordered list of stage names
(functions/research/presets.py) mapped to its stages: the answer engine (functions/research/pipeline.py)
runs the whole list in-process; the research job's Synthesize step (functions/research/job/synthesis.py) runs
its slice. One mutable context rather than typed callables chained output to input, because later stages
read several earlier results (the gate reads the retrieval, the verifications and the Red-Team report)
and a streaming answer must be readable mid-run.

Write, Verify, Red-Team and Decide are one implementation each, shared by both drivers: the work is the
writing/ and checking/ wings' (`write_draft`, the Verifier through a `VerifiedStream`, `red_team`, the
gate), and a driver's context supplies only its part (its writers, what it makes of the draft, which
sentences are claims, the gate's facts and policy), like the gate's policy per driver.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from functions.research.checking.gate import Decision, GateFacts, GatePolicy, after_admission
from functions.research.checking.gate import decide as gate_decision
from functions.research.checking.redteam import RedTeamReport, red_team
from functions.research.checking.verifier import ClaimVerification, Verifier
from functions.research.presets import DECIDE, VERIFY, WRITE
from functions.research.presets import RED_TEAM as RED_TEAM_STAGE
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.trace import DECISION, RED_TEAM, VERIFIER, WRITER, TraceRecorder, decision_event
from functions.research.verified_stream import VerifiedStream
from functions.research.writing.drafting import Writers, write_draft
from functions.research.writing.writer import Draft, DraftSentence

StageResult = TypeVar("StageResult")


def stage_result(stage: str, result: StageResult | None) -> StageResult:
    """What `stage` left in the context; a RuntimeError (a driver's bug, not the caller's) when it has not run."""
    if result is None:
        raise RuntimeError(f"the {stage} stage has not run")
    return result


@dataclass
class PipelineContext(ABC):
    """What every driver's stages share: the evidence a draft may cite, what was withheld from it, and
    what each stage made of it; and, as methods, each driver's part of the shared stages."""

    # The answer engine traces its decision as it is made; the job when it finishes.
    traces_decision: ClassVar[bool] = True

    chunks: dict[str, EvidenceChunk] = field(default_factory=dict)  # by id: what the writer may cite
    # Withheld as text addressed to the reader or a model: (the span, its signals); and the sources full of it.
    quarantined: list[tuple[EvidenceChunk, str]] = field(default_factory=list)
    hostile_sources: list[str] = field(default_factory=list)
    draft: Draft | None = None
    verifications: list[ClaimVerification] = field(default_factory=list)
    red_team: RedTeamReport | None = None
    decision: Decision | None = None
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    @property
    def kept(self) -> list[ClaimVerification]:
        return [verification for verification in self.verifications if verification.kept]

    def written(self) -> Draft:
        return stage_result("write", self.draft)

    def challenged(self) -> RedTeamReport:
        return stage_result("red-team", self.red_team)

    def decided(self) -> Decision:
        return stage_result("decide", self.decision)

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 1)

    # --- the driver's part of the shared stages

    @abstractmethod
    def writers(self) -> Writers:
        """Write: the draft's writers."""

    def settle(self, draft: Draft) -> Draft:
        """Write: the draft as the next stages read it."""
        return draft

    @abstractmethod
    def draft_details(self, draft: Draft) -> dict[str, object]:
        """Write: what the trace says of the draft (`draft` as the writer left it)."""

    def claimed(self) -> list[DraftSentence]:
        """Verify: the draft's sentences, one claim each."""
        return self.written().sentences

    @abstractmethod
    def verifying(self) -> tuple[VerifiedStream, float | None]:
        """Verify: where the claims are verified, and how long its LLM judge may take (None: no limit)."""

    @abstractmethod
    def on_verified(self) -> None:
        """Verify: what the driver makes of the verifications, beyond keeping them."""

    @abstractmethod
    def gate_facts(self) -> GateFacts:
        """Decide: the gate's measures of the verified draft."""

    @abstractmethod
    def gate_policy(self) -> GatePolicy:
        """Decide: the driver's policy."""

    @property
    def admitted(self) -> bool:
        """Decide: whether the answer was sent already (streamed), so that the gate may not refuse it."""
        return False


Context = TypeVar("Context", bound=PipelineContext)
Stage = Callable[[Context, TraceRecorder], Awaitable[None]]


def stage_list(names: Sequence[str], stages: Mapping[str, Stage[Context]]) -> list[Stage[Context]]:
    """A driver's stages in the order a preset (or the job) lists them; an unknown name is a bug."""
    return [stages[name] for name in names]


async def run_stages(stages: Sequence[Stage[Context]], context: Context, trace: TraceRecorder) -> Context:
    for stage in stages:
        await stage(context, trace)
    return context


async def verified(trace: TraceRecorder, verifications: Sequence[ClaimVerification]) -> None:
    """The Verifier's trace event: every claim's verdict, and the claims removed."""
    await trace.emit(
        VERIFIER,
        "verify",
        "verification_completed",
        claim_ids=[v.claim_id for v in verifications],
        verdicts={v.claim_id: v.verdict for v in verifications},
        removed=[v.claim_id for v in verifications if not v.kept],
    )


async def challenge(context: PipelineContext, trace: TraceRecorder) -> None:
    """The Red-Team stage: what would make the verified draft risky."""
    context.red_team = red_team(
        context.kept, context.verifications, context.chunks, context.quarantined, context.hostile_sources
    )
    await trace.emit(
        RED_TEAM,
        "critique",
        "redteam_completed",
        flags=[flag.to_dict() for flag in context.red_team.flags],
        force_refusal=context.red_team.force_refusal,
    )


async def write(context: PipelineContext, trace: TraceRecorder) -> None:
    """The Write stage: the driver's model writer when it answers in time, else its extractive writer."""
    draft = await write_draft(context.writers())
    context.draft = context.settle(draft)
    await trace.emit(WRITER, "write", "draft_written", **context.draft_details(draft))


JUDGE_OVERRAN = "the LLM judge exceeded the synthesis budget; claims verified lexically"


async def verify(context: PipelineContext, trace: TraceRecorder) -> None:
    """The Verify stage: every claim against the quotes it cites, each verdict on the sentence as shown;
    a judge that overruns its time leaves every claim to lexical verification."""
    sentences = context.claimed()
    stream, judge_seconds = context.verifying()
    try:
        async with asyncio.timeout(judge_seconds):
            context.verifications = await stream.finish(sentences)
    except TimeoutError:
        if judge_seconds is None:
            raise
        context.notes.append(JUDGE_OVERRAN)
        texts = {chunk_id: chunk.text for chunk_id, chunk in context.chunks.items()}
        source_of = {chunk_id: chunk.source_id for chunk_id, chunk in context.chunks.items()}
        context.verifications = await VerifiedStream(Verifier(None, source_of), texts).finish(sentences)
    context.on_verified()
    await verified(trace, context.verifications)


async def decide(context: PipelineContext, trace: TraceRecorder) -> None:
    """The Decide stage: one gate, the driver's policy. An answer already sent is not refused: a later
    objection lowers its confidence instead."""
    facts, policy = context.gate_facts(), context.gate_policy()
    decision = gate_decision(facts, policy)
    if context.admitted:
        decision = after_admission(decision, facts, policy)
    context.decision = decision
    if context.traces_decision:
        event_type, payload = decision_event(
            decision.refusal,
            decision.reason,
            decision.confidence,
            reason_code=decision.reason_code,
            elapsed_ms=context.elapsed_ms(),
        )
        await trace.emit(DECISION, event_type, "decision", **payload)


# The stages both drivers run, by the name the stage lists use (functions/research/presets.py).
SHARED_STAGES: Mapping[str, Stage[PipelineContext]] = {
    WRITE: write,
    VERIFY: verify,
    RED_TEAM_STAGE: challenge,
    DECIDE: decide,
}


async def run_named(
    names: Sequence[str], stages: Mapping[str, Stage[Context]], context: Context, trace: TraceRecorder
) -> Context:
    """A driver's stages in the order a preset (or the job) names them; an unknown name is a bug."""
    return await run_stages(stage_list(names, stages), context, trace)
