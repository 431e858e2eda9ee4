"""Edges of every relationship type, derived from the tiny book's text."""

from __future__ import annotations

from functions.rag.graph import cited_entries, mentioned_ids
from functions.rag.index import BuiltIndex
from functions.rag.model import RELATION_TYPES, Edge


def _edges(built: BuiltIndex) -> set[tuple[str, str, str]]:
    return {(edge.source, str(edge.type), edge.target) for edge in built.edges}


def test_every_relationship_type_occurs(built_index: BuiltIndex) -> None:
    assert {str(edge.type) for edge in built_index.edges} == set(RELATION_TYPES)


def test_references_and_their_reverse(built_index: BuiltIndex) -> None:
    edges = _edges(built_index)
    # "The POMDP belief update is summarized in Algorithm 1.1 and uses ... (1.1)."
    assert ("chunk_1_1_1", "REFERENCES", "algo_1_1") in edges
    assert ("algo_1_1", "REFERENCED_BY", "chunk_1_1_1") in edges
    assert ("algo_1_1", "REFERENCES", "formula_1_1") in edges
    assert ("formula_1_1", "REFERENCED_BY", "algo_1_1") in edges
    assert ("chunk_1_2_1", "REFERENCES", "section_1_1") in edges
    assert ("chunk_2_1", "REFERENCES", "section_1") in edges  # "the methods of Chapter 1"
    assert ("chunk_2_1_1", "REFERENCES", "appendix_A") in edges
    assert ("exercise_1_2", "REFERENCES", "box_1_1") in edges


def test_an_item_does_not_reference_itself(built_index: BuiltIndex) -> None:
    assert all(edge.source != edge.target for edge in built_index.edges)


def test_formulas_used_in_algorithms_both_ways(built_index: BuiltIndex) -> None:
    edges = _edges(built_index)
    assert ("formula_2_1", "USES_IN", "algo_2_1") in edges
    assert ("algo_2_1", "USES_IN", "formula_2_1") in edges
    assert ("formula_1_1", "USES_IN", "algo_1_1") in edges
    assert not any(kind == "USES_IN" and "table" in source for source, kind, _ in edges)


def test_part_of_follows_the_hierarchy(built_index: BuiltIndex) -> None:
    edges = _edges(built_index)
    assert ("box_1_1", "PART_OF", "section_1_2_1") in edges
    assert ("section_1_2_1", "PART_OF", "section_1_2") in edges
    assert ("section_1_2", "PART_OF", "section_1") in edges
    assert ("appendix_A_1", "PART_OF", "appendix_A") in edges
    assert ("chunk_1_2_1", "PART_OF", "section_1_2") in edges


def test_follows_is_reading_order(built_index: BuiltIndex) -> None:
    edges = _edges(built_index)
    assert ("section_1_2", "FOLLOWS", "section_1_1") in edges
    assert ("section_2", "FOLLOWS", "section_1") in edges
    assert ("formula_1_2", "FOLLOWS", "formula_1_1") in edges
    assert ("section_1_1", "FOLLOWS", "section_1_2") not in edges


def test_cites_bibliography_and_box_subjects(built_index: BuiltIndex) -> None:
    edges = _edges(built_index)
    assert ("chunk_1_2_1", "CITES", "citation_3") in edges
    assert ("box_1_1", "CITES", "formula_1_2") in edges  # "Proof of the convergence of (1.2)"
    citation = next(entity for entity in built_index.entities if entity.id == "citation_3")
    assert citation.type == "citation" and "chunk_1_2_1" in citation.content


def test_related_to_links_similar_items(built_index: BuiltIndex) -> None:
    related = {
        target
        for source, kind, target in _edges(built_index)
        if source == "algo_2_1" and kind == "RELATED_TO"
    }
    assert related and len(related) <= 3
    assert "table_2_1" in related or "section_2_2" in related


def test_mentions_are_resolved_only_to_known_items() -> None:
    known = {"algo_4_1", "formula_4_2", "table_5_1", "section_3_2", "section_3", "appendix_B", "figure_2_1"}
    text = (
        "Algorithm 4.1 uses (4.2) and (9.9); see Table 5.1, Section 3.2, Chapter 3, Appendix B, Figure 7.7."
    )
    assert mentioned_ids(text, known) == [
        "algo_4_1",
        "table_5_1",
        "section_3_2",
        "section_3",
        "appendix_B",
        "formula_4_2",
    ]


def test_citations_are_bracketed_numbers_not_intervals() -> None:
    assert cited_entries("as shown in [32], on the interval [0, 1] and in [7].") == [
        "citation_32",
        "citation_7",
    ]


def test_edges_are_plain_triples() -> None:
    assert Edge("a", "REFERENCES", "b").to_list() == ["a", "REFERENCES", "b"]
