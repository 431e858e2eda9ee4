"""Red-Team: looks for what would make the answer risky and can force a refusal.

- numbers in the answer that its cited evidence does not contain;
- a claim resting on one source worded as if the field agreed ("studies show", "it is well established");
- instructions or prompt-injection text inside retrieved documents (quarantined by the Retriever, never
  shown to the writer; reported here), or such text in the answer itself;
- a draft that verification mostly threw out (the writer was not answering from the evidence).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from functions.research.evidence import EvidenceChunk
from functions.research.verifier import UNSUPPORTED, ClaimVerification, numbers_in

HIGH, MEDIUM, LOW = "high", "medium", "low"
# More than this share of unsupported claims means the draft did not come from the evidence.
MAX_UNSUPPORTED_SHARE = 0.5

_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)?(?:previous|prior|above|earlier|"
    r"preceding|system)\s+(?:instructions?|prompts?|rules|messages?)"
    r"|\byou\s+are\s+now\b"
    r"|\bsystem\s+prompt\b"
    r"|\bnew\s+instructions?\s*:"
    r"|\bas\s+an?\s+(?:ai|language\s+model|assistant)\b.{0,40}\b(?:must|should|will)\b"
    r"|\b(?:respond|reply|answer)\s+only\s+with\b"
    r"|\bdo\s+not\s+(?:cite|mention|reveal)\b"
    r"|</?\s*(?:system|assistant|user|instructions?)\s*>"
    r"|\[\s*(?:INST|SYSTEM)\s*\]",
    re.IGNORECASE | re.DOTALL,
)
_CONSENSUS = re.compile(
    r"\b(?:studies|research|evidence|experts|scientists|the literature)\s+(?:consistently\s+)?"
    r"(?:show|shows|agree|agrees|confirm|confirms|demonstrate|demonstrates)\b"
    r"|\b(?:it is|it's)\s+(?:well[- ])?(?:established|known|accepted)\b"
    r"|\b(?:consensus|widely (?:accepted|agreed|believed)|generally agreed|all studies|most studies)\b",
    re.IGNORECASE,
)


def injection_cue(text: str) -> str | None:
    """The instruction-like phrase in retrieved text, if any (the text is data and is never obeyed)."""
    match = _INJECTION.search(text)
    return " ".join(match.group(0).split())[:80] if match else None


@dataclass(frozen=True)
class RedTeamFlag:
    kind: str  # unsupported_number, single_source_consensus, prompt_injection, unverified_draft
    severity: str
    detail: str
    claim_ids: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RedTeamReport:
    flags: list[RedTeamFlag]
    force_refusal: bool
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "flags": [f.to_dict() for f in self.flags],
            "force_refusal": self.force_refusal,
            "reason": self.reason,
        }


def red_team(
    kept: Sequence[ClaimVerification],
    verifications: Sequence[ClaimVerification],
    chunks: dict[str, EvidenceChunk],
    quarantined: Sequence[tuple[EvidenceChunk, str]],
) -> RedTeamReport:
    flags: list[RedTeamFlag] = []
    for claim in kept:
        cited = [chunks[i] for i in claim.evidence_chunk_ids if i in chunks]
        quoted = {n for chunk in cited for n in numbers_in(chunk.text)}
        missing = [n for n in numbers_in(claim.claim_text) if n not in quoted]
        if missing:
            flags.append(
                RedTeamFlag(
                    "unsupported_number",
                    HIGH,
                    f"numbers not in the cited evidence: {', '.join(missing)}",
                    [claim.claim_id],
                    claim.evidence_chunk_ids,
                )
            )
        if _CONSENSUS.search(claim.claim_text) and len({c.source_id for c in cited}) < 2:
            flags.append(
                RedTeamFlag(
                    "single_source_consensus",
                    MEDIUM,
                    "worded as agreement across sources but rests on one source",
                    [claim.claim_id],
                    claim.evidence_chunk_ids,
                )
            )
        cue = injection_cue(claim.claim_text)
        if cue:
            flags.append(
                RedTeamFlag(
                    "prompt_injection", HIGH, f"the answer carries an instruction: {cue!r}", [claim.claim_id]
                )
            )
    for chunk, cue in quarantined:
        flags.append(
            RedTeamFlag(
                "prompt_injection",
                LOW,
                f"instruction-like text in source {chunk.source_id} was quarantined and not used: {cue!r}",
                chunk_ids=[chunk.chunk_id],
            )
        )
    unsupported = [v for v in verifications if v.verdict == UNSUPPORTED]
    if verifications and len(unsupported) / len(verifications) > MAX_UNSUPPORTED_SHARE:
        flags.append(
            RedTeamFlag(
                "unverified_draft",
                HIGH,
                f"{len(unsupported)} of {len(verifications)} drafted claims had no support in the evidence",
                [v.claim_id for v in unsupported],
            )
        )
    critical = [flag for flag in flags if flag.severity == HIGH]
    return RedTeamReport(
        flags=flags,
        force_refusal=bool(critical),
        reason="; ".join(flag.detail for flag in critical) or None,
    )
