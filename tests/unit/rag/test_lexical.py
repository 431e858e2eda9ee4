"""The lexical fields: words in the body, title and context fields; the items' one-character symbols in
a field of their own."""

from __future__ import annotations

import bm25s
import pytest
import Stemmer

from functions.common.storage import InMemoryBlobStore, get_json, put_json
from functions.rag.index import BuiltIndex, load_knowledge_base, write_index
from functions.rag.knowledge_base import KnowledgeBase
from functions.rag.lexical import SYMBOL_PATTERN, WORD_PATTERN, LexicalIndex

TEXTS = ["the q value of a state action pair", "the value v of a state", "a policy picks an action"]


def test_one_character_symbols_are_terms_of_the_symbols_field_only() -> None:
    words = LexicalIndex.build(TEXTS)
    symbols = LexicalIndex.build(TEXTS, SYMBOL_PATTERN)
    assert words.tokens("the q values") == ["valu"]
    assert symbols.tokens("the q values") == ["q"]
    scores = symbols.scores(symbols.tokens("q value"))
    assert scores[0] > 0 and scores[1] == scores[2] == 0


QUERIES = [
    "How is the running average updated when a new sample arrives?",
    "the Bellman equation (2.7) in matrix\u2013vector form: v = r + \u03b3Pv, TD(0) and Q-learning's ﬁxed point",
    "Ünïcode wörds, Straße, naïve café; the a an of",
    "",
    "   ",
]


@pytest.mark.parametrize("pattern", [WORD_PATTERN, SYMBOL_PATTERN])
def test_query_terms_are_the_ones_bm25s_makes_of_the_text(pattern: str) -> None:
    # The query side tokenises without bm25s.tokenize (its per-call set-up cost ~18 µs a word); its
    # terms must stay exactly those the index was built with.
    index = LexicalIndex.build([*TEXTS, "q v P x"], pattern)
    stemmer = Stemmer.Stemmer("english")
    for query in QUERIES:
        (expected,) = bm25s.tokenize(
            [query],
            stopwords="en",
            stemmer=stemmer,
            token_pattern=pattern,
            return_ids=False,
            show_progress=False,
        )
        assert index.tokens(query) == [term for term in expected if term]


def test_the_symbols_field_is_read_back_with_its_terms() -> None:
    symbols = LexicalIndex.build(TEXTS, SYMBOL_PATTERN)
    restored = LexicalIndex.from_files(symbols.to_files(), SYMBOL_PATTERN)
    assert restored.tokens("v of s") == ["v", "s"]
    assert restored.scores(["v"]).tolist() == symbols.scores(["v"]).tolist()


def test_texts_without_a_term_make_no_field() -> None:
    assert LexicalIndex.build_optional(["no symbols here", "a", ""], SYMBOL_PATTERN) is None
    assert LexicalIndex.build_optional(["the q value"], SYMBOL_PATTERN) is not None


def test_a_question_in_the_books_symbols_finds_the_item_that_introduces_them(
    knowledge_base: KnowledgeBase,
) -> None:
    # (2.1) is followed by "where h is the holding cost and p the shortage penalty".
    assert knowledge_base.symbol_lexical is not None
    results = knowledge_base.search("what do h and p stand for?", 5).results
    assert results and results[0]["id"] == "formula_2_1"


def test_an_index_written_before_the_symbols_field_is_served_without_it(built_index: BuiltIndex) -> None:
    store = InMemoryBlobStore()
    write_index(store, built_index)
    manifest_key = f"kb/{built_index.book_id}/{built_index.version}/manifest.json"
    manifest = get_json(store, manifest_key)
    assert manifest is not None and manifest["symbol_lexical_files"]
    del manifest["symbol_lexical_files"]
    put_json(store, manifest_key, manifest)

    knowledge_base = load_knowledge_base(store)
    assert knowledge_base.symbol_lexical is None
    assert knowledge_base.search("expected cost of holding stock", 5).results


def test_per_term_scores_are_each_terms_bm25_scores() -> None:
    index = LexicalIndex.build(TEXTS)
    terms = [*index.tokens("the value of an action"), "unknownterm"]
    rows = index.term_scores(terms)
    assert rows.shape == (len(terms), index.size)
    for row, term in zip(rows, terms, strict=True):
        assert row.tolist() == index.scores([term]).tolist()
    assert rows[:-1].any(axis=1).all() and not rows[-1].any()
