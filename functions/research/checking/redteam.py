"""Red-Team: looks for what would make the answer risky and can force a refusal.

- numbers in the answer that its cited evidence does not contain;
- a claim resting on one source worded as if the field agreed ("studies show", "it is well established");
- text addressed to the reader or to a model inside retrieved documents (quarantined sentence by sentence
  by the Retriever, never shown to the writer; reported here per source, without quoting it), with high
  severity for a source full of it (withheld whole), or such text in the answer itself;
- a draft that verification mostly threw out (the writer was not answering from the evidence).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from functions.research.checking.finding import finding
from functions.research.checking.verifier import UNSUPPORTED, ClaimVerification, numbers_in
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.retrieval.untrusted_text import ADDRESSED, screen, signal_summary

HIGH, MEDIUM, LOW = "high", "medium", "low"
HOSTILE_SOURCE = "hostile_source"
CONTAINED = frozenset({HOSTILE_SOURCE})  # high risk found and kept out of the answer: no refusal needed
# More than this share of unsupported claims means the draft did not come from the evidence.
MAX_UNSUPPORTED_SHARE = 0.5

_CONSENSUS = re.compile(
    r"\b(?:studies|research|evidence|experts|scientists|the literature)\s+(?:consistently\s+)?"
    r"(?:show|shows|agree|agrees|confirm|confirms|demonstrate|demonstrates)\b"
    r"|\b(?:it is|it's)\s+(?:well[- ])?(?:established|known|accepted)\b"
    r"|\b(?:consensus|widely (?:accepted|agreed|believed)|generally agreed|all studies|most studies)\b",
    re.IGNORECASE,
)


def injection_cue(text: str) -> str | None:
    """The classes of text addressed to the reader or to a model found in `text` (never the text itself:
    a flag that quoted it would ship it), or None."""
    hostile = screen(text).hostile
    return signal_summary([clause.verdict for clause in hostile]) if hostile else None


@dataclass(frozen=True)
class RedTeamFlag:
    # unsupported_number, single_source_consensus, prompt_injection, hostile_source, unverified_draft
    kind: str
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
    hostile_sources: Sequence[str] = (),
) -> RedTeamReport:
    """`quarantined`: sentences withheld as addressed to the reader or a model, with their signals;
    `hostile_sources`: sources withheld whole for being full of them. Those are flagged (high severity
    for a hostile source) but do not force a refusal: nothing of them reached the answer."""
    flags = [flag for claim in kept for flag in claim_flags(claim, chunks)]
    flags += withheld_flags(quarantined, hostile_sources)
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
    critical = [flag for flag in flags if flag.severity == HIGH and flag.kind not in CONTAINED]
    return RedTeamReport(
        flags=flags,
        force_refusal=bool(critical),
        reason="; ".join(flag.detail for flag in critical) or None,
    )


def claim_flags(claim: ClaimVerification, chunks: dict[str, EvidenceChunk]) -> list[RedTeamFlag]:
    """What makes one verified claim risky: numbers its evidence lacks, consensus wording on one source,
    text addressed to the reader or a model."""
    flags: list[RedTeamFlag] = []
    cited = [chunks[i] for i in claim.evidence_chunk_ids if i in chunks]
    quoted = {n for chunk in cited for n in numbers_in(chunk.text)}
    stated = finding(claim.claim_text)  # the writer's attributions are metadata, not the finding
    missing = [n for n in numbers_in(stated) if n not in quoted]
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
    cue = injection_cue(stated)
    if cue:
        flags.append(
            RedTeamFlag(
                "prompt_injection",
                HIGH,
                f"the answer carries text addressed to the reader or a model ({cue})",
                [claim.claim_id],
            )
        )
    return flags


AUTHORITY_LOST = (
    "; the source's other sentences stay evidence, but it is never the direct answer, a heading or a theme"
)


def locations(chunks: Sequence[EvidenceChunk]) -> str:
    """Where withheld sentences are, without quoting them: "page 3, characters 120-245; abstract, ..."."""
    return "; ".join(
        f"{'abstract' if chunk.page is None else f'page {chunk.page}'}, characters {chunk.char_start}-{chunk.char_end}"
        for chunk in chunks
    )


def withheld_flags(
    quarantined: Sequence[tuple[EvidenceChunk, str]], hostile_sources: Sequence[str]
) -> list[RedTeamFlag]:
    """One flag per source with withheld sentences (counted by class, never quoted)."""
    by_source: dict[str, list[EvidenceChunk]] = {}
    signals: dict[str, list[str]] = {}
    for chunk, cue in quarantined:
        by_source.setdefault(chunk.source_id, []).append(chunk)
        signals.setdefault(chunk.source_id, []).extend(s for s in cue.split(", ") if s)
    flags: list[RedTeamFlag] = []
    for source_id, withheld in by_source.items():
        found = ", ".join(sorted(set(signals[source_id])))
        if source_id in hostile_sources:
            flags.append(
                RedTeamFlag(
                    HOSTILE_SOURCE,
                    HIGH,
                    f"source {source_id} is full of text addressed to the reader or a model "
                    f"({len(withheld)} sentence(s): {found}, at {locations(withheld)}); none of it was used",
                    chunk_ids=[chunk.chunk_id for chunk in withheld],
                )
            )
        else:
            addressed = bool(set(signals[source_id]) & ADDRESSED)
            flags.append(
                RedTeamFlag(
                    "prompt_injection",
                    MEDIUM if addressed else LOW,
                    f"{len(withheld)} sentence(s) of source {source_id} addressed to the reader or a model "
                    f"were withheld ({found}) at {locations(withheld)}"
                    + (AUTHORITY_LOST if addressed else ""),
                    chunk_ids=[chunk.chunk_id for chunk in withheld],
                )
            )
    return flags
