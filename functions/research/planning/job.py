"""Plan: decompose a goal into sub-questions and connector-specific queries, and map scope to policies.

Deterministic and free of I/O: the same goal and scope always give the same plan, so the API can show
the plan in its immediate answer and the Plan step can rebuild it for a scheduled job.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import combinations
from typing import Any

from functions.common.text import STOPWORDS, listed, terms
from functions.research.planning.facets import Facet, decompose, facet_questions
from functions.research.planning.plan import (
    DEFAULT_MIN_SOURCES,
    JobSettings,
    PlannedQuery,
    Policies,
    ResearchPlan,
    job_aspects,
)
from functions.research.planning.request import ScopeParameters
from functions.research.planning.vocabulary import FRAMING
from functions.search.sources import Matching, engine_matching, planned_connectors

CONNECTORS: tuple[str, ...] = planned_connectors()

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9\-+]*[A-Za-z0-9+]|[A-Za-z]")
_COMPARISON = re.compile(r"\b(vs\.?|versus|compare[sd]?|comparison|compared)\b", re.IGNORECASE)

IMPACT_POLICIES: dict[str, dict[str, Any]] = {
    "cutting_edge": {"min_citations": 0, "min_quality_score": None, "weights": (1.0, 0.5, 1.6, 1.0, 1.0)},
    "high_impact": {"min_citations": 10, "min_quality_score": 0.4, "weights": (1.0, 1.6, 0.8, 1.0, 1.0)},
    "established": {"min_citations": 50, "min_quality_score": 0.5, "weights": (1.0, 1.8, 0.5, 1.2, 1.0)},
    "baseline": {"min_citations": 0, "min_quality_score": None, "weights": (1.0, 1.0, 1.0, 1.0, 1.0)},
}
# The most distinct searches a connector is sent by depth (the whole goal, each concept, then pairs);
# how many of them are planned is what the provider's rate allows in the job's search time.
QUERIES_BY_DEPTH = {"rapid": 3, "focused": 4, "comprehensive": 6, "exhaustive": 8}
# The time a job may spend on its searches, by depth (over one or more Search iterations).
SEARCH_SECONDS_BY_DEPTH = {"rapid": 40.0, "focused": 60.0, "comprehensive": 120.0, "exhaustive": 180.0}
# How each engine matches a query (`functions/search/sources.py`), which decides what one request of it
# can find:
#   "boolean": fielded boolean syntax ranked by relevance (arXiv): one query ORs every concept, and the
#       papers that match most concepts rank first;
#   "ranked_any": any word may match, ranked by how many do (Crossref's bibliographic query): the whole
#       goal in one query does what a query per concept would;
#   "all_words": every word must match (Semantic Scholar's and OpenAlex's relevance search, for short
#       queries): a long goal finds little, so each concept is searched alone, the whole goal only
#       when it is short.
ENGINE_MATCHING: dict[str, Matching] = engine_matching()
BOOLEAN_CONNECTORS = frozenset(name for name, kind in ENGINE_MATCHING.items() if kind == "boolean")
# The most queries one job sends an engine, by depth: one request already covers every concept where the
# engine ORs them; an all-words engine needs one per concept.
QUERIES_PER_ENGINE = {
    "boolean": {"rapid": 1, "focused": 2, "comprehensive": 3, "exhaustive": 4},
    "ranked_any": {"rapid": 1, "focused": 2, "comprehensive": 3, "exhaustive": 4},
    "all_words": {"rapid": 3, "focused": 4, "comprehensive": 6, "exhaustive": 8},
}
SHORT_GOAL_WORDS = 4  # an all-words engine is sent the whole goal too when it is this short
# Below this share of a daily allowance left, a connector is sent only the whole goal.
LOW_ALLOWANCE_SHARE = 0.1
# Relevance is a calibrated probability (functions/research/retrieval/relevance.py): 0.5 is its decision boundary.
DEFAULT_RELEVANCE_THRESHOLD = 0.5
MIN_RESULTS_PER_QUERY, MAX_RESULTS_PER_QUERY = 10, 50
MAX_NATURAL_WORDS = 8  # engines that rank natural text do badly with long keyword lists
HEAD_WORDS = 2
MAX_REFINED_UNITS = 3
MAX_VENUE_SHARE = 0.34
# Rough per-call figures used only for the estimate shown to the caller.
_SEARCH_SECONDS, _EXTRACT_SECONDS, _OVERHEAD_SECONDS = 1.5, 6.0, 10.0


@dataclass(frozen=True)
class ConnectorBudget:
    """What one provider allows: seconds between two requests as they leave, and a daily allowance of
    searches where it has one (searches left today, of how many)."""

    spacing_seconds: float
    searches_left_today: int | None = None
    searches_per_day: int | None = None


@dataclass(frozen=True)
class SearchBudget:
    """The planner's inputs from the upstreams: each connector's rate and daily allowance, the job's
    search time by depth, and how many jobs are expected to share a provider at any moment."""

    connectors: Mapping[str, ConnectorBudget] = field(default_factory=dict)
    seconds_by_depth: Mapping[str, float] = field(default_factory=lambda: dict(SEARCH_SECONDS_BY_DEPTH))
    sharing_jobs: int = 4

    def turns(self, connector: str, depth: str) -> int:
        """Requests of one job to this connector that fit in the job's search time at its share of the
        provider's rate (at least one: the most valuable query is always planned)."""
        spacing = self.connectors.get(connector, ConnectorBudget(0.0)).spacing_seconds
        if spacing <= 0:
            return QUERIES_BY_DEPTH[depth] * 4
        seconds = self.seconds_by_depth.get(depth, SEARCH_SECONDS_BY_DEPTH["rapid"])
        return max(1, math.floor(seconds / (spacing * max(1, self.sharing_jobs))))

    def allowance_low(self, connector: str) -> bool:
        budget = self.connectors.get(connector)
        if budget is None or budget.searches_left_today is None or not budget.searches_per_day:
            return False
        return budget.searches_left_today < LOW_ALLOWANCE_SHARE * budget.searches_per_day


