"""How relevant a candidate paper is to a research goal: semantic similarity and term overlap, calibrated.

A goal has several aspects: the goal itself, each of its concepts (facets) and one sub-question per
concept. A paper is relevant when it answers any one aspect well, so a paper that covers one concept of
a three-concept goal can pass. Per aspect and paper, three features:
  - `semantic`: the cosine of their MiniLM sentence embeddings (title + abstract of the paper);
  - `coverage`: the share of the aspect's (lightly stemmed) terms in the title and abstract, BM25 with a
    flat IDF (the candidates were retrieved by these very terms, so an IDF over them says nothing, and
    a corpus-wide one is not available here);
  - `complete`: whether all the terms of a several-term aspect are there.
A logistic model turns them into the probability that the paper is about the aspect. Its
coefficients were fitted on data, not chosen: `bench/calibrate_relevance.py` fits them on real
scholarly records (a concept from each paper's title against its own abstract, and against other papers'
abstracts that share a term with it, as the other results of a search would) and prints them with
their held-out accuracy. Without weights for
the embedder, the lexical-only model (fitted the same way) is used, and the explanation says so.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from functions.common.ml.embedder import Embedder
from functions.common.outbound.fair_slots import FairSlots

if TYPE_CHECKING:  # numpy is imported where features are computed: not on the handlers' import path
    import numpy as np
    from numpy.typing import NDArray
from functions.common.text import stems

FULL_CREDIT_TERMS = 2
# Embedding costs about 40 ms a candidate on one core: beyond this many, the candidates with the least
# term overlap are scored by the lexical model alone, so screening stays well inside a 45 s step.
MAX_EMBEDDED_DOCUMENTS = 250
BEYOND_CAP = "lexical (beyond the embedding cap)"
# Fitted by `python -m bench.calibrate_relevance` (see its output for data, accuracy and AUC).
SEMANTIC_MODEL = (-2.15, 3.75, 2.01, 0.84)  # bias, semantic, coverage, complete (AUC 0.853)
LEXICAL_MODEL = (-1.70, 3.57, 0.52)  # bias, coverage, complete (held-out AUC 0.828)


@dataclass(frozen=True)
class Relevance:
    probability: float  # best over the aspects: the relevance used by the threshold
    goal_probability: float  # for the goal as a whole
    best_aspect: str
    semantic: float | None  # features of the best aspect (None: no embedder)
    lexical: float
    method: str  # "semantic+lexical" or "lexical"

    @property
    def ranking_score(self) -> float:
        """For ordering passed candidates: a paper that answers the whole goal outranks one that
        answers a single concept equally well."""
        return (self.probability + self.goal_probability) / 2

    def explain(self) -> str:
        semantic = f"semantic {self.semantic:.2f}, " if self.semantic is not None else ""
        return (
            f"p={self.probability:.2f} ({self.method}: {semantic}terms {self.lexical:.2f}) "
            f"best match: {self.best_aspect!r}; whole goal p={self.goal_probability:.2f}"
        )


def _sigmoid(value: float) -> float:
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, value))))


def probability(semantic: float | None, coverage: float, complete: float) -> float:
    if semantic is None:
        bias, coverage_weight, complete_weight = LEXICAL_MODEL
        return _sigmoid(bias + coverage_weight * coverage + complete_weight * complete)
    bias, semantic_weight, coverage_weight, complete_weight = SEMANTIC_MODEL
    return _sigmoid(
        bias + semantic_weight * semantic + coverage_weight * coverage + complete_weight * complete
    )


def term_coverage(aspect: str, document_stems: set[str]) -> tuple[float, float]:
    """(coverage, complete): the share of the aspect's terms in the document, a one-term aspect counting
    half (any paper may say 'networks'; few say 'graph neural networks'); and 1 when every term of a
    several-term aspect is there (part of a phrase, 'training data' of 'hand-labelled training data',
    is weak evidence; all of it is strong)."""
    return _coverage(set(stems(aspect)), document_stems)


def _coverage(wanted: set[str], document_stems: set[str]) -> tuple[float, float]:
    if not wanted:
        return 0.0, 0.0
    found = len(wanted & document_stems)
    coverage = found / len(wanted) * min(1.0, len(wanted) / FULL_CREDIT_TERMS)
    return coverage, float(len(wanted) >= FULL_CREDIT_TERMS and found == len(wanted))


@dataclass(frozen=True)
class Features:
    """Per (document, aspect): semantic is None without an embedder."""

    semantic: NDArray[np.float32] | None
    coverage: NDArray[np.float32]
    complete: NDArray[np.float32]

    def semantic_at(self, row: int, col: int) -> float | None:
        """None without an embedder, or for a document beyond the embedding cap."""
        if self.semantic is None or math.isnan(float(self.semantic[row, col])):
            return None
        return float(self.semantic[row, col])

    def probability(self, row: int, col: int) -> float:
        return probability(
            self.semantic_at(row, col), float(self.coverage[row, col]), float(self.complete[row, col])
        )


class _SharedEmbedding:
    """The process's embedding work, shared by every task that scores relevance at once (the local
    runtime runs many jobs' steps in one process): one forward pass at a time per core, given in turn to
    the team served least recently, so that each task's time budget buys it a fair share instead of all
    of them stalling together; and
    the vectors of recent texts, which concurrent jobs on similar goals ask for again."""

    MAX_VECTORS = 8192

    def __init__(self) -> None:
        self._passes = FairSlots(max(1, os.cpu_count() or 1))
        self._vectors: OrderedDict[tuple[str, str], NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, embedder: Embedder, texts: list[str], ends: float | None) -> NDArray[np.float32] | None:
        """The texts' vectors, or None when `ends` (a monotonic time) passes before a pass is free."""
        import numpy as np

        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if (embedder.name, t) not in self._vectors]
        if missing:
            timeout = None if ends is None else max(0.0, ends - time.monotonic())
            if timeout is not None and timeout <= 0:
                return None
            with self._passes.slot(timeout=timeout) as granted:
                if not granted:
                    return None
                computed = embedder.embed(missing)
            with self._lock:
                for text, vector in zip(missing, computed, strict=True):
                    self._vectors[(embedder.name, text)] = vector
                while len(self._vectors) > self.MAX_VECTORS:
                    self._vectors.popitem(last=False)
        with self._lock:
            found = [self._vectors.get((embedder.name, t)) for t in texts]
        if any(vector is None for vector in found):  # evicted meanwhile by other tasks' texts
            return embedder.embed(texts)
        return np.stack([vector for vector in found if vector is not None]).astype(np.float32, copy=False)


