"""Plan: decompose a goal into sub-questions and connector-specific queries, and map scope to policies.

Deterministic and free of I/O: the same goal and scope always give the same plan, so the API can show
the plan in its immediate answer and the Plan step can rebuild it for a scheduled job.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from functions.orchestrate.models import ScopeParameters

CONNECTORS: tuple[str, ...] = ("arxiv", "semantic_scholar", "openalex", "crossref")

_STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "within",
        "across",
        "toward",
        "towards",
        "using",
        "use",
        "used",
        "via",
        "among",
        "per",
        "versus",
        "vs",
        "do",
        "does",
    ]
)
# Words that frame a research question without naming its topic.
_FRAMING = frozenset(
    [
        "recent",
        "advances",
        "advance",
        "advancement",
        "advancements",
        "latest",
        "new",
        "current",
        "currently",
        "state",
        "art",
        "trends",
        "trend",
        "developments",
        "development",
        "progress",
        "overview",
        "review",
        "reviews",
        "survey",
        "surveys",
        "literature",
        "research",
        "studies",
        "study",
        "work",
        "works",
        "paper",
        "papers",
        "approaches",
        "approach",
        "methods",
        "method",
        "techniques",
        "technique",
        "field",
        "fields",
        "area",
        "areas",
        "role",
        "impact",
        "effects",
        "effect",
        "evidence",
        "known",
        "findings",
        "finding",
        "improve",
        "improvements",
        "improvement",
        "emerging",
        "future",
        "directions",
        "direction",
        "challenges",
        "challenge",
        "affect",
        "affects",
        "affected",
        "influence",
        "influences",
        "influenced",
        "relate",
        "relates",
        "cause",
        "causes",
        "reduce",
        "reduces",
        "increase",
        "increases",
        "predict",
        "predicts",
        "associated",
        "association",
        "compare",
    ]
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9\-+]*[A-Za-z0-9+]|[A-Za-z]")
_COMPARISON = re.compile(r"\b(vs\.?|versus|compare[sd]?|comparison|compared)\b", re.IGNORECASE)

IMPACT_POLICIES: dict[str, dict[str, Any]] = {
    "cutting_edge": {"min_citations": 0, "min_quality_score": None, "weights": (1.0, 0.5, 1.6, 1.0, 1.0)},
    "high_impact": {"min_citations": 10, "min_quality_score": 0.4, "weights": (1.0, 1.6, 0.8, 1.0, 1.0)},
    "established": {"min_citations": 50, "min_quality_score": 0.5, "weights": (1.0, 1.8, 0.5, 1.2, 1.0)},
    "baseline": {"min_citations": 0, "min_quality_score": None, "weights": (1.0, 1.0, 1.0, 1.0, 1.0)},
}
QUERIES_BY_DEPTH = {"rapid": 3, "focused": 4, "comprehensive": 5, "exhaustive": 5}
# Rough per-call figures used only for the estimate shown to the caller.
_SEARCH_SECONDS, _EXTRACT_SECONDS, _OVERHEAD_SECONDS = 1.5, 6.0, 10.0


@dataclass(frozen=True)
class PlannedQuery:
    query_id: str
    connector: str
    query: str  # what the search service receives (plain terms; each connector renders its own syntax)
    upstream_query: str  # the request in the connector's own syntax, as sent upstream
    terms: list[str]  # the phrases behind it (for reports and refinement)
    year_start: int | None
    year_end: int | None
    max_results: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Policies:
    year_start: int
    year_end: int
    impact_level: str
    min_citations: int
    min_quality_score: float | None
    relevance_threshold: float
    diversity_required: bool
    max_share_per_venue: float
    min_connectors: int
    weights: tuple[float, float, float, float, float]  # relevance, citations, recency, method, access

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "weights": list(self.weights)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Policies:
        return cls(**{**data, "weights": tuple(data["weights"])})


@dataclass(frozen=True)
class ResearchPlan:
    goal: str
    topic: str
    key_phrases: list[str]
    sub_questions: list[str]
    queries: list[PlannedQuery]
    policies: Policies
    target_sources: int
    focus_areas: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "policies": self.policies.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResearchPlan:
        return cls(
            goal=data["goal"],
            topic=data["topic"],
            key_phrases=list(data["key_phrases"]),
            sub_questions=list(data["sub_questions"]),
            queries=[PlannedQuery(**query) for query in data["queries"]],
            policies=Policies.from_dict(data["policies"]),
            target_sources=int(data["target_sources"]),
            focus_areas=list(data["focus_areas"]),
        )


def content_tokens(text: str) -> list[str]:
    """Lower-cased words of `text` that carry topic (no stop or framing words)."""
    return [
        token
        for token in (match.group(0).lower() for match in _TOKEN.finditer(text))
        if token not in _STOPWORDS and token not in _FRAMING and len(token) > 1
    ]


def key_phrases(goal: str) -> list[str]:
    """Runs of consecutive topic words, longest first: 'transformer architectures', 'mobile deployment'."""
    phrases: list[str] = []
    current: list[str] = []
    for match in _TOKEN.finditer(goal):
        token = match.group(0).lower()
        if token in _STOPWORDS or token in _FRAMING or len(token) < 2:
            if current:
                phrases.append(" ".join(current))
            current = []
        else:
            current.append(token)
    if current:
        phrases.append(" ".join(current))
    unique = list(dict.fromkeys(phrase for phrase in phrases if phrase))
    if not unique:  # a goal made only of framing words: fall back to its longest words
        words = sorted({m.group(0).lower() for m in _TOKEN.finditer(goal)}, key=len, reverse=True)
        unique = words[:3]
    first = unique[0]
    rest = sorted(unique[1:], key=lambda phrase: -len(phrase.split()))
    return [first, *rest]


Renderer = Callable[[str, str, int | None, int | None, int], str]


def connector_syntax(
    connector: str, query: str, year_start: int | None, year_end: int | None, limit: int
) -> str:
    """Fallback rendering of a query in a connector's syntax; the deployed wiring renders the real
    upstream request through the search connectors (`functions.orchestrate.wiring.upstream_query`)."""
    words = query.split()
    years = f"{year_start or ''}-{year_end or ''}"
    if connector == "arxiv":
        return " AND ".join(f"all:{word}" for word in words) + f" (max_results={limit})"
    return f"{query} (years {years}, limit {limit})"


def _query_variants(phrases: list[str], count: int, comparison: bool) -> list[list[str]]:
    primary, secondary = phrases[0], phrases[1:]
    variants: list[list[str]] = [[primary, *secondary[:2]]]
    if secondary:
        variants.append([primary])
    variants.append([primary, "evaluation"])
    variants.append([primary, "comparison"] if comparison else [primary, "limitations"])
    variants.append([primary, "survey"])
    for extra in secondary[2:]:
        variants.append([primary, extra])
    unique: list[list[str]] = []
    for variant in variants:
        if variant not in unique:
            unique.append(variant)
    return unique[:count]


def _planned(
    query_id: str, connector: str, phrases: list[str], policies: Policies, limit: int, render: Renderer
) -> PlannedQuery:
    text = " ".join(phrases)
    return PlannedQuery(
        query_id=query_id,
        connector=connector,
        query=text,
        upstream_query=render(connector, text, policies.year_start, policies.year_end, limit),
        terms=phrases,
        year_start=policies.year_start,
        year_end=policies.year_end,
        max_results=limit,
    )


def policies_for(scope: ScopeParameters, now: datetime, relevance_threshold: float) -> Policies:
    impact = IMPACT_POLICIES[scope.quality_threshold.impact_level]
    window = scope.temporal_boundary.publication_window_years
    return Policies(
        year_start=now.year - window,
        year_end=now.year,
        impact_level=scope.quality_threshold.impact_level,
        min_citations=int(impact["min_citations"]),
        min_quality_score=impact["min_quality_score"],
        relevance_threshold=relevance_threshold,
        diversity_required=scope.source_diversity_requirement,
        max_share_per_venue=0.34 if scope.source_diversity_requirement else 1.0,
        min_connectors=2 if scope.source_diversity_requirement else 1,
        weights=tuple(impact["weights"]),
    )


def build_plan(
    goal: str,
    scope: ScopeParameters,
    *,
    now: datetime | None = None,
    relevance_threshold: float = 0.6,
    connectors: tuple[str, ...] = CONNECTORS,
    render: Renderer = connector_syntax,
) -> ResearchPlan:
    now = now or datetime.now(UTC)
    phrases = key_phrases(goal)
    topic = phrases[0]
    comparison = bool(_COMPARISON.search(goal))
    policies = policies_for(scope, now, relevance_threshold)
    per_query = max(10, min(50, scope.target_sources))
    variants = _query_variants(phrases, QUERIES_BY_DEPTH[scope.discovery_depth], comparison)
    queries = [
        _planned(f"q{index + 1}-{connector}", connector, variant, policies, per_query, render)
        for index, variant in enumerate(variants)
        for connector in connectors
    ]
    window = f"{policies.year_start}-{policies.year_end}"
    sub_questions = [
        f"Which approaches to {topic} have been published in {window}?",
        f"What results and evaluations do these studies report for {topic}?",
        f"Which methodologies do studies of {topic} use?",
        (
            f"How do the compared alternatives in {topic} differ in their reported outcomes?"
            if comparison
            else f"What limitations and open problems remain for {topic}?"
        ),
    ]
    for phrase in phrases[1:3]:
        sub_questions.append(f"How does {phrase} relate to {topic}?")
    focus_areas = ["methodology", "results", "limitations"] + (["comparison"] if comparison else [])
    return ResearchPlan(
        goal=goal,
        topic=topic,
        key_phrases=phrases,
        sub_questions=sub_questions,
        queries=queries,
        policies=policies,
        target_sources=scope.target_sources,
        focus_areas=focus_areas,
    )


def refined_queries(
    plan: ResearchPlan,
    accepted_titles: list[str],
    *,
    connectors: tuple[str, ...] = CONNECTORS,
    render: Renderer = connector_syntax,
) -> list[PlannedQuery]:
    """One round of refinement: broaden to single key terms plus the commonest topic word of accepted hits."""
    vocabulary: dict[str, int] = {}
    known = {token for phrase in plan.key_phrases for token in phrase.split()}
    for title in accepted_titles:
        for token in set(content_tokens(title)):
            if token not in known:
                vocabulary[token] = vocabulary.get(token, 0) + 1
    expansions = [word for word, _ in sorted(vocabulary.items(), key=lambda kv: (-kv[1], kv[0]))[:1]]
    primary_words = plan.key_phrases[0].split()
    variants: list[list[str]] = []
    if len(primary_words) > 1:
        variants.append([primary_words[-1], *primary_words[:-1]])  # same words without the phrase quotes
    else:
        variants.append([primary_words[0], "review"])
    variants.append(
        [plan.key_phrases[0], *expansions] if expansions else [plan.key_phrases[0], "applications"]
    )
    policies = plan.policies
    limit = max(q.max_results for q in plan.queries)
    return [
        _planned(f"r{index + 1}-{connector}", connector, variant, policies, limit, render)
        for index, variant in enumerate(variants[:2])
        for connector in connectors
    ]


def estimated_duration_minutes(plan: ResearchPlan, extract_concurrency: int, search_concurrency: int) -> int:
    search = math.ceil(len(plan.queries) / max(1, search_concurrency)) * _SEARCH_SECONDS
    extract = math.ceil(plan.target_sources / max(1, extract_concurrency)) * _EXTRACT_SECONDS
    return max(1, math.ceil((search + extract + _OVERHEAD_SECONDS) / 60))


def describe(
    plan: ResearchPlan, *, extract_concurrency: int, search_concurrency: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The API's `autonomous_analysis` and `execution_plan` for this plan."""
    policies = plan.policies
    window = f"{policies.year_start}-{policies.year_end}"
    connectors = sorted({query.connector for query in plan.queries})
    distinct_queries = len({tuple(query.terms) for query in plan.queries})
    rules = [
        f"Year filter: {window}",
        f"Relevance threshold: {policies.relevance_threshold:.1f}",
    ]
    if policies.min_citations:
        rules.append(f"Min citations: {policies.min_citations}")
    if policies.min_quality_score is not None:
        rules.append(f"Min quality score: {policies.min_quality_score:.1f}")
    policies_checked = ["SourceQualityPolicy", "TemporalBoundaryPolicy"]
    if policies.diversity_required:
        rules.append(
            f"At most {round(policies.max_share_per_venue * 100)}% of sources from one venue; "
            f"at least {policies.min_connectors} databases represented"
        )
        policies_checked.append("SourceDiversityPolicy")
    analysis = {
        "goal_decomposition": {
            "primary_objectives": [
                f"Find {policies.impact_level.replace('_', ' ')} publications on {plan.topic} from {window}",
                f"Extract findings, methods and limitations from up to {plan.target_sources} sources",
                f"Synthesise cited themes and gaps for: {plan.goal}",
            ],
            "sub_goals": plan.sub_questions,
        },
        "execution_strategy": {
            "search_approach": (
                f"{distinct_queries} query variants in each database's syntax across {len(connectors)} "
                f"databases ({', '.join(connectors)}), one refinement round if too few sources pass"
            ),
            "search_queries": [
                {"connector": q.connector, "query": q.query, "upstream_query": q.upstream_query}
                for q in plan.queries
            ],
            "validation_rules": rules,
        },
        "governance_applied": {"policies_checked": policies_checked, "policies": policies.to_dict()},
    }
    execution_plan = {
        "phases": [
            {
                "phase": "Autonomous Exploration",
                "description": f"Execute {len(plan.queries)} search queries ({distinct_queries} variants x "
                f"{len(connectors)} databases) to discover relevant sources",
            },
            {
                "phase": "Intelligent Validation",
                "description": "De-duplicate and score sources on relevance, citation impact, recency, "
                f"methodology and accessibility; apply {', '.join(policies_checked)}",
            },
            {
                "phase": "Deep Extraction",
                "description": f"Extract structured data from top {plan.target_sources} sources "
                f"({extract_concurrency} in parallel)",
            },
            {
                "phase": "Meta-Analysis & Synthesis",
                "description": "Cluster findings into themes, cite page-located evidence, verify every claim",
            },
        ],
        "estimated_sources": plan.target_sources,
        "estimated_duration_minutes": estimated_duration_minutes(
            plan, extract_concurrency, search_concurrency
        ),
    }
    return analysis, execution_plan
