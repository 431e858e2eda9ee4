"""The lexical index: what a token is, and that a stored index is read with the tokens it was built with."""

from __future__ import annotations

from functions.rag.knowledge_base import KnowledgeBase
from functions.rag.lexical import _TOKENIZER_FILE, LEGACY_TERM_PATTERN, TERM_PATTERN, LexicalIndex

TEXTS = ["the q value of a state action pair", "the value of a state", "a policy picks an action"]


def test_a_one_letter_symbol_is_a_token() -> None:
    index = LexicalIndex.build(TEXTS)
    assert "q" in index.tokens("the q values")
    scores = index.scores(index.tokens("q value"))
    assert scores[0] > scores[1] > scores[2]


def test_a_stored_index_is_read_with_the_pattern_it_was_built_with() -> None:
    files = LexicalIndex.build(TEXTS).to_files()
    assert LexicalIndex.from_files(files).term_pattern == TERM_PATTERN
    # An index written before the pattern was stored was built without one-letter tokens: its queries
    # are tokenised the same way, not with the newer pattern.
    legacy = LexicalIndex.from_files({name: data for name, data in files.items() if name != _TOKENIZER_FILE})
    assert legacy.term_pattern == LEGACY_TERM_PATTERN
    assert legacy.tokens("the q values") == ["valu"]


def test_a_question_in_the_books_symbols_finds_the_item_that_introduces_them(
    knowledge_base: KnowledgeBase,
) -> None:
    # (2.1) is followed by "where h is the holding cost and p the shortage penalty".
    results = knowledge_base.search("what do h and p stand for?", 5).results
    assert results and results[0]["id"] == "formula_2_1"
