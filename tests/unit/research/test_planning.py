from __future__ import annotations

import json
from typing import Any

import pytest

from functions.research.planning.facets import decompose
from functions.research.planning.job import (
    ConnectorBudget,
    SearchBudget,
    build_plan,
    describe,
    key_phrases,
    refined_queries,
)
from functions.research.planning.plan import ResearchPlan
from functions.research.planning.request import ScopeParameters
from functions.search.connectors.arxiv import build_search_query
from functions.search.models import PaperQuery
from tests.unit.orchestrate.fixtures import GOAL, NOW, plan


def test_key_phrases_drop_framing_words() -> None:
    assert key_phrases(GOAL) == ["transformer architectures", "long documents"]
    assert (
        key_phrases("How does sleep deprivation affect working memory in adults?")[0] == "sleep deprivation"
    )


@pytest.mark.parametrize(
    ("depth", "covering", "sources"),
    [("rapid", 1, 10), ("focused", 2, 15), ("comprehensive", 3, 30), ("exhaustive", 3, 50)],
)
def test_each_engine_gets_the_queries_its_way_of_matching_needs(
    depth: str, covering: int, sources: int
) -> None:
    research = plan(depth)  # two concepts: the whole goal, then each concept alone
    by_connector: dict[str, int] = {}
    for query in research.settings.queries:
        by_connector[query.connector] = by_connector.get(query.connector, 0) + 1
    # arXiv ORs the concepts and Crossref ranks any word: one query covers the goal, more only when deeper
    assert by_connector["arxiv"] == by_connector["crossref"] == covering
    # every word must match on Semantic Scholar and OpenAlex: the (short) whole goal, then each concept
    assert by_connector["semantic_scholar"] == by_connector["openalex"] == 3
    assert research.settings.target_sources == sources
    assert len({q.query_id for q in research.settings.queries}) == len(research.settings.queries)


def test_scope_maps_to_policies() -> None:
    research = plan(
        "focused",
        temporal_boundary={"publication_window_years": 2},
        quality_threshold={"impact_level": "high_impact"},
        source_diversity_requirement=False,
    )
    policies = research.settings.policies
    assert (policies.year_start, policies.year_end) == (2024, 2026)
    assert policies.min_citations == 10 and policies.relevance_threshold == 0.5
    assert not policies.diversity_required
    assert all(q.year_start == 2024 and q.year_end == 2026 for q in research.settings.queries)


def test_description_is_computed_from_goal_and_scope() -> None:
    first = describe(plan("rapid"), extract_concurrency=10, search_concurrency=8)
    other_goal = build_plan(
        "Effects of microplastics on freshwater fish reproduction",
        ScopeParameters.model_validate({"discovery_depth": "exhaustive"}),
        now=NOW,
    )
    second = describe(other_goal, extract_concurrency=10, search_concurrency=8)
    assert first[0]["goal_decomposition"]["sub_goals"] != second[0]["goal_decomposition"]["sub_goals"]
    assert "microplastics" in " ".join(second[0]["goal_decomposition"]["sub_goals"])
    assert first[1]["estimated_sources"] == 10 and second[1]["estimated_sources"] == 50
    assert second[1]["estimated_duration_minutes"] >= first[1]["estimated_duration_minutes"]
    assert "SourceDiversityPolicy" in first[0]["governance_applied"]["policies_checked"]
    assert "Year filter: 2023-2026" in first[0]["execution_strategy"]["validation_rules"]


def test_refinement_broadens_with_terms_of_accepted_titles() -> None:
    research = plan("rapid")
    refined = refined_queries(research, ["Sparse routing for transformer architectures", "Sparse kernels"])
    assert refined and all(q.query_id.startswith("r") for q in refined)
    assert any("sparse" in q.terms for q in refined)
    long_concept = build_plan(
        "Does scalar field dark matter shape the cosmic microwave background?", ScopeParameters(), now=NOW
    )
    heads = [q.terms for q in refined_queries(long_concept, []) if q.connector == "arxiv"]
    assert heads[:2] == [["dark matter"], ["microwave background"]]
    sent = {(q.connector, q.query, str(q.concepts)) for q in research.settings.queries}
    assert all((q.connector, q.query, str(q.concepts)) not in sent for q in refined)


