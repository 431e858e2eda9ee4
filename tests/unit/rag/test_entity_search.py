"""Entity-seeking questions: items are found by the words around them, and the type a question names
is preferred (tests/unit/rag/test_item_ranking.py covers the questions that name no type)."""

from __future__ import annotations

import pytest

from functions.common.storage import InMemoryBlobStore
from functions.rag import knowledge_base as knowledge_base_module
from functions.rag.index import BuiltIndex, load_knowledge_base, write_index
from functions.rag.item_context import ContextReader, citing_sentences, is_prose
from functions.rag.knowledge_base import KnowledgeBase
from functions.rag.query_intent import query_intent


def _top(knowledge_base: KnowledgeBase, query: str, k: int = 5) -> list[str]:
    return [result["id"] for result in knowledge_base.search(query, k).results]


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("What is the equation for the state value in terms of action values?", {"formula"}),
        ("Which formula gives the expected cost?", {"formula"}),
        ("Which algorithm updates Q-values off-policy?", {"algorithm"}),
        ("the algorithm that normalizes the belief", {"algorithm"}),
        ("What table shows the q-values at the first iteration?", {"table"}),
        ("figure of the grid world with the optimal policy", {"figure"}),
        ("Which box proves the convergence?", {"box"}),
        ("pseudocode of policy iteration", {"algorithm"}),
        ("What is the matrix-vector form of the Bellman equation?", {"formula"}),
        ("Which example computes the values of a two-state problem?", {"example"}),
    ],
)
def test_entity_seeking_questions_are_recognised(query: str, wanted: set[str]) -> None:
    assert query_intent(query).wanted_types == wanted


@pytest.mark.parametrize(
    "query",
    [
        "What is the Bellman equation?",
        "How does the value iteration algorithm converge?",
        "Robbins-Monro algorithm for finding the root of an equation",
        "Write the Bellman equation in matrix-vector form",
        "closed-form solution of the state values",
        "an example of a stochastic policy",
    ],
)
def test_concepts_named_after_a_type_are_not_entity_seeking(query: str) -> None:
    assert not query_intent(query).entity_seeking


def test_an_equation_is_found_by_a_paraphrase_of_its_defining_sentence(
    knowledge_base: KnowledgeBase,
) -> None:
    # (1.1) is introduced by "After taking an action and receiving an observation, the belief state
    # is updated by" and followed by "which is the Bayes rule applied to the hidden state".
    assert _top(knowledge_base, "Which equation updates the belief after an action and an observation?")[
        0
    ] == ("formula_1_1")
    assert (
        _top(knowledge_base, "What is the formula of the Bayes rule for the hidden state?")[0]
        == "formula_1_1"
    )
    # (2.1): "The expected cost of holding stock is"
    assert (
        _top(knowledge_base, "What is the equation for the expected cost of holding stock?")[0]
        == "formula_2_1"
    )


def test_an_algorithm_is_found_by_the_sentence_that_cites_it(knowledge_base: KnowledgeBase) -> None:
    assert _top(knowledge_base, "Which algorithm summarizes the POMDP belief update?")[0] == "algo_1_1"
    assert (
        _top(knowledge_base, "Which algorithm orders up to S when the stock falls below s?")[0] == "algo_2_1"
    )


def test_the_type_a_question_names_comes_first(knowledge_base: KnowledgeBase) -> None:
    # Table 1.1 and Figure 1.2 are both about value iteration.
    assert _top(knowledge_base, "Which table shows value iteration?")[0] == "table_1_1"
    assert _top(knowledge_base, "Which figure shows value iteration?")[0] == "figure_1_2"


def test_without_the_context_field_and_the_boost_the_passage_would_win(
    knowledge_base: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The passage that introduces Algorithm 2.1 uses the question's words more than its caption does.
    question = "Which algorithm orders up to S when the stock falls below s?"
    assert _top(knowledge_base, question)[0] == "algo_2_1"
    monkeypatch.setattr(knowledge_base_module, "TYPE_BOOST", 1.0)
    monkeypatch.setattr(knowledge_base_module, "CONTEXT_WEIGHT", 0.0)
    # The symbols field is read from the same contexts (the question's "S" and "s").
    monkeypatch.setattr(knowledge_base_module, "SYMBOL_WEIGHT", 0.0)
    assert _top(knowledge_base, question)[0] != "algo_2_1"


def test_an_index_without_the_context_field_is_still_served(built_index: BuiltIndex) -> None:
    store = InMemoryBlobStore()
    write_index(store, built_index)
    manifest_key = f"kb/{built_index.book_id}/{built_index.version}/manifest.json"
    manifest = store.get_bytes(manifest_key)
    assert manifest is not None and b"context_lexical_files" in manifest
    store.put_bytes(manifest_key, manifest.replace(b'"context_lexical_files"', b'"unused_files"'))
    old = load_knowledge_base(store)
    assert old.context_lexical is None
    assert _top(old, "Which table shows value iteration?")[0] == "table_1_1"


def test_item_context_holds_the_defining_and_citing_sentences(built_index: BuiltIndex) -> None:
    by_id = {entity.id: entity for entity in built_index.entities}
    formula = by_id["formula_1_1"].context
    assert "the belief state is updated by" in formula
    assert "which is the Bayes rule applied to the hidden state." in formula
    assert "summarized in Algorithm 1.1" in by_id["algo_1_1"].context
    assert "as Figure 1.2 shows" in by_id["figure_1_2"].context
    assert all(not entity.context for entity in built_index.entities if entity.is_chunk)


def test_a_display_starts_after_the_prose_that_introduces_it() -> None:
    lines = [
        "To derive the matrix form, we first rewrite the equation as",
        "v(s) = r(s) + g",
        "sum p(s'|s) v(s'),",
        "(2.8)",
        "where r is the mean reward of the policy in every state.",
    ]
    barrier = [False] * len(lines)
    assert not is_prose(lines[1]) and is_prose(lines[0])
    reader = ContextReader(lines, barrier)
    assert reader.display_start(3) == 1
    context = reader.of_display(3)
    assert context.defining == [lines[0], lines[4]]
    assert citing_sentences(["As (2.8) shows, the value is linear in r."], [False], {"formula_2_8"}) == {
        "formula_2_8": ["As (2.8) shows, the value is linear in r."]
    }
