"""The torch-free dense path: tokenizer, safetensors, numpy BERT, int8 weights, hybrid serving."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from functions.common.minilm import MiniLmEmbedder, WordPieceTokenizer, read_safetensors
from functions.common.storage import InMemoryBlobStore
from functions.rag.embedding import fuse_scores
from functions.rag.index import build_index, load_knowledge_base, write_index
from tests.unit.rag.serving import serving
from tests.unit.rag.tiny_bert import VOCAB, write_tiny_bert
from tests.unit.rag.tiny_book import tiny_book


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> MiniLmEmbedder:
    return MiniLmEmbedder.from_model_dir(
        write_tiny_bert(tmp_path_factory.mktemp("tiny-bert")), name="tiny-bert"
    )


def test_wordpiece_follows_bert_uncased_rules() -> None:
    tokenizer = WordPieceTokenizer(VOCAB)
    ids = tokenizer.encode("Hello, WORLD! Naïve uncertainty POMDP zebra", max_length=32)
    tokens = [VOCAB[index] for index in ids]
    assert tokens == [
        "[CLS]", "hello", ",", "world", "!", "naive", "un", "##certain", "##ty",
        "p", "##om", "##dp", "[UNK]", "[SEP]",
    ]  # fmt: skip
    assert len(tokenizer.encode("belief " * 100, max_length=8)) == 8


def test_safetensors_are_read_as_numpy(tmp_path: Path) -> None:
    directory = write_tiny_bert(tmp_path)
    tensors = read_safetensors((directory / "model.safetensors").read_bytes())
    assert tensors["embeddings.word_embeddings.weight"].shape == (len(VOCAB), 16)
    assert tensors["encoder.layer.1.intermediate.dense.weight"].dtype == np.float32


def test_embeddings_are_normalised_and_independent_of_padding(embedder: MiniLmEmbedder) -> None:
    short, long = "belief update", "the value of a policy under inventory control uncertainty"
    alone = embedder.embed([short])
    together = embedder.embed([long, short])
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # The attention mask hides the padding that the longer text forces onto the shorter one.
    assert np.allclose(alone[0], together[1], atol=1e-5)
    assert float(together[0] @ together[1]) < 0.999


def test_int8_weights_stay_close_to_full_precision(embedder: MiniLmEmbedder) -> None:
    files = embedder.to_artifacts()
    restored = MiniLmEmbedder.from_artifacts(files)
    assert restored.name == "tiny-bert"
    texts = ["belief state update", "inventory control policy", "value iteration algorithm"]
    cosines = (embedder.embed(texts) * restored.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.99


def test_fused_scores_weigh_both_rankings() -> None:
    lexical = np.array([4.0, 2.0, 0.0], dtype=np.float32)
    dense = np.array([0.1, 0.5, -0.3], dtype=np.float32)
    fused = fuse_scores(lexical, dense, lexical_share=0.5)
    assert fused.tolist() == pytest.approx([0.5 + 0.1, 0.25 + 0.5, 0.0])


def test_an_index_built_with_embeddings_is_served_hybrid(embedder: MiniLmEmbedder) -> None:
    built = build_index(tiny_book(), embedder=embedder)
    store = InMemoryBlobStore()
    write_index(store, built)
    prefix = f"kb/{built.book_id}/{built.version}/"
    assert store.exists(prefix + "embeddings.npy") and store.exists(prefix + "embedder/weights.int8.npz")
    assert built.version != build_index(tiny_book()).version  # the model is part of the version

    hybrid = load_knowledge_base(store)  # the query embedder comes from the index itself
    assert hybrid.embedder is not None and hybrid.embedder.name == "tiny-bert"
    lexical = load_knowledge_base(store, dense=False)
    assert lexical.embedder is None

    with serving(hybrid) as client:
        body = client.post("/search/semantic", json={"query": "inventory policy reorder point"}).json()
    assert body["metadata"]["retrieval"] == "hybrid"
    scores = [result["score"] for result in body["results"]]
    assert body["results"] and scores == sorted(scores, reverse=True)
    assert {result["id"] for result in body["results"]} & {"algo_2_1", "section_2_2", "chunk_2_2_1"}
