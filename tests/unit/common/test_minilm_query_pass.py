"""The single-sequence MiniLM pass (one query, token columns padded to whole BLAS blocks) gives the
vectors of the batched pass and of a plain float64 BERT, to float rounding."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from functions.common.ml.embedder import CHECKOUT_DIR
from functions.common.ml.minilm import TOKEN_COLUMN_BLOCK, MiniLmEmbedder
from functions.rag.index import QUERY_MAX_TOKENS
from tests.unit.rag.tiny_bert import VOCAB, reference_embedding, write_tiny_bert

QUESTIONS = Path(__file__).resolve().parents[3] / "bench" / "rag_queries.json"


@pytest.fixture(scope="module")
def minilm() -> MiniLmEmbedder:
    """all-MiniLM-L6-v2 as the knowledge base serves it: int8 weights, queries cut at QUERY_MAX_TOKENS."""
    if not (CHECKOUT_DIR / "model.safetensors").is_file():
        pytest.skip("all-MiniLM-L6-v2 is unpacked by `make install`")
    model = MiniLmEmbedder.from_artifacts(MiniLmEmbedder.from_model_dir(CHECKOUT_DIR).to_artifacts())
    model.max_length = QUERY_MAX_TOKENS
    return model


def test_fifty_questions_embed_alone_as_in_a_batch(minilm: MiniLmEmbedder) -> None:
    questions = [query["question"] for query in json.loads(QUESTIONS.read_text())["queries"]][:50]
    questions[-1] = " ".join(questions[:8])  # longer than QUERY_MAX_TOKENS: cut, a whole block of columns
    lengths = {
        len(minilm.tokenizer.encode(question, minilm.max_length)) % TOKEN_COLUMN_BLOCK
        for question in questions
    }
    assert len(lengths) >= 6  # sequences that fill the last block of columns to many different depths

    alone = np.stack([minilm.embed([question])[0] for question in questions])
    batched = minilm.embed(questions)  # masked batches of up to 16, the pass that embeds the book

    assert np.abs(alone - batched).max() < 1e-5
    assert np.allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-5)


def test_a_question_alone_matches_a_plain_float64_bert(minilm: MiniLmEmbedder) -> None:
    for question in ("What is the Bellman optimality equation?", "Why does value iteration converge?"):
        expected = reference_embedding(minilm, minilm.tokenizer.encode(question, minilm.max_length))
        assert np.abs(minilm.embed([question])[0] - expected).max() < 1e-5


def test_every_padding_depth_leaves_the_vector_unchanged(tmp_path: Path) -> None:
    tiny = MiniLmEmbedder.from_model_dir(write_tiny_bert(tmp_path), name="tiny-bert")
    words = VOCAB[11:]
    for count in range(1, 2 * TOKEN_COLUMN_BLOCK + 2):  # [CLS] + count words + [SEP]: every residue
        text = " ".join(words[index % len(words)] for index in range(count))
        ids = tiny.tokenizer.encode(text, tiny.max_length)
        assert np.abs(tiny.embed([text])[0] - reference_embedding(tiny, ids)).max() < 1e-5
