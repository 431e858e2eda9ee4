from __future__ import annotations

import pytest

from functions.orchestrate.models import ScopeParameters
from functions.orchestrate.planning import build_plan, describe, key_phrases, refined_queries
from tests.unit.orchestrate.fixtures import GOAL, NOW, plan


def test_key_phrases_drop_framing_words() -> None:
    assert key_phrases(GOAL) == ["transformer architectures", "long documents"]
    assert (
        key_phrases("How does sleep deprivation affect working memory in adults?")[0] == "sleep deprivation"
    )


@pytest.mark.parametrize(
    ("depth", "per_connector", "sources"),
    [("rapid", 3, 10), ("focused", 4, 15), ("comprehensive", 5, 30), ("exhaustive", 5, 50)],
)
def test_three_to_five_queries_per_connector(depth: str, per_connector: int, sources: int) -> None:
    research = plan(depth)
    by_connector: dict[str, int] = {}
    for query in research.queries:
        by_connector[query.connector] = by_connector.get(query.connector, 0) + 1
    assert by_connector == dict.fromkeys(["arxiv", "semantic_scholar", "openalex", "crossref"], per_connector)
    assert research.target_sources == sources
    assert len({q.query_id for q in research.queries}) == len(research.queries)


def test_scope_maps_to_policies() -> None:
    research = plan(
        "focused",
        temporal_boundary={"publication_window_years": 2},
        quality_threshold={"impact_level": "high_impact"},
        source_diversity_requirement=False,
    )
    policies = research.policies
    assert (policies.year_start, policies.year_end) == (2024, 2026)
    assert policies.min_citations == 10 and policies.relevance_threshold == 0.6
    assert not policies.diversity_required
    assert all(q.year_start == 2024 and q.year_end == 2026 for q in research.queries)


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
    assert {q.query for q in refined}.isdisjoint({q.query for q in research.queries})
