"""A query embedder without a transformer pass: MiniLM's static token vectors, mapped into its sentence space.

Embedding a question with MiniLM costs ~21 ms on a small machine, most of the latency budget of
`/search/semantic`. This encoder embeds a query in well under a millisecond instead: each word's vector
is the mean of its WordPiece pieces' rows of the model's **input token-embedding matrix** (normalised),
the query's is the mean of its words' (stop words left out), and a linear map fitted at ingest time
(ridge regression, on the book's own sentences and item contexts against their MiniLM embeddings)
carries it into the space of the vectors the book was embedded with. On the book's questions its
vectors have a cosine of about 0.78 with MiniLM's own (the unmapped mean: 0.26).

The index stores the token matrix (int8 per row), the map and the vocabulary, so a container serving
the index needs neither the model nor its 23 MB of weights.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
from bm25s.stopwords import STOPWORDS_EN
from numpy.typing import NDArray

from functions.common.ml.minilm import MiniLmEmbedder, WordPieceTokenizer

INPUT_EMBEDDINGS = "embeddings.word_embeddings.weight"
# Ridge penalty of the map; the fit is flat between 0.3 and 3 (docs/rag.md).
RIDGE = 1.0
_WORD = re.compile(r"[A-Za-z][A-Za-z']+")
_STOP_WORDS = frozenset(STOPWORDS_EN)


class StaticQueryEncoder:
    """The `Embedder` protocol, for queries: one normalised row per text, in the book's embedding space."""

    def __init__(
        self,
        token_vectors: NDArray[np.float32],
        vocabulary: list[str],
        projection: NDArray[np.float32],
        name: str,
    ) -> None:
        self._tokenizer = WordPieceTokenizer(vocabulary)
        self._tokens = token_vectors
        self.projection = projection
        self.name = name
        self._word_vectors: dict[str, NDArray[np.float32] | None] = {}

    @classmethod
    def fit(
        cls, embedder: MiniLmEmbedder, texts: list[str], targets: NDArray[np.float32]
    ) -> StaticQueryEncoder:
        """The encoder whose vectors of `texts` come closest (least squares) to `targets`, their MiniLM vectors."""
        vocabulary = sorted(embedder.tokenizer.vocab, key=embedder.tokenizer.vocab.__getitem__)
        size = embedder.config.hidden_size
        encoder = cls(
            embedder.weights[INPUT_EMBEDDINGS].astype(np.float32),
            vocabulary,
            np.eye(size, dtype=np.float32),
            f"static:{embedder.name}",
        )
        bags = np.stack([encoder._bag(text) for text in texts])
        gram = bags.T @ bags + RIDGE * np.eye(size)
        encoder.projection = np.linalg.solve(gram, bags.T @ targets).astype(np.float32)
        return encoder

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        rows = np.stack([self._bag(text) for text in texts]) @ self.projection
        norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        embedded: NDArray[np.float32] = (rows / norms).astype(np.float32)
        return embedded

    def _bag(self, text: str) -> NDArray[np.float32]:
        """The mean of the text's word vectors (zeros when it has none)."""
        vectors = [
            vector
            for word in _WORD.findall(text)
            if word.lower() not in _STOP_WORDS and (vector := self._word_vector(word.lower())) is not None
        ]
        if not vectors:
            return np.zeros(self._tokens.shape[1], dtype=np.float32)
        bag: NDArray[np.float32] = np.mean(vectors, axis=0).astype(np.float32)
        return bag

    def _word_vector(self, word: str) -> NDArray[np.float32] | None:
        if word in self._word_vectors:
            return self._word_vectors[word]
        pieces = self._tokenizer.encode(word, 18)[1:-1]
        vector: NDArray[np.float32] | None = None
        if pieces and self._tokenizer.unk not in pieces:
            mean = self._tokens[pieces].mean(axis=0)
            norm = float(np.linalg.norm(mean))
            vector = (mean / norm).astype(np.float32) if norm > 0 else None
        if len(self._word_vectors) < 50_000:  # a bound on what arbitrary queries can make it keep
            self._word_vectors[word] = vector
        return vector

    def to_artifacts(self) -> dict[str, bytes]:
        scale = np.abs(self._tokens).max(axis=1, keepdims=True) / 127.0
        scale[scale == 0] = 1.0
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer,
            tokens=np.round(self._tokens / scale).astype(np.int8),
            scale=scale.astype(np.float32),
            projection=self.projection,
        )
        vocabulary = sorted(self._tokenizer.vocab, key=self._tokenizer.vocab.__getitem__)
        return {
            "query_encoder.npz": buffer.getvalue(),
            "query_encoder.json": json.dumps({"name": self.name}).encode(),
            "vocab.txt": "\n".join(vocabulary).encode("utf-8"),
        }

    @classmethod
    def from_artifacts(cls, files: dict[str, bytes]) -> StaticQueryEncoder:
        with np.load(io.BytesIO(files["query_encoder.npz"]), allow_pickle=False) as stored:
            tokens = (stored["tokens"].astype(np.float32) * stored["scale"]).astype(np.float32)
            projection = stored["projection"].astype(np.float32)
        name = json.loads(files["query_encoder.json"])["name"]
        return cls(tokens, files["vocab.txt"].decode("utf-8").split("\n"), projection, name)
