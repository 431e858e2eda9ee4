"""Screening's embedding time is bounded: past it the rest of the candidates are scored lexically, and
texts already embedded in this process are not embedded again."""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from functions.research.retrieval.relevance import EmbeddingUnfinished, RelevanceScorer


class SlowEmbedder:
    """Stands behind the Embedder interface (as MiniLM does): deterministic vectors, a fixed cost."""

    def __init__(self, name: str, seconds_per_call: float) -> None:
        self.name = name
        self.seconds_per_call = seconds_per_call
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        time.sleep(self.seconds_per_call)
        self.embedded.extend(texts)
        rows = [
            np.frombuffer(text.encode().ljust(8, b"_")[:8], dtype=np.uint8).astype(np.float32)
            for text in texts
        ]
        matrix = np.stack(rows) if rows else np.zeros((0, 8), dtype=np.float32)
        norms = np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
        vectors: NDArray[np.float32] = (matrix / norms).astype(np.float32)
        return vectors


def test_past_its_embedding_time_the_rest_are_scored_lexically() -> None:
    embedder = SlowEmbedder("slow-a", seconds_per_call=0.1)
    documents = [f"sparse attention for long documents, study {i}" for i in range(160)]
    features = RelevanceScorer(embedder, embed_seconds=0.5).features(["sparse attention"], documents)
    assert features.semantic is not None
    embedded_rows = sum(1 for row in range(len(documents)) if features.semantic_at(row, 0) is not None)
    assert 0 < embedded_rows < len(documents)  # some batches fitted the time, not all
    unbounded = RelevanceScorer(SlowEmbedder("slow-b", 0.0)).features(["sparse attention"], documents)
    assert all(unbounded.semantic_at(row, 0) is not None for row in range(len(documents)))


def test_texts_embedded_once_in_the_process_are_not_embedded_again() -> None:
    embedder = SlowEmbedder("memo", seconds_per_call=0.0)
    documents = ["graph neural networks for drug discovery", "attention over molecular graphs"]
    RelevanceScorer(embedder).features(["drug discovery"], documents)
    first = list(embedder.embedded)
    RelevanceScorer(embedder).features(["drug discovery"], documents)
    assert embedder.embedded == first  # the second job asked for the same texts: no new forward pass


def test_a_scorer_asked_to_finish_stops_at_its_deadline_and_continues_from_its_vectors() -> None:
    """With `finish`, the deadline ends the call instead of a lexical rest; a further call that starts
    from the vectors kept embeds only what is left, and its scores are those of an unhurried scorer."""
    documents = [f"sparse attention for long documents, variant {i:03d}" for i in range(96)]
    aspects = ["sparse attention"]
    embedder = SlowEmbedder("resumable", seconds_per_call=0.1)
    known: dict[str, NDArray[np.float32]] = {}
    calls = 0
    while True:
        calls += 1
        scorer = RelevanceScorer(embedder, embed_seconds=0.25)
        scorer.resume(known, finish=True)
        try:
            features = scorer.features(aspects, documents)
        except EmbeddingUnfinished as unfinished:
            assert 0 <= unfinished.embedded < unfinished.wanted == len(documents)
            assert scorer.computed  # this iteration's work is handed back, not lost
            known = scorer.known
            continue
        break
    assert calls > 1
    assert len(embedder.embedded) == len(set(embedder.embedded))  # no text embedded twice
    unhurried = RelevanceScorer(SlowEmbedder("resumable", 0.0)).features(aspects, documents)
    assert features.semantic is not None and unhurried.semantic is not None
    assert np.array_equal(features.semantic, unhurried.semantic)


def test_without_finish_the_deadline_still_scores_the_rest_lexically() -> None:
    scorer = RelevanceScorer(SlowEmbedder("last-round", 0.1), embed_seconds=0.15)
    scorer.resume({}, finish=False)
    documents = [f"graph kernels, study {i}" for i in range(64)]
    features = scorer.features(["graph kernels"], documents)
    assert any(features.semantic_at(row, 0) is None for row in range(len(documents)))


def test_a_scorer_never_waits_for_the_processs_passes_past_its_deadline() -> None:
    """Every forward pass of the process is taken by other jobs' work: the scorer, aspects included,
    gives up at its deadline (continuing later with `finish`, lexically without) instead of waiting."""
    import threading

    from functions.research.retrieval import relevance

    passes = relevance._SHARED._passes
    release = threading.Event()
    holding = threading.Barrier(passes._count + 1)

    def hold() -> None:
        with passes.slot(team="busy"):
            holding.wait(60)
            release.wait(120)  # a scorer that waited for a pass would have one only then, and embed

    holders = [threading.Thread(target=hold) for _ in range(passes._count)]
    for thread in holders:
        thread.start()
    holding.wait(60)
    try:
        documents = [f"protein folding with language models, {i}" for i in range(20)]
        scorer = RelevanceScorer(SlowEmbedder("starved", 0.0), embed_seconds=0.2)
        scorer.resume({}, finish=True)
        try:
            scorer.features(["protein folding, a new aspect"], documents)
            raise AssertionError("the scorer should have stopped at its deadline")
        except EmbeddingUnfinished as unfinished:
            assert unfinished.embedded == 0
        last_round = RelevanceScorer(SlowEmbedder("starved", 0.0), embed_seconds=0.2)
        features = last_round.features(["protein folding, another aspect"], documents)
        assert all(features.semantic_at(row, 0) is None for row in range(len(documents)))
    finally:
        release.set()
        for thread in holders:
            thread.join(10)