_SHARED = _SharedEmbedding()


class EmbeddingUnfinished(Exception):
    """The embedding time ran out before every candidate to embed was embedded, and the caller asked to
    be told (`RelevanceScorer.resume(..., finish=True)`): it keeps `computed` and comes back for the rest."""

    def __init__(self, embedded: int, wanted: int) -> None:
        super().__init__(f"embedded {embedded} of {wanted} candidates before the time ran out")
        self.embedded = embedded
        self.wanted = wanted


def text_digest(embedder_name: str, text: str) -> str:
    """The key of a text's vector, kept between a step's iterations."""
    return hashlib.sha256(f"{embedder_name}\n{text}".encode()).hexdigest()[:24]


class RelevanceScorer:
    """`embed_seconds` bounds the time spent embedding documents (most lexically promising first) in one
    call. By default the rest are then scored lexically; after `resume(known, finish=True)` the scorer
    raises `EmbeddingUnfinished` instead, so a step can continue in a further iteration from the vectors
    it has (`known` and `computed`), and the ranking does not depend on how busy the machine was."""

    EMBED_BATCH = 16

    def __init__(self, embedder: Embedder | None, embed_seconds: float | None = None) -> None:
        self.embedder = embedder
        self.embed_seconds = embed_seconds
        self.known: dict[str, NDArray[np.float32]] = {}
        self.computed: dict[str, NDArray[np.float32]] = {}
        self.finish = False

    def resume(self, known: dict[str, NDArray[np.float32]], *, finish: bool) -> None:
        """Start from vectors an earlier iteration computed (by `text_digest`); with `finish`, a deadline
        that passes raises `EmbeddingUnfinished` rather than scoring the rest lexically."""
        self.known = dict(known)
        self.finish = finish

    @property
    def method(self) -> str:
        return "semantic+lexical" if self.embedder is not None else "lexical"

    def features(
        self, aspects: list[str], documents: list[str], max_embedded: int = MAX_EMBEDDED_DOCUMENTS
    ) -> Features:
        import numpy as np

        aspect_stems = [set(stems(aspect)) for aspect in aspects]
        document_stems = [set(stems(document)) for document in documents]
        pairs = np.array(
            [[_coverage(wanted, found) for wanted in aspect_stems] for found in document_stems],
            dtype=np.float32,
        ).reshape(len(documents), len(aspects), 2)
        semantic = None
        if self.embedder is not None and documents:
            overlap = pairs[:, :, 0].max(axis=1)
            embedded = sorted(range(len(documents)), key=lambda row: (-overlap[row], row))[:max_embedded]
            semantic = np.full((len(documents), len(aspects)), np.nan, dtype=np.float32)
            ends = time.monotonic() + self.embed_seconds if self.embed_seconds is not None else None
            # the aspects wait for a pass within the same time as the documents: a step never waits for
            # the process's passes past its budget, however many other jobs' passes are queued
            aspect_vectors = self._vectors(self.embedder, aspects, ends)
            if aspect_vectors is None:
                if self.finish:
                    raise EmbeddingUnfinished(0, len(embedded))
                return Features(semantic, pairs[:, :, 0], pairs[:, :, 1])
            wanted = aspect_vectors.T
            for start in range(0, len(embedded), self.EMBED_BATCH):
                rows = embedded[start : start + self.EMBED_BATCH]
                vectors = self._vectors(self.embedder, [documents[row] for row in rows], ends)
                if vectors is None:  # the time is spent
                    if self.finish:
                        raise EmbeddingUnfinished(start, len(embedded))
                    break  # the rest are scored lexically
                semantic[rows] = vectors @ wanted
        return Features(semantic, pairs[:, :, 0], pairs[:, :, 1])

    def _vectors(
        self, embedder: Embedder, texts: list[str], ends: float | None
    ) -> NDArray[np.float32] | None:
        import numpy as np

        digests = [text_digest(embedder.name, text) for text in texts]
        missing = {
            digest: text for text, digest in zip(texts, digests, strict=True) if digest not in self.known
        }
        if missing:
            vectors = _SHARED.embed(embedder, list(missing.values()), ends)
            if vectors is None:
                return None
            for digest, vector in zip(missing, vectors, strict=True):
                self.known[digest] = self.computed[digest] = vector
        return np.stack([self.known[digest] for digest in digests]).astype(np.float32, copy=False)

    def score(
        self, goal: str, aspects: list[str], documents: list[str], max_embedded: int = MAX_EMBEDDED_DOCUMENTS
    ) -> list[Relevance]:
        """One Relevance per document; the goal is always the first aspect."""
        aspects = list(dict.fromkeys([goal, *aspects]))
        features = self.features(aspects, documents, max_embedded)
        results = []
        for row in range(len(documents)):
            probabilities = [features.probability(row, col) for col in range(len(aspects))]
            best = max(range(len(aspects)), key=lambda col: (probabilities[col], -col))
            semantic = features.semantic_at(row, best)
            results.append(
                Relevance(
                    probability=round(probabilities[best], 4),
                    goal_probability=round(probabilities[0], 4),
                    best_aspect=aspects[best],
                    semantic=None if semantic is None else round(semantic, 4),
                    lexical=round(float(features.coverage[row, best]), 4),
                    method=self.method if semantic is not None or self.embedder is None else BEYOND_CAP,
                )
            )
        return results
