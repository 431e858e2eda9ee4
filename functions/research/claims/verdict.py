"""A claim's verdict: every screened evidence passage of its sources weighed against the claim, one by one.

Each passage is judged by the answer pipeline's own check (`verifier.verify_claim`: fuzzy containment or
term coverage, and the faithfulness rules of `checking/faithfulness.py`), then placed:

- **supports**: the passage states the claim (the Verifier's `supported`);
- **contradicts**: the passage states the same finding (at least COVERAGE_PARTIAL of the claim's terms)
  with another number or unit, the opposite direction ("increased" / "decreased"; with several direction
  words, an odd number of them turned round) or the opposite polarity (a negation added or dropped):
  the source says something the claim cannot also be, even where the Verifier's match alone passed it;
- **partially supports**: the passage states part of the claim (the Verifier's `partially_supported`), or
  states it only for the population it studied (the claim drops it: "in mice" left out) or only as a
  possibility (the claim makes certain what the source only suggests);
- **related**: the passage is about the claim (at least ON_TOPIC of its terms) but states none of it, or
  states it of another population than the one the source studied.

The verdict is the strongest stance any passage takes, in that order: `supported`, `contradicted`,
`partially_supported`, `unsupported` (the sources address the claim, nothing in them states it), and
`insufficient_evidence` (no passage is even about it). A passage that supports wins over one that
contradicts (a paper may round a figure in its abstract); the contradiction is kept as evidence and in
the notes, and lowers the confidence. Passages that state none of it are shown only for `unsupported`.

Confidence: a stance's sources each halve the remaining doubt, starting from 0.75 for one source (two
0.875, three 0.9375; never above MAX_CLAIM_CONFIDENCE), times how closely its best passage matches (the
Verifier's match for support, the share of the claim's terms for a contradiction). `unsupported` is
half as sure as a match (the best passage may have been left unread); `insufficient_evidence` is 0.

Retrieved text is untrusted: the passages come screened (functions/research/retrieval/untrusted_text.py),
and a sentence addressed to the reader or a model is removed again here, so it never supports a claim.
Deterministic and lexical: no model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from functions.research.checking.faithfulness import (
    as_reported,
    directions,
    finding_of,
    finding_terms,
    read,
    restated,
)
from functions.research.checking.verifier import (
    COVERAGE_PARTIAL,
    MAX_CLAIM_CONFIDENCE,
    PARTIAL,
    SUPPORTED,
    UNSUPPORTED,
    verify_claim,
)
from functions.research.retrieval.evidence import EvidenceChunk
from functions.research.retrieval.untrusted_text import is_hostile, without_addressed

CONTRADICTED, INSUFFICIENT = "contradicted", "insufficient_evidence"
VERDICTS = (SUPPORTED, PARTIAL, UNSUPPORTED, CONTRADICTED, INSUFFICIENT)
SUPPORTS, CONTRADICTS, PARTLY, RELATED = "supports", "contradicts", "partially_supports", "related"
STANCE_ORDER = (SUPPORTS, CONTRADICTS, PARTLY, RELATED)
VERDICT_OF = {SUPPORTS: SUPPORTED, CONTRADICTS: CONTRADICTED, PARTLY: PARTIAL, RELATED: UNSUPPORTED}
SAYING = {
    SUPPORTS: "state the claim",
    CONTRADICTS: "state the same finding otherwise",
    PARTLY: "state part of the claim",
    RELATED: "address the claim without stating it",
}
# A passage that states less than this share of the claim's terms is not about the claim.
ON_TOPIC = 0.5
MAX_EVIDENCE = 6
MAX_RELATED_EVIDENCE = 2


@dataclass(frozen=True)
class Weighed:
    """One passage's stance on the claim, how closely it matches, and why."""

    chunk: EvidenceChunk
    stance: str
    match: float
    note: str


@dataclass(frozen=True)
class ClaimVerdict:
    verdict: str
    confidence: float
    evidence: list[Weighed]
    notes: list[str] = field(default_factory=list)


def claim_coverage(claim: str, passage: str) -> float:
    """The share of the claim's terms (numbers aside) that the passage states."""
    terms = finding_terms(finding_of(claim))
    if not terms:
        return 0.0
    return len(terms & finding_terms(as_reported(passage))) / len(terms)


def conflict(claim: str, passage: str) -> str | None:
    """How the passage, stating the same finding, says something the claim cannot also be: another
    number or unit, the opposite direction, the opposite polarity (None: no such conflict)."""
    finding = finding_of(claim)
    shown, quoted = read(finding), read(restated(finding, [passage]))
    stated = read(passage)
    claimed, instead = shown.values - stated.values, quoted.values - shown.values
    if claimed and instead:
        return (
            f"states {', '.join(sorted(instead)[:3])} where the claim says {', '.join(sorted(claimed)[:3])}"
        )
    same_values = {(value, unit) for value, unit in shown.quantities if unit} - quoted.quantities
    if any(value in quoted.values for value, _ in same_values):
        return "states the same figure in another unit"
    aligned = len(directions(finding)) == len(directions(restated(finding, [passage])))
    if opposite_direction(finding, restated(finding, [passage])) or (
        not aligned
        and (
            (shown.up and not shown.down and quoted.down and not quoted.up)
            or (shown.down and not shown.up and quoted.up and not quoted.down)
        )
    ):
        return "states the opposite direction of the effect"
    if shown.negated != quoted.negated:
        return "states the opposite (a negation the claim lacks)" if quoted.negated else "does not negate it"
    return None


