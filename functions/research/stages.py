"""The pipeline's one stage form, and the stages both drivers share.

A stage is `async (context, trace) -> None`: it reads what earlier stages left in the shared, typed
context, adds its own result, and emits its own trace events. A driver is an ordered list of stage names
(functions/research/presets.py) mapped to its stages: the answer engine (functions/research/pipeline.py)
runs the whole list in-process; the research job's Synthesize step (functions/research/job/synthesis.py) runs
its slice. One mutable context rather than typed callables chained output to input, because later stages
read several earlier results (the gate reads the retrieval, the verifications and the Red-Team report)
and a streaming answer must be readable mid-run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from functions.research.checking.gate import Decision, GateFacts, GatePolicy, decide
from functions.research.checking.redteam import RedTeamReport, red_team
from functions.research.checking.verifier import ClaimVerification
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.trace import RED_TEAM, VERIFIER, TraceRecorder
from functions.research.writing.writer import Draft

StageResult = TypeVar("StageResult")


def stage_result(stage: str, result: StageResult | None) -> StageResult:
    """What `stage` left in the context; a RuntimeError (a driver's bug, not the caller's) when it has not run."""
    if result is None:
        raise RuntimeError(f"the {stage} stage has not run")
    return result


@dataclass
class PipelineContext:
    """What every driver's stages share: the evidence a draft may cite, what was withheld from it, and
    what each stage made of it."""

    chunks: dict[str, EvidenceChunk] = field(default_factory=dict)  # by id: what the writer may cite
    # Withheld as text addressed to the reader or a model: (the span, its signals); and the sources full of it.
    quarantined: list[tuple[EvidenceChunk, str]] = field(default_factory=list)
    hostile_sources: list[str] = field(default_factory=list)
    draft: Draft | None = None
    verifications: list[ClaimVerification] = field(default_factory=list)
    red_team: RedTeamReport | None = None
    decision: Decision | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[ClaimVerification]:
        return [verification for verification in self.verifications if verification.kept]

    def written(self) -> Draft:
        return stage_result("write", self.draft)

    def challenged(self) -> RedTeamReport:
        return stage_result("red-team", self.red_team)

    def decided(self) -> Decision:
        return stage_result("decide", self.decision)


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


def gate(context: PipelineContext, facts: GateFacts, policy: GatePolicy) -> Decision:
    """The decide stage's work for every driver: one gate, the driver's policy."""
    context.decision = decide(facts, policy)
    return context.decision
