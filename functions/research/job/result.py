"""The research job's synthesis result, and its stored form.

In memory the synthesis holds the house's one evidence type and one claim type (`EvidenceChunk`,
`ClaimVerification`); stored (for Finalize, a synthesis checkpoint and the results document) each keeps
the job's field names: evidence `{evidence_id, source_id, quote, page, section, kind, relevance_score,
char_start, char_end}`, claims `{claim_id, claim_text, evidence_ids, verdict, confidence, notes, kept}`.
This module is the one place the two forms meet.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_serializer, field_validator

from functions.research.checking.verifier import UNSUPPORTED, ClaimVerification
from functions.research.retrieval.evidence import PAGE, EvidenceChunk

# The stored name of each field, and the in-memory one.
EVIDENCE_FIELDS = {
    "evidence_id": "chunk_id",
    "source_id": "source_id",
    "quote": "text",
    "page": "page",
    "section": "section",
    "kind": "kind",
    "relevance_score": "score",
    "char_start": "char_start",
    "char_end": "char_end",
}
CLAIM_FIELDS = {
    "claim_id": "claim_id",
    "claim_text": "claim_text",
    "evidence_ids": "evidence_chunk_ids",
    "verdict": "verdict",
    "confidence": "confidence",
    "notes": "notes",
}


def stored_evidence(item: EvidenceChunk) -> dict[str, Any]:
    return {stored: getattr(item, name) for stored, name in EVIDENCE_FIELDS.items()}


def evidence_from_stored(data: dict[str, Any]) -> EvidenceChunk:
    return EvidenceChunk(**{name: data[stored] for stored, name in EVIDENCE_FIELDS.items()}, origin=PAGE)


def stored_claim(claim: ClaimVerification) -> dict[str, Any]:
    return {
        **{stored: getattr(claim, name) for stored, name in CLAIM_FIELDS.items()},
        "evidence_ids": list(claim.evidence_chunk_ids),
        "kept": claim.kept,
    }


def claim_from_stored(data: dict[str, Any]) -> ClaimVerification:
    """`kept` is the verdict's unless a reviewer struck every quote the claim cited."""
    withdrawn = not data["kept"] and data["verdict"] != UNSUPPORTED
    return ClaimVerification(
        **{name: data[stored] for stored, name in CLAIM_FIELDS.items()}, withdrawn=withdrawn
    )


class SynthesisResult(BaseModel):
    """The job's synthesis: stored for Finalize (and a synthesis checkpoint) as its `to_dict()`."""

    research_goal: str
    executive_summary: str
    synthesis_text: str
    primary_themes: list[str]
    gaps_identified: list[str]
    sources_analyzed: int
    methodologies_found: int
    methodologies: dict[str, int]
    evidence: list[EvidenceChunk]  # ids "ev-…" (functions/research/job/evidence.py)
    claims: list[ClaimVerification]
    confidence_score: float
    confidence_rationale: str
    refusal: bool
    refusal_reason: str | None
    writer: str
    notes: list[str] = Field(default_factory=list)
    red_team: dict[str, Any] = Field(default_factory=dict)  # the answer engine's Red-Team report

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence_from_stored(cls, value: list[Any]) -> list[Any]:
        return [evidence_from_stored(item) if isinstance(item, dict) else item for item in value]

    @field_validator("claims", mode="before")
    @classmethod
    def _claims_from_stored(cls, value: list[Any]) -> list[Any]:
        return [claim_from_stored(item) if isinstance(item, dict) else item for item in value]

    @field_serializer("evidence")
    def _stored_evidence(self, evidence: list[EvidenceChunk]) -> list[dict[str, Any]]:
        return [stored_evidence(item) for item in evidence]

    @field_serializer("claims")
    def _stored_claims(self, claims: list[ClaimVerification]) -> list[dict[str, Any]]:
        return [stored_claim(claim) for claim in claims]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