GRAPH_GOAL = "How do graph neural networks and attention mechanisms help drug discovery?"


def test_a_goal_is_decomposed_into_the_concepts_it_joins() -> None:
    assert [facet.phrase for facet in decompose(GRAPH_GOAL)] == [
        "graph neural networks",
        "attention mechanisms",
        "drug discovery",
    ]
    # `of` binds a concept; question and framing words never start one; an acronym becomes a synonym.
    facets = decompose(
        "What is the effect of retrieval augmented generation (RAG) on factuality of language models?"
    )
    assert [(f.phrase, f.synonyms) for f in facets] == [
        ("retrieval augmented generation", ["rag"]),
        ("factuality of language models", []),
    ]
    assert [f.phrase for f in decompose("Which methods identify influential nodes in complex networks?")] == [
        "influential nodes",
        "complex networks",
    ]
    assert decompose("What are the recent advances?") == []


@pytest.mark.parametrize(
    ("goal", "concepts"),
    [
        # a word right before an article is a verb, not the end of the concept
        (
            "Does ultra-light scalar field dark matter leave a signature?",
            ["scalar field dark matter", "signature"],
        ),
        (
            "Does early anticoagulation lower the rate of venous clots?",
            ["early anticoagulation", "rate of venous clots"],
        ),
        # words that are nouns inside concepts stay, adverbs end a run
        ("How does land use change affect water supply?", ["land use change", "water supply"]),
        (
            "Can a centrality measure reliably find influential spreaders?",
            ["centrality measure", "influential spreaders"],
        ),
        (
            "Does social support reduce the burden of family caregivers?",
            ["social support", "burden of family caregivers"],
        ),
        # what a question asks studies to report is a verb, never the end of a concept ("X show")
        (
            "What do cohort studies of statins and aspirin show about stroke prevention?",
            ["cohort studies of statins", "aspirin", "stroke prevention"],
        ),
        (
            "What evidence indicates that exercise reduces depression in adolescents?",
            ["exercise", "depression", "adolescents"],
        ),
        ("How well do large language models reason about causality?", ["large language models", "causality"]),
        ("Do transformers outperform recurrent networks?", ["transformers", "recurrent networks"]),
    ],
)
def test_verbs_and_adverbs_inside_a_question_do_not_join_its_concepts(goal: str, concepts: list[str]) -> None:
    assert [facet.phrase for facet in decompose(goal)] == concepts


def test_queries_per_concept_in_each_engines_syntax() -> None:
    research = build_plan(GRAPH_GOAL, ScopeParameters.model_validate({"discovery_depth": "focused"}), now=NOW)
    assert research.key_phrases == ["graph neural networks", "attention mechanisms", "drug discovery"]
    arxiv = [q for q in research.settings.queries if q.connector == "arxiv"]
    assert [q.terms for q in arxiv] == [
        ["graph neural networks", "attention mechanisms", "drug discovery"],
        ["graph neural networks"],
    ]
    # the goal is too long for an engine where every word must match: its concepts come first
    s2 = [q.terms for q in research.settings.queries if q.connector == "semantic_scholar"]
    assert s2 == [
        ["graph neural networks"],
        ["attention mechanisms"],
        ["drug discovery"],
        ["graph neural networks", "attention mechanisms", "drug discovery"],
    ]
    for query in research.settings.queries:  # short natural phrases, never a long keyword list
        assert len(query.query.split()) <= 8
        assert "help" not in query.query.split() and "how" not in query.query.split()
    # arXiv ranks by relevance: one query ORs every concept, and the papers matching most come first
    whole = build_search_query(PaperQuery(query=arxiv[0].query, concepts=arxiv[0].concepts))
    assert whole == '(all:"graph neural networks" OR all:"attention mechanisms" OR all:"drug discovery")'
    of_concept = build_plan(
        "factuality of large language models (LLM)", ScopeParameters(), now=NOW
    ).settings.queries[0]
    assert build_search_query(PaperQuery(query=of_concept.query, concepts=of_concept.concepts)) == (
        'all:factuality AND all:"large language models"'
    )
    synonyms = build_plan(
        "retrieval augmented generation (RAG) for question answering", ScopeParameters(), now=NOW
    )
    first = synonyms.settings.queries[0]
    assert build_search_query(PaperQuery(query=first.query, concepts=first.concepts)) == (
        '(all:"retrieval augmented generation" OR all:rag OR all:"question answering")'
    )
    second = synonyms.settings.queries[1]
    assert build_search_query(PaperQuery(query=second.query, concepts=second.concepts)) == (
        '(all:"retrieval augmented generation" OR all:rag)'
    )


