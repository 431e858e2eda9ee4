"""Screen: de-duplicate candidates, score them on five dimensions, apply the policies, pick the sources.

The five dimensions and `total_score` (their sum, 0-5) follow the handover seed's scoring agent; the
ranking uses impact-level weights so that e.g. `cutting_edge` favours recency. Relevance is the
calibrated probability that the paper answers the goal or one of its concepts
(`functions.research.retrieval.relevance`); every dimension's score comes with a sentence that explains it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from functions.common.models import Paper, short_hash
from functions.research.planning.plan import JobSettings, Policies, ResearchPlan
from functions.research.retrieval.relevance import Relevance, RelevanceScorer

_METHOD_SIGNALS = re.compile(
    r"\b(we (propose|present|introduce|evaluate|conduct|train|measure|compare)|experiment\w*|"
    r"evaluat\w*|benchmark\w*|dataset\w*|randomi[sz]ed|controlled|ablation|baseline\w*|"
    r"participants|cohort|survey(ed)?|simulation\w*|statistically|significant\w*|results show)\b",
    re.IGNORECASE,
)
UNKNOWN_SCORE = 0.5  # the seed's default for a dimension that cannot be computed
CITATIONS_PER_YEAR_FOR_FULL_SCORE = 100


def source_id_for(canonical_id: str) -> str:
    return f"src-{short_hash(canonical_id, 10)}"


@dataclass
class Candidate:
    paper: Paper
    source_id: str
    query_ids: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    total_score: float = 0.0
    weighted_score: float = 0.0
    rejection: str | None = None
    explanations: dict[str, str] = field(default_factory=dict)  # per dimension: why this score
    # Probability that the paper answers the goal as a whole (None: not screened by relevance).
    goal_relevance: float | None = None

    def answers_goal(self, threshold: float) -> bool:
        return self.goal_relevance is None or self.goal_relevance >= threshold

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "paper": self.paper.model_dump(mode="json"),
            "query_ids": self.query_ids,
            "scores": self.scores,
            "total_score": self.total_score,
            "weighted_score": self.weighted_score,
            "rejection": self.rejection,
            "explanations": self.explanations,
            "goal_relevance": self.goal_relevance,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return cls(
            paper=Paper.model_validate(data["paper"]),
            source_id=data["source_id"],
            query_ids=list(data.get("query_ids", [])),
            scores=dict(data.get("scores", {})),
            total_score=float(data.get("total_score", 0.0)),
            weighted_score=float(data.get("weighted_score", 0.0)),
            rejection=data.get("rejection"),
            explanations=dict(data.get("explanations", {})),
            goal_relevance=data.get("goal_relevance"),
        )


@dataclass
class ScreeningResult:
    candidates: list[Candidate]  # every unique candidate, scored, with its rejection reason if any
    selected: list[Candidate]
    discovered: int  # before de-duplication
    duplicates: int
    passed: int  # passed every policy (before the depth cut)
    rejection_counts: dict[str, int]
    needs_refinement: bool

    @property
    def average_quality(self) -> float:
        if not self.selected:
            return 0.0
        return round(sum(c.total_score / 5 for c in self.selected) / len(self.selected), 3)


def _normalised_title(title: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", title.lower()).split())


def deduplicate(hits: list[tuple[str, Paper]]) -> tuple[list[Candidate], int]:
    """Merge hits of the same work (same canonical id, or near-identical title and same year)."""
    from rapidfuzz import fuzz  # on first use, not with the handler (bench/cold_start.py)

    by_id: dict[str, Candidate] = {}
    by_title: dict[str, Candidate] = {}
    duplicates = 0
    for query_id, paper in hits:
        title_key = _normalised_title(paper.title)
        existing = by_id.get(paper.canonical_id)
        if existing is None and title_key in by_title:
            known = by_title[title_key]
            existing = None if _distinct_identifiers(known.paper, paper) else known
        if existing is None and title_key:
            for known_title, candidate in by_title.items():
                if (
                    candidate.paper.year == paper.year
                    and abs(len(known_title) - len(title_key)) < 12
                    and not _distinct_identifiers(candidate.paper, paper)
                    and fuzz.ratio(known_title, title_key) >= 95
                ):
                    existing = candidate
                    break
        if existing is not None:
            duplicates += 1
            _merge(existing, paper)
            if query_id not in existing.query_ids:
                existing.query_ids.append(query_id)
            by_id.setdefault(paper.canonical_id, existing)
            continue
        candidate = Candidate(
            paper=paper.model_copy(deep=True),
            source_id=source_id_for(paper.canonical_id),
            query_ids=[query_id],
        )
        by_id[paper.canonical_id] = candidate
        if title_key:
            by_title[title_key] = candidate
    unique: dict[str, Candidate] = {}
    for candidate in by_id.values():
        unique.setdefault(candidate.source_id, candidate)
    return list(unique.values()), duplicates


def _distinct_identifiers(first: Paper, second: Paper) -> bool:
    """Two works whose DOIs or arXiv ids differ are different works, however alike their titles."""
    return bool(
        (first.doi and second.doi and first.doi != second.doi)
        or (first.arxiv_id and second.arxiv_id and first.arxiv_id != second.arxiv_id)
    )


def _merge(into: Candidate, other: Paper) -> None:
    paper = into.paper
    paper.found_by = sorted({*paper.found_by, *other.found_by, paper.source, other.source})
    paper.relevance_score = max(paper.relevance_score, other.relevance_score)
    paper.quality_score = max(paper.quality_score, other.quality_score)
    if other.citations is not None:
        paper.citations = max(paper.citations or 0, other.citations)
    for attribute in ("abstract", "doi", "arxiv_id", "pdf_url", "venue", "year"):
        if getattr(paper, attribute) in (None, "") and getattr(other, attribute) not in (None, ""):
            setattr(paper, attribute, getattr(other, attribute))
    if not paper.authors and other.authors:
        paper.authors = list(other.authors)
    if other.open_access:
        paper.open_access = True


def document_text(paper: Paper) -> str:
    """What relevance is judged on: the title and the abstract."""
    return f"{paper.title}. {paper.abstract or ''}".strip()


def _citation_impact(paper: Paper, current_year: int) -> tuple[float, str]:
    if paper.citations is None:
        return UNKNOWN_SCORE, "citation count unknown: neutral score"
    age = max(1, current_year - (paper.year or current_year) + 1)
    per_year = paper.citations / age
    impact = min(1.0, math.log1p(per_year) / math.log1p(CITATIONS_PER_YEAR_FOR_FULL_SCORE))
    return impact, (
        f"{paper.citations} citations over {age} year(s) ({per_year:.1f}/year; "
        f"{CITATIONS_PER_YEAR_FOR_FULL_SCORE}/year scores 1)"
    )


def _recency(paper: Paper, policies: Policies, current_year: int) -> tuple[float, str]:
    if paper.year is None:
        return UNKNOWN_SCORE, "publication year unknown: neutral score"
    window = max(1, policies.year_end - policies.year_start)
    recency = max(0.0, min(1.0, 1 - (current_year - paper.year) / (window + 1)))
    return recency, f"published {paper.year}; window {policies.year_start}-{policies.year_end}"


def _methodology(paper: Paper) -> tuple[float, str]:
    if not paper.abstract:
        return UNKNOWN_SCORE, "no abstract: neutral score"
    signals = sorted({m.group(0).lower() for m in _METHOD_SIGNALS.finditer(paper.abstract)})
    found = f"method signals in the abstract: {', '.join(signals[:5])}" if signals else ""
    return min(1.0, 0.2 + 0.2 * len(signals)), found or "no method signals in the abstract"


def _accessibility(paper: Paper) -> tuple[float, str]:
    if paper.pdf_url or paper.arxiv_id or paper.open_access:
        return 1.0, "open access or a PDF link"
    if paper.doi:
        return 0.6, "DOI only: full text through open-access locations if any"
    return 0.4, "no DOI and no PDF link"


def score(
    candidate: Candidate, plan: ResearchPlan[JobSettings], current_year: int, relevance: Relevance
) -> None:
    paper = candidate.paper
    criteria = {
        "citation_impact": _citation_impact(paper, current_year),
        "recency": _recency(paper, plan.settings.policies, current_year),
        "methodology": _methodology(paper),
        "accessibility": _accessibility(paper),
    }
    scores = {"relevance": relevance.probability} | {name: value for name, (value, _) in criteria.items()}
    candidate.scores = {name: round(value, 3) for name, value in scores.items()}
    candidate.total_score = round(sum(scores.values()), 3)
    candidate.explanations = {"relevance": relevance.explain()} | {
        name: explanation for name, (_, explanation) in criteria.items()
    }
    candidate.goal_relevance = relevance.goal_probability
    # Ranking: relevance counts as the mean of the best-aspect and whole-goal probabilities, so among
    # papers that pass, one that answers the whole goal comes before one that answers a single concept.
    ranked = {**scores, "relevance": relevance.ranking_score}
    weights = plan.settings.policies.weights
    candidate.weighted_score = round(
        sum(w * v for w, v in zip(weights, ranked.values(), strict=True)) / sum(weights) * 5, 4
    )


def _policy_rejection(candidate: Candidate, policies: Policies) -> str | None:
    paper = candidate.paper
    if candidate.scores["relevance"] < policies.relevance_threshold:
        return "below_relevance_threshold"
    if paper.year is not None and not policies.year_start <= paper.year <= policies.year_end:
        return "outside_temporal_boundary"
    if paper.citations is not None and paper.citations < policies.min_citations:
        return "below_citation_threshold"
    if (
        policies.min_quality_score is not None
        and paper.quality_score
        and (paper.quality_score < policies.min_quality_score)
    ):
        return "below_quality_threshold"
    if not paper.url:
        return "not_accessible"
    return None


def _select_diverse(passed: list[Candidate], target: int, policies: Policies) -> list[Candidate]:
    """Best first, at most `max_share_per_venue` of the target from one venue, connectors interleaved."""
    if not policies.diversity_required:
        return passed[:target]
    venue_cap = max(2, math.ceil(policies.max_share_per_venue * target))
    per_venue: Counter[str] = Counter()
    selected: list[Candidate] = []
    held_back: list[Candidate] = []
    for candidate in passed:
        venue = (candidate.paper.venue or "").strip().lower()
        if venue and per_venue[venue] >= venue_cap:
            candidate.rejection = "diversity_cap"
            held_back.append(candidate)
            continue
        per_venue[venue] += 1
        selected.append(candidate)
    # Ensure at least `min_connectors` databases are represented when the candidates allow it.
    chosen = selected[:target]
    connectors = {c.paper.source for c in chosen}
    if len(connectors) < policies.min_connectors:
        for candidate in selected[target:]:
            if candidate.paper.source not in connectors and chosen:
                chosen[-1] = candidate
                connectors = {c.paper.source for c in chosen}
                if len(connectors) >= policies.min_connectors:
                    break
    for candidate in selected:
        if candidate not in chosen and candidate.rejection is None:
            candidate.rejection = "beyond_depth_limit"
    return chosen


def screen(
    hits: list[tuple[str, Paper]],
    plan: ResearchPlan[JobSettings],
    *,
    current_year: int,
    allow_refinement: bool,
    scorer: RelevanceScorer,
) -> ScreeningResult:
    candidates, duplicates = deduplicate(hits)
    relevances = scorer.score(plan.goal, plan.aspects, [document_text(c.paper) for c in candidates])
    for candidate, relevance in zip(candidates, relevances, strict=True):
        score(candidate, plan, current_year, relevance)
        candidate.rejection = _policy_rejection(candidate, plan.settings.policies)
    passed = sorted(
        (c for c in candidates if c.rejection is None),
        key=lambda c: (-c.weighted_score, -c.scores["relevance"], c.source_id),
    )
    selected = _select_diverse(passed, plan.settings.target_sources, plan.settings.policies)
    counts = Counter(c.rejection for c in candidates if c.rejection)
    return ScreeningResult(
        candidates=candidates,
        selected=selected,
        discovered=len(hits),
        duplicates=duplicates,
        passed=len(passed),
        rejection_counts=dict(sorted(counts.items())),
        needs_refinement=allow_refinement and len(passed) < plan.settings.target_sources,
    )
