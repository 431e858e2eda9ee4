"""Decision gate: answer or refuse, with a machine-readable reason; and the answer's confidence.

A refusal never carries an answer made up without evidence: its text only says why there is none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from functions.research.critic import Critique
from functions.research.evidence import EvidenceChunk, SourceDoc
from functions.research.redteam import RedTeamReport
from functions.research.verifier import SUPPORTED, ClaimVerification

DEFAULT_MIN_CONFIDENCE = 0.3
DEFAULT_MIN_SOURCES = 1
SINGLE_SOURCE_CONFIDENCE_CAP = 0.5
# Lexical verification cannot prove entailment, so confidence stays below certainty.
MAX_CONFIDENCE = 0.95
# supported share, independent sources cited, relevance of the cited sources, agreement
CONFIDENCE_WEIGHTS = (0.3, 0.25, 0.3, 0.15)
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


@dataclass(frozen=True)
class Decision:
    refusal: bool
    reason_code: str | None
    reason: str | None
    confidence: float
    rationale: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def confidence_of(
    kept: Sequence[ClaimVerification],
    all_claims: Sequence[ClaimVerification],
    chunks: dict[str, EvidenceChunk],
    sources: dict[str, SourceDoc],
    critique: Critique | None,
) -> tuple[float, str, set[str]]:
    cited = {chunks[i].source_id for claim in kept for i in claim.evidence_chunk_ids if i in chunks}
    supported = sum(1.0 if claim.verdict == SUPPORTED else 0.5 for claim in kept)
    share = supported / len(all_claims) if all_claims else 0.0
    strength = min(1.0, len(cited) / SOURCES_FOR_FULL_STRENGTH)
    relevance = sum(sources[s].relevance for s in cited if s in sources) / len(cited) if cited else 0.0
    disputed = {i for c in (critique.contradictions if critique else []) for i in c.evidence_chunk_ids}
    cited_chunks = {i for claim in kept for i in claim.evidence_chunk_ids}
    agreement = 1.0 - (len(disputed & cited_chunks) / len(cited_chunks) if cited_chunks else 0.0)
    w_share, w_strength, w_relevance, w_agreement = CONFIDENCE_WEIGHTS
    value = w_share * share + w_strength * strength + w_relevance * relevance + w_agreement * agreement
    value = min(MAX_CONFIDENCE, value)
    if len(cited) == 1:
        value = min(value, SINGLE_SOURCE_CONFIDENCE_CAP)
    rationale = (
        f"{len(kept)}/{len(all_claims)} claim(s) verified; {len(cited)} source(s) cited; "
        f"mean relevance of cited sources {relevance:.2f}; agreement {agreement:.2f}"
    )
    return round(value, 3), rationale, cited


def decide(
    *,
    sources: Sequence[SourceDoc],
    chunks: dict[str, EvidenceChunk],
    kept: Sequence[ClaimVerification],
    all_claims: Sequence[ClaimVerification],
    critique: Critique | None,
    red_team: RedTeamReport,
    quality_gate: bool,
    min_confidence: float | None = None,
    min_sources: int | None = None,
) -> Decision:
    by_id = {source.source_id: source for source in sources}
    confidence, rationale, cited = confidence_of(kept, all_claims, chunks, by_id, critique)
    threshold = DEFAULT_MIN_CONFIDENCE if min_confidence is None else min_confidence
    needed = min_sources or DEFAULT_MIN_SOURCES
    refusal: tuple[str, str] | None = None
    if not sources:
        refusal = (NO_SOURCES, "No source relevant to the question was found")
    elif not chunks:
        refusal = (NO_EVIDENCE, "The relevant sources yielded no usable evidence")
    elif not kept:
        refusal = (NO_SUPPORTED_CLAIMS, "No sentence of the draft could be verified against the evidence")
    elif not any(by_id[s].answers_question for s in cited if s in by_id):
        refusal = (
            NOT_ANSWERED,
            "The verified sentences come only from sources that match single concepts of the question; "
            "no source that addresses the question as a whole supports the answer",
        )
    elif len(cited) < needed:
        refusal = (INSUFFICIENT_SOURCES, f"Only {len(cited)} source(s) support the answer; {needed} required")
    elif red_team.force_refusal:
        refusal = (RED_TEAM, f"Red-Team: {red_team.reason}")
    elif (quality_gate or min_confidence is not None) and confidence < threshold:
        refusal = (LOW_CONFIDENCE, f"Confidence {confidence:.2f} is below {threshold:.2f}: {rationale}")
    if refusal:
        return Decision(True, refusal[0], refusal[1], 0.0, rationale)
    return Decision(False, None, None, confidence, rationale)
