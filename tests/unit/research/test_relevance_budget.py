"""Screening's embedding time is bounded: past it the rest of the candidates are scored lexically, and
texts already embedded in this process are not embedded again."""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from functions.research.relevance import RelevanceScorer


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