def default_search_budget() -> SearchBudget:
    """The published default intervals (arXiv 3 s, Semantic Scholar 1 s, OpenAlex 0.1 s, Crossref 0.2 s);
    the deployed wiring builds the budget from the search settings and today's allowances."""
    spacing = {"arxiv": 3.05, "semantic_scholar": 1.05, "openalex": 0.15, "crossref": 0.25}
    return SearchBudget({name: ConnectorBudget(value) for name, value in spacing.items()})


_NOT_TOPIC = STOPWORDS | FRAMING


def content_tokens(text: str) -> list[str]:
    """Folded words of `text` that carry topic: no stop or framing words, none that starts with a digit."""
    return terms(text, stopwords=_NOT_TOPIC, letter_first=True)


def facets_of(goal: str) -> list[Facet]:
    """The goal's concepts; for a goal made only of framing words, its longest words."""
    facets = decompose(goal)
    if facets:
        return facets
    words = sorted({m.group(0).lower() for m in _TOKEN.finditer(goal)}, key=len, reverse=True)
    return [Facet(word) for word in words[:3]]


def key_phrases(goal: str) -> list[str]:
    """The goal's concepts as phrases ('transformer architectures', 'long documents')."""
    return [facet.phrase for facet in facets_of(goal)]


@dataclass(frozen=True)
class QueryWording:
    """What one planned query asks a connector for, before it is put in the connector's syntax."""

    query: str
    concepts: list[list[str]]
    year_start: int | None
    year_end: int | None
    limit: int


Renderer = Callable[[str, QueryWording], str]


def connector_syntax(connector: str, wording: QueryWording) -> str:
    """Fallback rendering of a query in a connector's syntax; the deployed wiring renders the real
    upstream request through the search connectors (`functions.orchestrate.wiring.upstream_query`)."""
    years = f"{wording.year_start or ''}-{wording.year_end or ''}"
    if connector == "arxiv" and wording.concepts:
        groups = [" OR ".join(f'all:"{phrase}"' for phrase in group) for group in wording.concepts]
        return " AND ".join(f"({group})" for group in groups) + f" (max_results={wording.limit})"
    return f"{wording.query} (years {years}, limit {wording.limit})"


def boolean_groups(facets: list[Facet]) -> list[list[str]]:
    """Concept groups for a boolean engine: one per facet (its phrase OR its synonyms); a facet joined
    by `of` ('factuality of large language models') is two groups, since its words rarely stand in
    that exact order in a paper."""
    groups: list[list[str]] = []
    for facet in facets:
        parts = [part.strip() for part in facet.phrase.split(" of ") if part.strip()]
        if len(parts) > 1:
            groups.extend([part] for part in parts)
        else:
            groups.append(facet.alternatives)
    return groups