def test_relevance_aspects_are_the_goal_its_concepts_and_their_questions() -> None:
    research = build_plan(GRAPH_GOAL, ScopeParameters(), now=NOW)
    aspects = research.aspects
    assert aspects[0] == GRAPH_GOAL
    assert {"graph neural networks", "attention mechanisms", "drug discovery"} <= set(aspects)
    assert any(a.startswith("How does drug discovery relate to") for a in aspects)
    assert ResearchPlan.from_dict(research.to_dict()) == research
    broad = build_plan(
        "How do interest rate rises affect house prices in emerging markets?", ScopeParameters(), now=NOW
    )
    assert "emerging markets" in broad.key_phrases
    one_word = build_plan("How does sleep affect memory consolidation and mood?", ScopeParameters(), now=NOW)
    assert "mood" in one_word.key_phrases and "mood" not in one_word.aspects
    assert any(a.startswith("How does mood relate to") for a in one_word.aspects)


def test_min_sources_extension_reaches_the_policies() -> None:
    assert plan("rapid").settings.policies.min_sources == 1
    assert plan("rapid", min_sources=3).settings.policies.min_sources == 3
    with pytest.raises(ValueError):
        ScopeParameters.model_validate({"min_sources": 0})


def _budget(sharing_jobs: int, openalex_left: int | None = None) -> SearchBudget:
    return SearchBudget(
        {
            "arxiv": ConnectorBudget(3.05),
            "semantic_scholar": ConnectorBudget(1.05),
            "openalex": ConnectorBudget(0.15, openalex_left, 1000 if openalex_left is not None else None),
            "crossref": ConnectorBudget(0.25),
        },
        sharing_jobs=sharing_jobs,
    )


def test_each_connector_is_planned_what_its_rate_allows_in_the_jobs_search_time() -> None:
    scope = ScopeParameters.model_validate({"discovery_depth": "rapid"})
    crowded = build_plan(GRAPH_GOAL, scope, now=NOW, budget=_budget(sharing_jobs=20))
    counts: dict[str, int] = {}
    for query in crowded.settings.queries:
        counts[query.connector] = counts.get(query.connector, 0) + 1
    # 40 s at a twentieth of arXiv's one request per 3 s: one fielded query that ORs every concept
    assert counts["arxiv"] == 1
    (arxiv,) = [q for q in crowded.settings.queries if q.connector == "arxiv"]
    assert len(arxiv.concepts) == 1  # one group: its alternatives are OR-ed
    assert {"graph neural networks", "attention mechanisms", "drug discovery"} <= set(arxiv.concepts[0])
    assert counts["semantic_scholar"] == 1  # 40 s / (1.05 s x 20 jobs)
    assert counts["openalex"] == 3  # its three concepts (the whole goal is too long for all-words)
    assert counts["crossref"] == 1  # ranks any word: the whole goal covers every concept
    assert any("semantic_scholar: 1 of 3 queries fit" in note for note in crowded.settings.budget_notes)
    alone = build_plan(GRAPH_GOAL, scope, now=NOW, budget=_budget(sharing_jobs=1))
    assert len(alone.settings.queries) > len(crowded.settings.queries)
    for connector in ("arxiv", "semantic_scholar"):  # each connector's most valuable query first
        priorities = [q.priority for q in crowded.settings.queries if q.connector == connector]
        assert priorities == sorted(priorities) and priorities[0] == 0


