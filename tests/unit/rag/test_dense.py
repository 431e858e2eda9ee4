"""The torch-free dense path: tokenizer, safetensors, numpy BERT, int8 weights, hybrid serving."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from functions.common.ml.minilm import MiniLmEmbedder, WordPieceTokenizer, read_safetensors
from functions.common.storage import InMemoryBlobStore, get_json, put_json
from functions.rag.embedding import fuse_scores
from functions.rag.index import QUERY_MAX_TOKENS, QueryEncoding, build_index, load_knowledge_base, write_index
from functions.rag.query_encoder import StaticQueryEncoder
from tests.unit.rag.serving import serving
from tests.unit.rag.tiny_bert import VOCAB, reference_embedding, write_tiny_bert
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


def test_the_cosines_are_divided_by_the_best_of_their_own_kind() -> None:
    # Passages' cosines run higher than items': the best item's cosine counts as much as the best
    # passage's, so the items' own differences are not flattened by the passages' range.
    lexical = np.zeros(4, dtype=np.float32)
    dense = np.array([0.9, 0.6, 0.5, 0.25], dtype=np.float32)
    items = np.array([False, False, True, True])
    fused = fuse_scores(lexical, dense, lexical_share=0.5, kinds=items)
    assert fused.tolist() == pytest.approx([0.5, 0.5 * 0.6 / 0.9, 0.5, 0.25])
    assert fuse_scores(lexical, dense, lexical_share=0.5).tolist() == pytest.approx(
        [0.5, 0.5 * 0.6 / 0.9, 0.5 * 0.5 / 0.9, 0.5 * 0.25 / 0.9]
    )
    only_passages = fuse_scores(lexical, dense, lexical_share=0.5, kinds=np.zeros(4, dtype=bool))
    assert only_passages.tolist() == pytest.approx(fuse_scores(lexical, dense, lexical_share=0.5).tolist())


def test_an_index_built_with_embeddings_is_served_hybrid(embedder: MiniLmEmbedder) -> None:
    built = build_index(tiny_book(), embedder=embedder)
    store = InMemoryBlobStore()
    write_index(store, built)
    prefix = f"kb/{built.book_id}/{built.version}/"
    assert store.exists(prefix + "embeddings.npy") and store.exists(prefix + "embedder/weights.int8.npz")
    assert built.version != build_index(tiny_book()).version  # the model is part of the version

    assert store.exists(prefix + "query_encoder/query_encoder.npz")
    # By default the queries are embedded by the model stored with the index.
    hybrid = load_knowledge_base(store)
    assert isinstance(hybrid.embedder, MiniLmEmbedder) and hybrid.embedder.name == "tiny-bert"
    static = load_knowledge_base(store, query_encoder="static")  # no transformer pass per query
    assert isinstance(static.embedder, StaticQueryEncoder) and static.embedder.name == "static:tiny-bert"
    lexical = load_knowledge_base(store, dense=False)
    assert lexical.embedder is None

    with serving(hybrid) as client:
        body = client.post("/search/semantic", json={"query": "inventory policy reorder point"}).json()
    assert body["metadata"]["retrieval"] == "hybrid"
    scores = [result["score"] for result in body["results"]]
    assert body["results"] and scores == sorted(scores, reverse=True)
    assert {result["id"] for result in body["results"]} & {"algo_2_1", "section_2_2", "chunk_2_2_1"}


@pytest.mark.parametrize(
    ("removed", "requested", "served"),
    [
        ("embedder_files", "minilm", StaticQueryEncoder),
        ("query_encoder_files", "static", MiniLmEmbedder),
    ],
)
def test_a_query_encoder_the_index_lacks_falls_back_to_the_other(
    embedder: MiniLmEmbedder, removed: str, requested: QueryEncoding, served: type
) -> None:
    store = InMemoryBlobStore()
    built = build_index(tiny_book(), embedder=embedder)
    write_index(store, built)
    manifest_key = f"kb/{built.book_id}/{built.version}/manifest.json"
    manifest = get_json(store, manifest_key)
    assert manifest is not None
    del manifest[removed]
    put_json(store, manifest_key, manifest)

    knowledge_base = load_knowledge_base(store, query_encoder=requested)
    assert isinstance(knowledge_base.embedder, served) and knowledge_base.retrieval == "hybrid"


def test_the_minilm_query_pass_reads_a_bounded_number_of_tokens(embedder: MiniLmEmbedder) -> None:
    store = InMemoryBlobStore()
    built = build_index(tiny_book(), embedder=embedder)
    write_index(store, built)
    config_key = f"kb/{built.book_id}/{built.version}/embedder/config.json"
    config = get_json(store, config_key)
    assert config is not None
    put_json(store, config_key, {**config, "max_length": 512})  # a model that reads long texts

    knowledge_base = load_knowledge_base(store)
    assert isinstance(knowledge_base.embedder, MiniLmEmbedder)
    assert knowledge_base.embedder.max_length == QUERY_MAX_TOKENS
    long_query = "belief state update for the inventory control policy " * 40  # ~320 tokens
    assert knowledge_base.search(long_query, 5).results


def test_the_forward_pass_matches_a_plain_bert_layer_by_layer(embedder: MiniLmEmbedder) -> None:
    texts = ["belief state update", "the value of a policy under inventory control uncertainty"]
    expected = np.stack(
        [reference_embedding(embedder, ids) for ids in (embedder.tokenizer.encode(t, 64) for t in texts)]
    )
    assert np.allclose(embedder.embed(texts), expected, atol=1e-5)
    assert np.allclose(embedder.embed(texts[:1])[0], expected[0], atol=1e-5)


def test_a_numbered_items_vector_embeds_its_context(embedder: MiniLmEmbedder) -> None:
    built = build_index(tiny_book(), embedder=embedder)
    assert built.embeddings is not None
    documents = [entity for entity in built.entities if entity.search_text]
    items = [index for index, entity in enumerate(documents) if entity.context]
    assert items
    for index in items:
        assert np.allclose(built.embeddings[index], embedder.embed([documents[index].context])[0], atol=1e-5)
    prose = next(index for index, entity in enumerate(documents) if entity.is_chunk)
    expected = embedder.embed([f"{documents[prose].heading}\n{documents[prose].content}"])[0]
    assert np.allclose(built.embeddings[prose], expected, atol=1e-5)


def test_the_static_query_encoder_is_fitted_to_the_models_vectors(embedder: MiniLmEmbedder) -> None:
    words = ["belief", "state", "value", "iteration", "policy", "inventory", "control", "update", "algorithm"]
    texts = [f"{a} {b} {c}" for a in words for b in words[::2] for c in words[::3] if len({a, b, c}) == 3]
    targets = embedder.embed(texts)
    encoder = StaticQueryEncoder.fit(embedder, texts, targets)
    mapped = encoder.embed(texts)
    assert np.allclose(np.linalg.norm(mapped, axis=1), 1.0, atol=1e-5)
    unmapped = StaticQueryEncoder(
        encoder._tokens, VOCAB, np.eye(mapped.shape[1], dtype=np.float32), "identity"
    ).embed(texts)
    # The fitted map brings the cheap vectors closer to the model's own than the raw token means are.
    assert (mapped * targets).sum(axis=1).mean() > (unmapped * targets).sum(axis=1).mean() + 0.05
    # Stop words and words of unknown pieces add nothing; a text without any known word gets a zero row.
    assert np.allclose(encoder.embed(["the belief of zebra"])[0], encoder.embed(["belief"])[0], atol=1e-6)
    assert not encoder.embed(["zebra"]).any()

    restored = StaticQueryEncoder.from_artifacts(encoder.to_artifacts())
    assert restored.name == "static:tiny-bert"
    assert (restored.embed(texts) * mapped).sum(axis=1).min() > 0.99
