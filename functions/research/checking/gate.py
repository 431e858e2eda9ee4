"""Decision gate: answer or refuse, with a machine-readable reason; and the answer's confidence.

One formula and one rule chain serve both drivers: the answer engine and the research job's synthesis
differ only in their `GatePolicy` (weights, rules in order, floors and wording) and in what they measure
(`GateFacts`, built by each driver from its own evidence). A refusal never carries an answer made up
without evidence: its text only says why there is none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from functions.research.checking.critic import Contradiction
from functions.research.checking.redteam import RedTeamReport
from functions.research.checking.verifier import SUPPORTED, ClaimVerification
from functions.research.retrieval.evidence import EvidenceChunk, SourceDoc

DEFAULT_MIN_CONFIDENCE = 0.3
DEFAULT_MIN_SOURCES = 1
SINGLE_SOURCE_CONFIDENCE_CAP = 0.5
# Lexical verification cannot prove entailment, so confidence stays below certainty.
MAX_CONFIDENCE = 0.95
# The answer's signals: supported share, independent sources cited, relevance of the cited sources,
# agreement (how many independent sources state each kept finding, none of it disputed).
CONFIDENCE_WEIGHTS = (0.3, 0.25, 0.3, 0.15)
# The job's signals: sources with evidence against its target, verified share, themes backed by two or
# more sources, share of the sources with evidence that are cited.
JOB_CONFIDENCE_WEIGHTS = (0.35, 0.25, 0.25, 0.15)
SOURCES_FOR_FULL_STRENGTH = 3

NO_SOURCES, NO_EVIDENCE, NO_SUPPORTED_CLAIMS, NOT_ANSWERED, INSUFFICIENT_SOURCES, LOW_CONFIDENCE, RED_TEAM = (
    "no_relevant_sources",
    "no_evidence",
    "no_supported_claims",
    "question_not_addressed",
    "insufficient_sources",
    "low_confidence",
    "red_team",
)
# Wording fields: {cited}, {needed}, {confidence}, {threshold}, {rationale}, {red_team}.
ANSWER_WORDING: Mapping[str, str] = {
    NO_SOURCES: "No source relevant to the question was found",
    NO_EVIDENCE: "The relevant sources yielded no usable evidence",
    NO_SUPPORTED_CLAIMS: "No sentence of the draft could be verified against the evidence",
    NOT_ANSWERED: (
        "The verified sentences come only from sources that match single concepts of the question; "
        "no source that addresses the question as a whole supports the answer"
    ),
    INSUFFICIENT_SOURCES: "Only {cited} source(s) support the answer; {needed} required",
    RED_TEAM: "Red-Team: {red_team}",
    LOW_CONFIDENCE: "Confidence {confidence:.2f} is below {threshold:.2f}: {rationale}",
}
JOB_WORDING: Mapping[str, str] = {
    NO_EVIDENCE: "No relevant source yielded usable evidence",
    NO_SUPPORTED_CLAIMS: "No claim could be verified against the extracted evidence",
    NOT_ANSWERED: (
        "The verified claims come only from {cited} source(s) that match single concepts of the goal; "
        "no source that addresses the goal as a whole backs a verified claim"
    ),
    INSUFFICIENT_SOURCES: (
        "Only {cited} source(s) back a verified claim; at least {needed} were required for this synthesis"
    ),
    LOW_CONFIDENCE: ANSWER_WORDING[LOW_CONFIDENCE],
}
ANSWER_RULES = (
    NO_SOURCES,
    NO_EVIDENCE,
    NO_SUPPORTED_CLAIMS,
    NOT_ANSWERED,
    INSUFFICIENT_SOURCES,
    RED_TEAM,
    LOW_CONFIDENCE,
)
# The job reports the Red-Team's findings but does not refuse on them (its report shows them instead).
JOB_RULES = (NO_EVIDENCE, NO_SUPPORTED_CLAIMS, NOT_ANSWERED, INSUFFICIENT_SOURCES, LOW_CONFIDENCE)


@dataclass(frozen=True)
class GatePolicy:
    """The parameters of the one confidence formula and the one refusal chain."""

    weights: tuple[float, float, float, float]
    rules: tuple[str, ...]  # the refusal rules checked, in order; the first that holds refuses
    wording: Mapping[str, str] = field(default_factory=lambda: ANSWER_WORDING)
    min_confidence: float | None = DEFAULT_MIN_CONFIDENCE  # None: no confidence floor
    min_sources: int = DEFAULT_MIN_SOURCES
    max_confidence: float = MAX_CONFIDENCE
    single_source_cap: float = SINGLE_SOURCE_CONFIDENCE_CAP


def answer_policy(
    *, quality_gate: bool, min_confidence: float | None = None, min_sources: int | None = None
) -> GatePolicy:
    """The answer engine's policy: a confidence floor only with the preset's quality gate or when the
    caller sets one."""
    floor = DEFAULT_MIN_CONFIDENCE if min_confidence is None else min_confidence
    return GatePolicy(
        weights=CONFIDENCE_WEIGHTS,
        rules=ANSWER_RULES,
        wording=ANSWER_WORDING,
        min_confidence=floor if quality_gate or min_confidence is not None else None,
        min_sources=min_sources or DEFAULT_MIN_SOURCES,
    )


def job_policy(min_sources: int) -> GatePolicy:
    """The research job's stricter policy: its own signals' weights, always a confidence floor."""
    return GatePolicy(
        weights=JOB_CONFIDENCE_WEIGHTS,
        rules=JOB_RULES,
        wording=JOB_WORDING,
        min_confidence=DEFAULT_MIN_CONFIDENCE,
        min_sources=min_sources,
    )


@dataclass(frozen=True)
class GateFacts:
    """What a decision rests on, as a driver measured it."""

    signals: tuple[float, float, float, float]  # in the order of the policy's weights
    rationale: str
    cited_sources: int  # distinct sources cited by verified claims
    verified_claims: int
    answered: bool  # a cited source addresses the question (or goal) as a whole
    has_sources: bool = True
    has_evidence: bool = True
    red_team: RedTeamReport | None = None


@dataclass(frozen=True)
class Decision:
    refusal: bool
    reason_code: str | None
    reason: str | None
    confidence: float
    rationale: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def confidence(signals: Sequence[float], policy: GatePolicy, cited_sources: int) -> float:
    """The weighted signals, kept below certainty, and capped when one source carries everything."""
    value = 0.0
    for weight, signal in zip(policy.weights, signals, strict=True):
        value += weight * signal
    value = min(policy.max_confidence, value)
    if cited_sources == 1:
        value = min(value, policy.single_source_cap)
    return round(value, 3)


def _refuses(rule: str, facts: GateFacts, policy: GatePolicy, value: float) -> bool:
    if rule == NO_SOURCES:
        return not facts.has_sources
    if rule == NO_EVIDENCE:
        return not facts.has_evidence
    if rule == NO_SUPPORTED_CLAIMS:
        return facts.verified_claims == 0
    if rule == NOT_ANSWERED:
        return not facts.answered
    if rule == INSUFFICIENT_SOURCES:
        return facts.cited_sources < policy.min_sources
    if rule == RED_TEAM:
        return facts.red_team is not None and facts.red_team.force_refusal
    if rule == LOW_CONFIDENCE:
        return policy.min_confidence is not None and value < policy.min_confidence
    raise ValueError(f"unknown refusal rule {rule}")


def decide(facts: GateFacts, policy: GatePolicy) -> Decision:
    value = confidence(facts.signals, policy, facts.cited_sources)
    for rule in policy.rules:
        if _refuses(rule, facts, policy, value):
            reason = policy.wording[rule].format(
                cited=facts.cited_sources,
                needed=policy.min_sources,
                confidence=value,
                threshold=policy.min_confidence or 0.0,
                rationale=facts.rationale,
                red_team=facts.red_team.reason if facts.red_team else None,
            )
            return Decision(True, rule, reason, 0.0, facts.rationale)
    return Decision(False, None, None, value, facts.rationale)


def after_admission(decision: Decision, facts: GateFacts, policy: GatePolicy) -> Decision:
    """The decision on an answer the gate admitted while it streamed: what was sent is not taken back.
    Should a later check object (the rest of an LLM's draft, the Red-Team), the answer stands with its
    confidence lowered to at most the floor (or the single-source cap without one), and says why."""
    if not decision.refusal:
        return decision
    value = confidence(facts.signals, policy, facts.cited_sources)
    floor = policy.min_confidence if policy.min_confidence is not None else policy.single_source_cap
    return Decision(
        False,
        None,
        None,
        min(value, floor),
        f"{facts.rationale}; after the answer was sent, the gate objected: {decision.reason}",
    )


def answer_facts(
    *,
    sources: Sequence[SourceDoc],
    chunks: dict[str, EvidenceChunk],
    kept: Sequence[ClaimVerification],
    all_claims: Sequence[ClaimVerification],
    contradictions: Sequence[Contradiction] = (),
    red_team: RedTeamReport | None = None,
) -> GateFacts:
    """The answer engine's measures of its verified draft (or of the part verified so far). Agreement is
    the kept claims' mean confidence, which the Verifier draws from the independent sources that state
    each finding (a lone source is 0.5), less the share of cited evidence another source contradicts."""
    by_id = {source.source_id: source for source in sources}
    cited = {chunks[i].source_id for claim in kept for i in claim.evidence_chunk_ids if i in chunks}
    supported = sum(1.0 if claim.verdict == SUPPORTED else 0.5 for claim in kept)
    share = supported / len(all_claims) if all_claims else 0.0
    strength = min(1.0, len(cited) / SOURCES_FOR_FULL_STRENGTH)
    relevance = sum(by_id[s].relevance for s in cited if s in by_id) / len(cited) if cited else 0.0
    disputed = {i for c in contradictions for i in c.evidence_chunk_ids}
    cited_chunks = {i for claim in kept for i in claim.evidence_chunk_ids}
    undisputed = 1.0 - (len(disputed & cited_chunks) / len(cited_chunks) if cited_chunks else 0.0)
    corroboration = sum(claim.confidence for claim in kept) / len(kept) if kept else 0.0
    agreement = undisputed * corroboration
    rationale = (
        f"{len(kept)}/{len(all_claims)} claim(s) verified; {len(cited)} source(s) cited; "
        f"mean relevance of cited sources {relevance:.2f}; agreement {agreement:.2f}"
    )
    return GateFacts(
        signals=(share, strength, relevance, agreement),
        rationale=rationale,
        cited_sources=len(cited),
        verified_claims=len(kept),
        answered=any(by_id[s].answers_question for s in cited if s in by_id),
        has_sources=bool(sources),
        has_evidence=bool(chunks),
        red_team=red_team,
    )