def test_a_daily_allowance_running_low_shifts_the_plan_and_says_so() -> None:
    scope = ScopeParameters.model_validate({"discovery_depth": "rapid"})
    low = build_plan(GRAPH_GOAL, scope, now=NOW, budget=_budget(sharing_jobs=4, openalex_left=40))
    openalex = [q for q in low.settings.queries if q.connector == "openalex"]
    assert len(openalex) == 1  # its most valuable query only
    assert any("openalex: 40 of its 1000 daily searches left" in note for note in low.settings.budget_notes)
    fresh = build_plan(GRAPH_GOAL, scope, now=NOW, budget=_budget(sharing_jobs=4, openalex_left=990))
    assert len([q for q in fresh.settings.queries if q.connector == "openalex"]) == 3


def test_refinement_sends_nothing_to_a_connector_whose_turns_are_spent() -> None:
    research = build_plan(GRAPH_GOAL, ScopeParameters(), now=NOW)
    refined = refined_queries(research, [], turns={"arxiv": 0, "semantic_scholar": 1, "openalex": 2})
    by_connector: dict[str, int] = {}
    for query in refined:
        by_connector[query.connector] = by_connector.get(query.connector, 0) + 1
    assert "arxiv" not in by_connector and "crossref" not in by_connector
    assert by_connector["semantic_scholar"] == 1 and by_connector["openalex"] == 2


# A job record's `plan` as stored by jobs already in flight (keys in their stored order).
STORED_PLAN: dict[str, Any] = {
    "goal": "How does sleep affect memory consolidation?",
    "topic": "sleep and memory consolidation",
    "key_phrases": ["sleep", "memory consolidation"],
    "sub_questions": ["How does sleep affect memory consolidation?"],
    "queries": [
        {
            "query_id": "q1-crossref",
            "connector": "crossref",
            "query": "sleep memory consolidation",
            "upstream_query": "sleep memory consolidation (years 2021-2026, limit 20)",
            "terms": ["sleep", "memory consolidation"],
            "year_start": 2021,
            "year_end": 2026,
            "max_results": 20,
            "concepts": [["sleep"], ["memory consolidation"]],
            "priority": 0,
        }
    ],
    "policies": {
        "year_start": 2021,
        "year_end": 2026,
        "impact_level": "high_impact",
        "min_citations": 10,
        "min_quality_score": 0.4,
        "relevance_threshold": 0.5,
        "diversity_required": False,
        "max_share_per_venue": 1.0,
        "min_connectors": 1,
        "weights": [1.0, 1.6, 0.8, 1.0, 1.0],
        "min_sources": 1,
    },
    "target_sources": 20,
    "focus_areas": ["methodology", "results", "limitations"],
    "facets": [{"phrase": "sleep", "synonyms": []}, {"phrase": "memory consolidation", "synonyms": []}],
    "budget_notes": ["arxiv: 1 of 2 queries fit its rate in the 40 s search time of a rapid job"],
}


def test_a_stored_plan_reads_back_to_the_same_json() -> None:
    stored = ResearchPlan.from_dict(STORED_PLAN)
    assert json.dumps(stored.to_dict()) == json.dumps(STORED_PLAN)
    assert stored.settings.queries[0].connector == "crossref"
    assert "memory consolidation" in stored.aspects and "sleep" not in stored.aspects
    older = {key: value for key, value in STORED_PLAN.items() if key not in ("facets", "budget_notes")}
    read = ResearchPlan.from_dict(older)
    assert read.key_phrases == ["sleep", "memory consolidation"] and read.settings.budget_notes == []
