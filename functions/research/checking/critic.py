"""Critic: what the draft leaves uncovered, which claims rest on one source, and where sources disagree.

Contradictions are found between evidence chunks of different sources that talk about the same thing
(they share most of their content terms): opposite findings (one says a quantity rose or helped, the
other that it fell, hurt or had no effect) and disagreeing numbers for the same quantity (the words
before the number match, the values differ by more than a tenth).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

from functions.common.text import QUERY_STOPWORDS, stem, stems
from functions.research.planning.plan import AnswerSettings, ResearchPlan
from functions.research.retrieval.chunks import Bm25Index
from functions.research.retrieval.evidence import EvidenceChunk

OPPOSITE, NUMERIC = "opposite_findings", "numeric_disagreement"
MIN_SHARED_TERMS = 3
MIN_TOPIC_OVERLAP = 0.3
NUMERIC_TOLERANCE = 0.1
_NEGATION = re.compile(
    r"\b(no|not|never|fail(?:s|ed)? to|did not|does not|do not|cannot|could not|unable to)\b", re.IGNORECASE
)
_UP = (
    "increas",
    "improv",
    "rais",
    "higher",
    "more",
    "gain",
    "boost",
    "enhanc",
    "outperform",
    "better",
    "benefit",
)
_DOWN = (
    "decreas",
    "reduc",
    "lower",
    "less",
    "declin",
    "worse",
    "degrad",
    "hurt",
    "harm",
    "underperform",
    "drop",
)
# A measured quantity: words, a linking word, the number and its unit ("reduced latency by 20 %").
_QUANTITY = re.compile(
    r"((?:[a-z][a-z\-]+\s+){1,4}?)(?:by|of|to|at|was|were|is|are)\s+(\d+(?:\.\d+)?)\s*"
    r"(%|percent|percentage points?|points?|ms|seconds?|fold|x\b|times)",
    re.IGNORECASE,
)
# Names inside a sentence ("GLUE", "WikiText", "MMLU"): two statements naming different ones measure
# different things, even when their numbers differ.
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9\-]*[A-Z0-9][A-Za-z0-9\-]*\b")
_STOP = frozenset(
    {"the", "a", "an", "by", "of", "to", "at", "was", "were", "is", "are", "and", "in", "on", "with", "our"}
)
_STEM_STOPWORDS = QUERY_STOPWORDS | _STOP


@dataclass(frozen=True)
class Contradiction:
    kind: str
    topic: str
    description: str
    evidence_chunk_ids: list[str]
    source_ids: list[str]
    statements: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Critique:
    uncovered_sub_questions: list[str]
    single_source_claims: list[dict[str, Any]]
    contradictions: list[Contradiction]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uncovered_sub_questions": self.uncovered_sub_questions,
            "single_source_claims": self.single_source_claims,
            "contradictions": [c.to_dict() for c in self.contradictions],
            "notes": self.notes,
        }


def _stems(text: str) -> set[str]:
    return set(stems(text, stopwords=_STEM_STOPWORDS, min_length=3, numbers=False))


def _direction(text: str) -> int:
    """+1 a finding that something rose or helped, -1 fell or hurt (a negated rise counts as no rise:
    -1), 0 no direction stated."""
    lowered = text.lower()
    up = sum(lowered.count(cue) for cue in _UP)
    down = sum(lowered.count(cue) for cue in _DOWN)
    sign = 1 if up > down else -1 if down > up else 0
    return -sign if _NEGATION.search(text) else sign


def _names(text: str) -> set[str]:
    return {match.group(0) for match in _NAME.finditer(text)}


def _quantities(text: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for match in _QUANTITY.finditer(text):
        words = [stem(w) for w in match.group(1).lower().split() if w not in _STOP]
        if not words:
            continue
        key = " ".join(words[-2:]) + "|" + (match.group(3) or "").lower().rstrip("s")
        found.setdefault(key, float(match.group(2)))
    return found


def find_contradictions(chunks: Sequence[EvidenceChunk], limit: int = 5) -> list[Contradiction]:
    stems = {chunk.chunk_id: _stems(chunk.text) for chunk in chunks}
    found: list[Contradiction] = []
    for first, second in combinations(chunks, 2):
        if first.source_id == second.source_id:
            continue
        shared = stems[first.chunk_id] & stems[second.chunk_id]
        smaller = min(len(stems[first.chunk_id]), len(stems[second.chunk_id])) or 1
        if len(shared) < MIN_SHARED_TERMS or len(shared) / smaller < MIN_TOPIC_OVERLAP:
            continue
        topic = " ".join(sorted(shared)[:6])
        pair = [first.chunk_id, second.chunk_id]
        sources = [first.source_id, second.source_id]
        statements = [first.text, second.text]
        a, b = _direction(first.text), _direction(second.text)
        if a and b and a != b:
            found.append(
                Contradiction(
                    OPPOSITE, topic, "the sources report opposite findings", pair, sources, statements
                )
            )
            continue
        if _names(first.text) ^ _names(second.text):
            continue  # different benchmarks, datasets or populations: different measurements
        q1, q2 = _quantities(first.text), _quantities(second.text)
        for key in q1.keys() & q2.keys():
            x, y = q1[key], q2[key]
            if max(x, y) > 0 and abs(x - y) / max(x, y) > NUMERIC_TOLERANCE:
                quantity = key.split("|")[0]
                found.append(
                    Contradiction(
                        NUMERIC,
                        topic,
                        f"the sources report different values for {quantity}: {x:g} vs {y:g}",
                        pair,
                        sources,
                        statements,
                    )
                )
                break
        if len(found) >= limit:
            break
    return found[:limit]


def critique(
    plan: ResearchPlan[AnswerSettings],
    claims: Sequence[tuple[str, list[str]]],
    chunks: dict[str, EvidenceChunk],
    contradictions: Sequence[Contradiction],
) -> Critique:
    """`claims`: the draft's (claim id, cited chunk ids)."""
    cited = [chunks[i] for _, ids in claims for i in ids if i in chunks]
    texts = [chunk.text for chunk in cited]
    if texts:
        index = Bm25Index(texts)
        uncovered = [
            question
            for question, facet in zip(plan.sub_questions[1:], plan.facets, strict=False)
            if not index.mentions(facet.phrase)
        ]
    else:
        uncovered = list(plan.sub_questions)
    single = []
    for claim_id, ids in claims:
        sources = {chunks[i].source_id for i in ids if i in chunks}
        if len(sources) == 1:
            single.append({"claim_id": claim_id, "source_id": next(iter(sources)), "evidence_chunk_ids": ids})
    notes = []
    if uncovered:
        notes.append(f"{len(uncovered)} sub-question(s) without evidence in the answer")
    return Critique(uncovered, single, list(contradictions), notes)
