"""Citation chasing (backward and forward snowballing) after screening: which selected sources are the seeds,
which directions a job follows, and how the works the citation graphs gave join the screened candidates.

Chased works are screened with the same code and scores as every candidate (`screening.screen` over the
searches' hits and the chased ones together, de-duplicated by DOI, arXiv id and title); a chased work is
selected when that screening would have selected it had a search found it, and is added to the selection
the job already has (a reviewer's included). A candidate's first hit says how it was discovered: a
search's query id, or `chase:<method>:<seed>:<connector>`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

from functions.research.planning.request import CitationChasing
from functions.research.retrieval.screening import Candidate, ScreeningResult

DiscoveryMethod = Literal["search", "references", "citations"]
Direction = Literal["references", "citations"]
DIRECTIONS: dict[CitationChasing, tuple[Direction, ...]] = {
    "off": (),
    "backward": ("references",),
    "forward": ("citations",),
    "both": ("references", "citations"),
}
# Seeds: the best selected sources, as many as the depth asks (and the budget allows: one check, as a
# search iteration's), each chased for up to CHASED_PER_SEED works in each direction.
SEEDS_BY_DEPTH = {"rapid": 2, "focused": 3, "comprehensive": 5, "exhaustive": 8}
CHASED_PER_SEED: dict[Direction, int] = {"references": 30, "citations": 20}
_CHASE_PREFIX = "chase:"


def seed_count(depth: str) -> int:
    return SEEDS_BY_DEPTH.get(depth, SEEDS_BY_DEPTH["rapid"])


def chase_query_id(method: Direction, seed_id: str, connector: str) -> str:
    """The query id a chased work's hit carries (screening keeps each candidate's query ids)."""
    return f"{_CHASE_PREFIX}{method}:{seed_id}:{connector}"


def discovered_via(candidate: Candidate) -> dict[str, Any]:
    """`{"method", "seed", "connector"}`: how the job first found the candidate (a search, or a seed's
    references or citations)."""
    first = candidate.query_ids[0] if candidate.query_ids else ""
    if first.startswith(_CHASE_PREFIX):
        method, seed, connector = first[len(_CHASE_PREFIX) :].split(":", 2)
        return {"method": method, "seed": seed, "connector": connector}
    return {"method": "search", "seed": None, "connector": candidate.paper.source}


class SeedOutcome(BaseModel):
    """One seed in one direction: the provider that answered and how many works it gave, or why none did."""

    seed: str
    direction: Direction
    connector: str | None = None
    found: int = 0
    not_chased_reason: str | None = None


class ChasingRecord(BaseModel):
    """What the chasing phase did, kept with the screening: reported in the results and the report."""

    mode: CitationChasing = "off"
    seeds: list[str] = Field(default_factory=list)
    outcomes: list[SeedOutcome] = Field(default_factory=list)
    requests: dict[str, int] = Field(default_factory=dict)  # graph requests sent, by provider
    chased_works: int = 0  # works the graphs gave, before de-duplication
    new_candidates: int = 0  # of them, works no search had found
    selected: list[str] = Field(default_factory=list)  # chased sources added to the selection
    skipped_reason: str | None = None  # why the job did not chase at all (the budget)

    def not_chased(self) -> dict[str, str]:
        """Seed -> why it was not chased (every direction asked failed)."""
        reasons: dict[str, list[str]] = {}
        chased = {o.seed for o in self.outcomes if o.connector is not None}
        for outcome in self.outcomes:
            if outcome.seed not in chased and outcome.not_chased_reason:
                reasons.setdefault(outcome.seed, []).append(
                    f"{outcome.direction}: {outcome.not_chased_reason}"
                )
        return {seed: "; ".join(parts) for seed, parts in reasons.items()}

    def summary(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "seeds": self.seeds,
            "seeds_chased": sorted({o.seed for o in self.outcomes if o.connector is not None}),
            "not_chased": self.not_chased(),
            "graph_requests": self.requests,
            "chased_works": self.chased_works,
            "new_candidates": self.new_candidates,
            "selected": self.selected,
            **({"skipped_reason": self.skipped_reason} if self.skipped_reason else {}),
        }


def joined_screening(
    known: list[Candidate], selection: list[str], union: ScreeningResult, affordable: int
) -> tuple[list[Candidate], list[Candidate]]:
    """From the screening of every hit (`union`): the candidates no search had found (scored and with
    their rejections), and those of them selected, best first, at most `affordable`."""
    known_ids = {candidate.source_id for candidate in known}
    new = [candidate for candidate in union.candidates if candidate.source_id not in known_ids]
    chosen = [c for c in union.selected if c.source_id not in known_ids and c.source_id not in selection]
    for candidate in chosen[affordable:]:
        candidate.rejection = "beyond_depth_limit"
    return new, chosen[: max(0, affordable)]


def rejection_counts(candidates: list[Candidate]) -> dict[str, int]:
    return dict(sorted(Counter(c.rejection for c in candidates if c.rejection).items()))
