from __future__ import annotations

import pytest

from functions.common.ml.embedder import default_embedder
from functions.common.models import Paper
from functions.common.text import stems
from functions.research.planning.job import build_plan
from functions.research.planning.request import ScopeParameters
from functions.research.retrieval.relevance import RelevanceScorer, probability, term_coverage
from functions.research.retrieval.screening import deduplicate, screen
from tests.unit.orchestrate.fixtures import NOW, paper, plan

LEXICAL = RelevanceScorer(None)


def test_duplicates_merge_by_identifier_and_title() -> None:
    first = paper(1, source="arxiv", citations=None)
    same_id = paper(1, source="openalex", citations=80, doi="10.1/abc")
    same_title = paper(
        2, arxiv_id=None, url="https://doi.org/10.1/x", doi=None, title=paper(1).title.upper() + "."
    )
    other = paper(3)
    candidates, duplicates = deduplicate([("q1", first), ("q2", same_id), ("q3", same_title), ("q1", other)])
    assert duplicates == 2 and len(candidates) == 2
    merged = next(c for c in candidates if c.paper.arxiv_id == "2501.10001")
    assert merged.paper.citations == 80 and merged.paper.doi == "10.1/abc"
    assert set(merged.query_ids) == {"q1", "q2", "q3"}
    assert set(merged.paper.found_by) >= {"arxiv", "openalex"}


def test_five_dimensions_threshold_policies_and_refinement() -> None:
    research = plan("rapid")  # 10 sources, years 2023-2026
    hits = [("q1", paper(i)) for i in range(6)]
    hits.append(
        ("q1", paper(20, title="Crop yields from satellites", abstract="Farming.", relevance_score=0.2))
    )
    hits.append(("q1", paper(21, year=2015)))
    result = screen(hits, research, current_year=2026, allow_refinement=True, scorer=LEXICAL)
    assert result.rejection_counts == {"below_relevance_threshold": 1, "outside_temporal_boundary": 1}
    assert len(result.selected) == 6 and result.needs_refinement  # 6 < 10 passed
    for candidate in result.selected:
        assert set(candidate.scores) == {
            "relevance",
            "citation_impact",
            "recency",
            "methodology",
            "accessibility",
        }
        assert abs(candidate.total_score - sum(candidate.scores.values())) < 0.01
        assert candidate.scores["relevance"] >= 0.5
        assert set(candidate.explanations) == set(candidate.scores)
        assert "best match" in candidate.explanations["relevance"]
    assert not screen(
        hits, research, current_year=2026, allow_refinement=False, scorer=LEXICAL
    ).needs_refinement


def test_diversity_caps_one_venue() -> None:
    research = plan("rapid")
    hits = [("q1", paper(i, venue="Same Venue")) for i in range(12)]
    hits += [("q1", paper(100 + i, venue=f"Other {i}", relevance_score=0.7)) for i in range(6)]
    result = screen(hits, research, current_year=2026, allow_refinement=False, scorer=LEXICAL)
    venues = [c.paper.venue for c in result.selected]
    assert len(result.selected) == 10
    assert venues.count("Same Venue") <= 4  # ceil(0.34 * 10)
    assert result.rejection_counts["diversity_cap"] >= 8
    relaxed = plan("rapid", source_diversity_requirement=False)
    assert (
        len(screen(hits, relaxed, current_year=2026, allow_refinement=False, scorer=LEXICAL).selected) == 10
    )


MULTI_FACET_GOAL = "How do graph neural networks and attention mechanisms help drug discovery?"


def _abstract_only(index: int, title: str, abstract: str) -> tuple[str, Paper]:
    # The same method sentence everywhere, so only relevance tells the papers apart.
    return (
        "q1",
        paper(index, title=title, abstract=f"{abstract} We evaluate on benchmarks.", venue=f"V{index}"),
    )


def test_a_paper_that_answers_one_concept_passes_and_an_unrelated_one_does_not() -> None:
    research = build_plan(MULTI_FACET_GOAL, ScopeParameters(), now=NOW)
    hits = [
        _abstract_only(
            1,
            "Molecular property prediction with message passing",
            "Graph neural networks learn representations of molecules for virtual screening in drug discovery.",
        ),
        _abstract_only(
            2,
            "Self-attention for sequence modelling",
            "We study attention mechanisms in sequence models for machine translation.",
        ),
        _abstract_only(
            3,
            "Crop yield forecasting from satellite imagery",
            "Satellite images of agricultural fields predict harvests across seasons.",
        ),
    ]
    result = screen(hits, research, current_year=2026, allow_refinement=False, scorer=LEXICAL)
    by_title = {c.paper.title: c for c in result.candidates}
    assert by_title["Crop yield forecasting from satellite imagery"].rejection == "below_relevance_threshold"
    joined = by_title["Molecular property prediction with message passing"]
    single = by_title["Self-attention for sequence modelling"]
    assert joined.rejection is None and single.rejection is None
    assert "attention mechanisms" in single.explanations["relevance"]
    assert joined.weighted_score > single.weighted_score  # more of the goal answered ranks first


def test_calibrated_probability_rises_with_both_features() -> None:
    assert probability(0.1, 0.0, 0.0) < 0.5 < probability(0.6, 0.5, 0.0)
    assert probability(0.3, 0.2, 0.0) < probability(0.5, 0.2, 0.0) < probability(0.5, 0.8, 0.0)
    assert probability(0.5, 1.0, 0.0) < probability(0.5, 1.0, 1.0)
    assert probability(None, 0.0, 0.0) < 0.5 < probability(None, 1.0, 1.0)


def test_term_coverage_gives_one_word_half_credit_and_rewards_whole_phrases() -> None:
    document = set(stems("Graph neural networks predict molecular properties from training data."))
    assert term_coverage("networks", document) == (0.5, 0.0)
    assert term_coverage("graph neural networks", document) == (1.0, 1.0)
    assert term_coverage("hand-labelled training data", document) == (2 / 3, 0.0)


@pytest.mark.skipif(default_embedder() is None, reason="no embedding model: run `make install`")
def test_semantic_relevance_finds_a_paraphrase_that_shares_no_terms() -> None:
    scorer = RelevanceScorer(default_embedder())
    goal = "How can heart attacks be predicted from electronic health records?"
    documents = [
        "Forecasting myocardial infarction from clinical patient data. We train models on hospital records "
        "to anticipate cardiac events.",
        "A survey of graph colouring heuristics for register allocation in compilers.",
    ]
    lexical_only = LEXICAL.score(goal, [goal], documents)
    semantic = scorer.score(goal, [goal], documents)
    assert semantic[0].probability >= 0.5 > semantic[1].probability
    assert semantic[0].probability > lexical_only[0].probability
    assert semantic[0].method == "semantic+lexical" and semantic[0].semantic is not None


@pytest.mark.skipif(default_embedder() is None, reason="no embedding model: run `make install`")
def test_beyond_the_embedding_cap_the_least_overlapping_candidates_are_scored_lexically() -> None:
    scorer = RelevanceScorer(default_embedder())
    goal = "graph neural networks for drug discovery"
    documents = [
        "Graph neural networks for drug discovery and molecular design.",
        "Crop yields from satellites.",
        "Drug discovery pipelines in pharmaceutical companies.",
    ]
    features = scorer.features([goal], documents, max_embedded=2)
    assert features.semantic_at(0, 0) is not None and features.semantic_at(2, 0) is not None
    assert features.semantic_at(1, 0) is None  # no term in common: the one left to the lexical model
    assert features.probability(1, 0) < 0.5
