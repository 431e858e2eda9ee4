"""Evidence chunks: sentences cut from a source's text with their offsets, ranked against the question."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from functions.common.text import sentence_spans

if TYPE_CHECKING:
    import Stemmer

# bm25s (which loads numpy and scipy) and PyStemmer are imported when an index is first built, not with
# this module: the answer and step handlers import it, and their cold start should not pay for them.

MIN_CHUNK_CHARS = 40
MAX_CHUNK_CHARS = 600


def chunk_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each evidence chunk of `text`: its sentences, a very short one joined to the next."""
    merged: list[tuple[int, int]] = []
    for begin, end in sentence_spans(text):
        if merged and merged[-1][1] - merged[-1][0] < MIN_CHUNK_CHARS:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((begin, end))
    return [(begin, end) for begin, end in merged if end - begin >= MIN_CHUNK_CHARS // 2]


def bounded(text: str, start: int, end: int) -> tuple[int, int]:
    """A span no longer than MAX_CHUNK_CHARS, cut at a word boundary."""
    if end - start <= MAX_CHUNK_CHARS:
        return start, end
    cut = text.rfind(" ", start, start + MAX_CHUNK_CHARS)
    return start, cut if cut > start else start + MAX_CHUNK_CHARS


class Bm25Index:
    """BM25 over a set of texts, built once and asked many queries."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s
        import Stemmer

        self.size = len(texts)
        self._stemmer: Stemmer.Stemmer = Stemmer.Stemmer("english")
        self._retriever: Any = bm25s.BM25()
        if texts:
            corpus = bm25s.tokenize(list(texts), stopwords="en", stemmer=self._stemmer, show_progress=False)
            self._retriever.index(corpus, show_progress=False)

    def scores(self, query: str) -> list[float]:
        """Every text's BM25 against the query, scaled to 0..1 by the best (all 0 without a match)."""
        if not self.size:
            return []
        import bm25s
        import numpy as np

        tokens = bm25s.tokenize(
            [query], stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False
        )
        vocabulary = self._retriever.vocab_dict
        usable = [token for token in tokens[0] if token in vocabulary]
        if not usable:
            return [0.0] * self.size
        scores = np.asarray(self._retriever.get_scores(usable), dtype=np.float64)
        best = float(scores.max())
        return [float(value / best) if best > 0 else 0.0 for value in scores]

    def mentions(self, query: str) -> bool:
        """Whether any text shares a term with the query."""
        return any(value > 0 for value in self.scores(query))


def bm25_scores(query: str, texts: Sequence[str]) -> list[float]:
    """BM25 of every text against one query (see Bm25Index for several queries over the same texts)."""
    return Bm25Index(texts).scores(query)