def opposite_direction(finding: str, stated: str) -> bool:
    """The same direction words, aligned in order, an odd number of them turned round: "decreasing the
    sample size lowers accuracy" agrees with "increasing it raises accuracy", "decreasing it raises
    accuracy" does not (the faithfulness rule only compares texts with one direction each)."""
    shown, quoted = directions(finding), directions(stated)
    return bool(shown) and len(shown) == len(quoted) and math.prod(shown) != math.prod(quoted)


def narrowing(claim: str, passage: str) -> str | None:
    """The passage states the claim only for the population it studied, or only as a possibility."""
    finding = finding_of(claim)
    shown, quoted = read(finding), read(restated(finding, [passage]))
    if shown.population - read(passage).population:
        return None  # another population than the one studied: not a narrowing, not stated at all
    dropped = quoted.population - shown.population
    if dropped:
        return f"states it only for the population studied ({', '.join(sorted(dropped))})"
    if quoted.hedged and not shown.hedged:
        return "only suggests what the claim states as certain"
    return None


def weigh(claim: str, chunk: EvidenceChunk) -> Weighed | None:
    """The passage's stance on the claim; None when it is not about the claim (or is only text
    addressed to the reader or a model)."""
    text = without_addressed(chunk.text)
    if not text.strip():
        return None
    coverage = claim_coverage(claim, text)
    if coverage < ON_TOPIC:
        return None
    verdict, match, why = verify_claim(claim, [text])
    finding = finding_of(claim)
    if verdict in (SUPPORTED, PARTIAL) and not opposite_direction(finding, restated(finding, [text])):
        return Weighed(chunk, SUPPORTS if verdict == SUPPORTED else PARTLY, match, why)
    if coverage >= COVERAGE_PARTIAL:
        conflicting = conflict(claim, text)
        if conflicting:
            return Weighed(chunk, CONTRADICTS, round(coverage, 3), conflicting)
        narrower = narrowing(claim, text)
        if narrower:
            return Weighed(chunk, PARTLY, round(coverage, 3), narrower)
    return Weighed(chunk, RELATED, round(coverage, 3), why)


def agreement(sources: int) -> float:
    """Each source that takes a stance halves the remaining doubt, from 0.75 for one."""
    return 0.0 if sources <= 0 else min(MAX_CLAIM_CONFIDENCE, 1.0 - 0.5 ** (sources + 1))


def _chosen_evidence(weighed: Sequence[Weighed]) -> list[Weighed]:
    ordered = sorted(weighed, key=lambda w: (STANCE_ORDER.index(w.stance), -w.match, w.chunk.chunk_id))
    chosen = [w for w in ordered if w.stance != RELATED][:MAX_EVIDENCE]
    # Passages that state none of it are what an `unsupported` verdict rests on, and only that one.
    return chosen or [w for w in ordered if w.stance == RELATED][:MAX_RELATED_EVIDENCE]


def judge(claim: str, chunks: Sequence[EvidenceChunk], source_of: Mapping[str, str]) -> ClaimVerdict:
    """The claim's verdict over the evidence chunks; `source_of`: each chunk's source (by source id) as
    the notes name it."""
    if is_hostile(claim):
        return ClaimVerdict(
            UNSUPPORTED, 0.0, [], ["the claim is addressed to the reader or a model: not a finding"]
        )
    if len(finding_terms(finding_of(claim))) < 3:
        return ClaimVerdict(INSUFFICIENT, 0.0, [], ["the claim is too short to state a checkable finding"])
    weighed = [w for w in (weigh(claim, chunk) for chunk in chunks) if w is not None]
    if not weighed:
        return ClaimVerdict(INSUFFICIENT, 0.0, [], ["no passage of the sources read is about the claim"])
    by_stance: dict[str, list[Weighed]] = {stance: [] for stance in STANCE_ORDER}
    for item in weighed:
        by_stance[item.stance].append(item)
    stance = next(s for s in STANCE_ORDER if by_stance[s])
    taking = by_stance[stance]
    sources = {w.chunk.source_id for w in taking}
    best = max(w.match for w in taking)
    confidence = agreement(len(sources)) * best * (0.5 if stance == RELATED else 1.0)
    notes = [f"{len(taking)} passage(s) of {len(sources)} source(s) {SAYING[stance]}"]
    if stance == SUPPORTS and by_stance[CONTRADICTS]:
        against = {w.chunk.source_id for w in by_stance[CONTRADICTS]}
        names = ", ".join(sorted(source_of.get(s, s) for s in against))
        notes.append(f"{len(by_stance[CONTRADICTS])} passage(s) state otherwise ({names})")
        confidence *= len(sources) / len(sources | against) if against - sources else 0.75
    return ClaimVerdict(VERDICT_OF[stance], round(confidence, 3), _chosen_evidence(weighed), notes)
