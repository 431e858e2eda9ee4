"""Numbered items answer natural questions, whatever their wording: an item is matched by its context
for every question, competes with the passages that name it, and the first results mix prose and items."""

from __future__ import annotations

import pytest

from functions.rag import knowledge_base as knowledge_base_module
from functions.rag.knowledge_base import CITED_SHARE, KnowledgeBase
from functions.rag.model import RelationType


def _top(knowledge_base: KnowledgeBase, query: str, k: int = 5) -> list[str]:
    return [result["id"] for result in knowledge_base.search(query, k).results]


def test_a_question_without_a_type_word_finds_the_equation_it_is_about(knowledge_base: KnowledgeBase) -> None:
    # (2.1) is introduced by "The expected cost of holding stock is" and followed by "where h is the
    # holding cost and p the shortage penalty"; the question names no type ("which equation ...").
    assert _top(knowledge_base, "What does the expected cost of holding stock depend on?")[0] == "formula_2_1"


def test_the_item_ranks_above_the_passage_that_holds_it(knowledge_base: KnowledgeBase) -> None:
    ranked = _top(knowledge_base, "How is the belief state updated after an action and an observation?")
    assert "formula_1_1" in ranked and "chunk_1_1_1" in ranked
    assert ranked.index("formula_1_1") < ranked.index("chunk_1_1_1")


@pytest.mark.parametrize(
    "query",
    [
        "How does value iteration converge?",
        "normalize the belief over hidden states",
        "reorder point trades the holding cost against the shortage penalty",
    ],
)
def test_an_item_scores_at_least_a_share_of_the_passages_that_name_it(
    knowledge_base: KnowledgeBase, query: str
) -> None:
    scores = {result["id"]: result["score"] for result in knowledge_base.search(query, 20).results}
    pairs = [
        (edge.target, edge.source)
        for source, edges in knowledge_base.outgoing.items()
        if knowledge_base.nodes[source].is_chunk
        for edge in edges
        if edge.type == RelationType.REFERENCES.value and edge.target in scores and edge.source in scores
    ]
    assert pairs
    for item, passage in pairs:
        if not knowledge_base.nodes[item].is_chunk and knowledge_base.nodes[item].type != "section":
            assert scores[item] >= CITED_SHARE * scores[passage] - 1e-3, (item, passage)


def test_the_first_results_show_a_passage_and_an_item_when_both_match(
    knowledge_base: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "normalize the belief over hidden states"
    mixed = knowledge_base.search(query, 2).results
    assert {result["type"] == "section" for result in mixed} == {True, False}, mixed
    monkeypatch.setattr(knowledge_base_module, "DIVERSE_FLOOR", 2.0)  # never diversify
    unmixed = knowledge_base.search(query, 2).results
    assert all(result["type"] != "section" for result in unmixed), unmixed


def test_a_weak_match_of_the_other_kind_is_not_pulled_up(
    knowledge_base: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "normalize the belief over hidden states"
    monkeypatch.setattr(knowledge_base_module, "DIVERSE_FLOOR", 0.99)
    assert all(result["type"] != "section" for result in knowledge_base.search(query, 2).results)