def natural_phrase(facets: list[Facet], max_words: int = MAX_NATURAL_WORDS) -> str:
    """A short phrase for engines that rank natural text: the concepts' words, at most `max_words`."""
    words: list[str] = []
    for facet in facets:
        for word in facet.phrase.replace(" of ", " ").split():
            if word not in words:
                words.append(word)
    return " ".join(words[:max_words])


def query_units(facets: list[Facet], count: int) -> list[list[Facet]]:
    """What to search for: the whole goal (all its concepts together), each concept alone, then pairs
    of concepts when the depth allows; a paper that answers one concept well can still be found."""
    units: list[list[Facet]] = [facets]
    if len(facets) > 1:
        units += [[facet] for facet in facets]
    if len(facets) > 2:
        units += [list(pair) for pair in combinations(facets, 2)]
    return units[: max(count, 1 + len(facets) if len(facets) > 1 else 1)]


def any_concept_group(facets: list[Facet]) -> list[list[str]]:
    """One concept group that ORs every concept (its phrase, synonyms, and the parts of an `of` phrase):
    for a boolean engine that ranks by relevance, one query that finds what a query per concept would."""
    alternatives: list[str] = []
    for facet in facets:
        parts = [part.strip() for part in facet.phrase.split(" of ") if part.strip()]
        alternatives.extend(parts if len(parts) > 1 else facet.alternatives)
    return [list(dict.fromkeys(alternatives))]


def _planned(
    query_id: str,
    connector: str,
    unit: list[Facet],
    policies: Policies,
    limit: int,
    render: Renderer,
    *,
    priority: int = 0,
    any_concept: bool = False,
) -> PlannedQuery:
    text = natural_phrase(unit)
    concepts = any_concept_group(unit) if any_concept else boolean_groups(unit)
    return PlannedQuery(
        query_id=query_id,
        connector=connector,
        query=text,
        upstream_query=render(
            connector, QueryWording(text, concepts, policies.year_start, policies.year_end, limit)
        ),
        terms=[facet.phrase for facet in unit],
        year_start=policies.year_start,
        year_end=policies.year_end,
        max_results=limit,
        concepts=concepts,
        priority=priority,
    )


def engine_units(connector: str, units: list[list[Facet]]) -> list[tuple[list[Facet], bool]]:
    """What to send this engine, most valuable first, as (concepts, OR them in one query)."""
    whole, rest = units[0], units[1:]
    matching = ENGINE_MATCHING.get(connector, "all_words")
    if len(whole) == 1:
        return [(unit, False) for unit in units]
    if matching == "boolean":
        return [(whole, True), *((unit, False) for unit in rest)]
    if matching == "ranked_any":
        return [(unit, False) for unit in units]
    short = len(natural_phrase(whole).split()) <= SHORT_GOAL_WORDS
    return [(whole, False)] * short + [(unit, False) for unit in rest] + [(whole, False)] * (not short)


def connector_queries(
    connector: str,
    units: list[list[Facet]],
    policies: Policies,
    per_query: int,
    render: Renderer,
    *,
    turns: int,
    depth: str = "rapid",
    prefix: str = "q",
) -> list[PlannedQuery]:
    """This connector's queries, most valuable first: as many as its turns allow and its way of matching
    needs. A query that covers every concept at once asks for more results."""
    matching = ENGINE_MATCHING.get(connector, "all_words")
    wanted = min(turns, QUERIES_PER_ENGINE[matching].get(depth, QUERIES_PER_ENGINE[matching]["rapid"]))
    planned: list[PlannedQuery] = []
    for rank, (unit, any_concept) in enumerate(engine_units(connector, units)[: max(1, wanted)]):
        covers_all = len(unit) > 1 and (any_concept or matching == "ranked_any")
        limit = min(MAX_RESULTS_PER_QUERY, per_query * len(unit)) if covers_all else per_query
        planned.append(
            _planned(
                f"{prefix}{rank + 1}-{connector}",
                connector,
                unit,
                policies,
                limit,
                render,
                priority=rank,
                any_concept=any_concept,
            )
        )
    return planned


def policies_for(
    scope: ScopeParameters, now: datetime, relevance_threshold: float, min_sources: int = DEFAULT_MIN_SOURCES
) -> Policies:
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
        max_share_per_venue=MAX_VENUE_SHARE if scope.source_diversity_requirement else 1.0,
        min_connectors=2 if scope.source_diversity_requirement else 1,
        weights=tuple(impact["weights"]),
        min_sources=scope.min_sources or min_sources,
    )


def _topic(facets: list[Facet]) -> str:
    return listed([facet.phrase for facet in facets[:3]])


def build_plan(
    goal: str,
    scope: ScopeParameters,
    *,
    now: datetime | None = None,
    relevance_threshold: float = DEFAULT_RELEVANCE_THRESHOLD,
    min_sources: int = DEFAULT_MIN_SOURCES,
    connectors: tuple[str, ...] = CONNECTORS,
    render: Renderer = connector_syntax,
    budget: SearchBudget | None = None,
) -> ResearchPlan[JobSettings]:
    now = now or datetime.now(UTC)
    facets = facets_of(goal)
    topic = _topic(facets)
    comparison = bool(_COMPARISON.search(goal))
    policies = policies_for(scope, now, relevance_threshold, min_sources)
    queries, notes = _budgeted_queries(
        connectors,
        query_units(facets, QUERIES_BY_DEPTH[scope.discovery_depth]),
        policies,
        scope,
        render,
        budget or default_search_budget(),
    )
    focus_areas = ["methodology", "results", "limitations"] + (["comparison"] if comparison else [])
    return ResearchPlan(
        goal=goal,
        facets=facets,
        sub_questions=_sub_questions(goal, facets, topic, policies, comparison),
        aspects=job_aspects(goal, facets),
        settings=JobSettings(
            topic=topic,
            queries=queries,
            policies=policies,
            target_sources=scope.target_sources,
            focus_areas=focus_areas,
            budget_notes=notes,
        ),
    )


def _budgeted_queries(
    connectors: tuple[str, ...],
    units: list[list[Facet]],
    policies: Policies,
    scope: ScopeParameters,
    render: Renderer,
    budget: SearchBudget,
) -> tuple[list[PlannedQuery], list[str]]:
    """Every connector's queries as its rate and allowance permit, with a note where they cut the plan."""
    per_query = max(MIN_RESULTS_PER_QUERY, min(MAX_RESULTS_PER_QUERY, scope.target_sources))
    depth = scope.discovery_depth
    queries: list[PlannedQuery] = []
    notes: list[str] = []
    for connector in connectors:
        turns = budget.turns(connector, depth)
        if budget.allowance_low(connector):
            allowance = budget.connectors[connector]
            notes.append(
                f"{connector}: {allowance.searches_left_today} of its {allowance.searches_per_day} daily "
                "searches left, so it is sent only its most valuable query"
            )
            turns = 1
        planned = connector_queries(connector, units, policies, per_query, render, turns=turns, depth=depth)
        matching = ENGINE_MATCHING.get(connector, "all_words")
        needed = min(len(units), QUERIES_PER_ENGINE[matching][depth])
        if len(planned) < needed:
            notes.append(
                f"{connector}: {len(planned)} of {needed} queries fit its rate in the "
                f"{budget.seconds_by_depth.get(depth, 0):g} s search time of a {depth} job"
            )
        queries.extend(planned)
    return queries, notes


def _sub_questions(
    goal: str, facets: list[Facet], topic: str, policies: Policies, comparison: bool
) -> list[str]:
    window = f"{policies.year_start}-{policies.year_end}"
    sub_questions = [
        *facet_questions(goal, facets),
        f"Which approaches to {topic} have been published in {window}?",
        f"What results and evaluations do these studies report for {topic}?",
        (
            f"How do the compared alternatives in {topic} differ in their reported outcomes?"
            if comparison
            else f"What limitations and open problems remain for {topic}?"
        ),
    ]
    return list(dict.fromkeys(sub_questions))


def concept_head(facet: Facet) -> Facet | None:
    """The head of a long concept, its last two words ('scalar field dark matter' -> 'dark matter'):
    English puts the noun a phrase is about at its end, and papers vary the modifiers before it."""
    words = facet.phrase.split(" of ")[0].split()
    return Facet(" ".join(words[-HEAD_WORDS:])) if len(words) > HEAD_WORDS else None


def refined_queries(
    plan: ResearchPlan[JobSettings],
    accepted_titles: list[str],
    *,
    connectors: tuple[str, ...] = CONNECTORS,
    render: Renderer = connector_syntax,
    turns: Mapping[str, int] | None = None,
) -> list[PlannedQuery]:
    """One round of refinement, broader than the plan: the head of each long concept alone, then all
    the goal's concepts with the commonest new topic word of the accepted hits. `turns` caps what each
    connector is sent (what its rate still allows the job; 0 leaves it out)."""
    vocabulary: dict[str, int] = {}
    known = {token for phrase in plan.key_phrases for token in phrase.split()}
    for title in accepted_titles:
        for token in set(content_tokens(title)):
            if token not in known:
                vocabulary[token] = vocabulary.get(token, 0) + 1
    expansions = [word for word, _ in sorted(vocabulary.items(), key=lambda kv: (-kv[1], kv[0]))[:1]]
    units: list[list[Facet]] = [[head] for head in map(concept_head, plan.facets) if head is not None]
    first = plan.facets[0] if plan.facets else Facet(plan.settings.topic)
    units.append([first, Facet(expansions[0])] if expansions else [first, Facet("review")])
    policies = plan.settings.policies
    limit = max(q.max_results for q in plan.settings.queries)
    sent = {(q.connector, q.query, str(q.concepts)) for q in plan.settings.queries}
    refined: list[PlannedQuery] = []
    for connector in connectors:
        allowed = MAX_REFINED_UNITS if turns is None else turns.get(connector, 0)
        fresh = [
            _planned(f"r{index + 1}-{connector}", connector, unit, policies, limit, render, priority=index)
            for index, unit in enumerate(units[:MAX_REFINED_UNITS])
        ]
        refined.extend([q for q in fresh if (q.connector, q.query, str(q.concepts)) not in sent][:allowed])
    return refined


def estimated_duration_minutes(
    plan: ResearchPlan[JobSettings], extract_concurrency: int, search_concurrency: int
) -> int:
    search = math.ceil(len(plan.settings.queries) / max(1, search_concurrency)) * _SEARCH_SECONDS
    extract = math.ceil(plan.settings.target_sources / max(1, extract_concurrency)) * _EXTRACT_SECONDS
    return max(1, math.ceil((search + extract + _OVERHEAD_SECONDS) / 60))


def describe(
    plan: ResearchPlan[JobSettings], *, extract_concurrency: int, search_concurrency: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The API's `autonomous_analysis` and `execution_plan` for this plan."""
    policies = plan.settings.policies
    window = f"{policies.year_start}-{policies.year_end}"
    connectors = sorted({query.connector for query in plan.settings.queries})
    distinct_queries = len({tuple(query.terms) for query in plan.settings.queries})
    rules, policies_checked = _validation_rules(policies)
    analysis = {
        "goal_decomposition": {
            "primary_objectives": [
                f"Find {policies.impact_level.replace('_', ' ')} publications on {plan.settings.topic} from {window}",
                f"Extract findings, methods and limitations from up to {plan.settings.target_sources} sources",
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
                for q in plan.settings.queries
            ],
            "validation_rules": rules,
        },
        "governance_applied": {"policies_checked": policies_checked, "policies": policies.to_dict()},
    }
    exploration = (
        f"Execute {len(plan.settings.queries)} search queries ({distinct_queries} variants x "
        f"{len(connectors)} databases) to discover relevant sources"
    )
    return analysis, _execution_plan(
        plan, exploration, policies_checked, extract_concurrency, search_concurrency
    )


def _validation_rules(policies: Policies) -> tuple[list[str], list[str]]:
    """The rules the plan's sources must pass, and the names of the policies they come from."""
    rules = [
        f"Year filter: {policies.year_start}-{policies.year_end}",
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
    return rules, policies_checked


def _execution_plan(
    plan: ResearchPlan[JobSettings],
    exploration: str,
    policies_checked: list[str],
    extract_concurrency: int,
    search_concurrency: int,
) -> dict[str, Any]:
    return {
        "phases": [
            {"phase": "Autonomous Exploration", "description": exploration},
            {
                "phase": "Intelligent Validation",
                "description": "De-duplicate and score sources on relevance, citation impact, recency, "
                f"methodology and accessibility; apply {', '.join(policies_checked)}",
            },
            {
                "phase": "Deep Extraction",
                "description": f"Extract structured data from top {plan.settings.target_sources} sources "
                f"({extract_concurrency} in parallel)",
            },
            {
                "phase": "Meta-Analysis & Synthesis",
                "description": "Cluster findings into themes, cite page-located evidence, verify every claim",
            },
        ],
        "estimated_sources": plan.settings.target_sources,
        "estimated_duration_minutes": estimated_duration_minutes(
            plan, extract_concurrency, search_concurrency
        ),
    }
