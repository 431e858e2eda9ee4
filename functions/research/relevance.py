"""How relevant a candidate paper is to a research goal: semantic similarity and term overlap, calibrated.

A goal has several aspects: the goal itself, each of its concepts (facets) and one sub-question per
concept. A paper is relevant when it answers any one aspect well, so a paper that covers one concept of
a three-concept goal can pass. Per aspect and paper, two features:
  - `semantic`: the cosine of their MiniLM sentence embeddings (title + abstract of the paper);
  - `lexical`: the share of the aspect's (lightly stemmed) terms in the title and abstract. This is BM25
    with a flat IDF: the candidates were retrieved by these very terms, so an IDF over them says
    nothing, and a corpus-wide one is not available here.
A logistic model turns the two into the probability that the paper is about the aspect. Its
coefficients were fitted on data, not chosen: `bench/calibrate_relevance.py` fits them on real
scholarly records (a concept from each paper's title against its own abstract, and against other papers'
abstracts that share a term with it, as the other results of a search would) and prints them with
their held-out accuracy. Without weights for
the embedder, the lexical-only model (fitted the same way) is used, and the explanation says so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from functions.common.embedder import Embedder
from functions.search.text import stem, terms

FULL_CREDIT_TERMS = 2
# Fitted by `python -m bench.calibrate_relevance` (see its output for data, accuracy and AUC).
SEMANTIC_MODEL = (-2.29, 3.65, 2.65)  # bias, semantic weight, lexical weight (held-out AUC 0.855)
LEXICAL_MODEL = (-1.80, 3.92)  # bias, lexical weight (held-out AUC 0.828)


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

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _sigmoid(value: float) -> float:
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, value))))


def probability(semantic: float | None, lexical: float) -> float:
    if semantic is None:
        bias, weight = LEXICAL_MODEL
        return _sigmoid(bias + weight * lexical)
    bias, semantic_weight, lexical_weight = SEMANTIC_MODEL
    return _sigmoid(bias + semantic_weight * semantic + lexical_weight * lexical)


def stems(text: str) -> set[str]:
    return {stem(word) for word in terms(text)}


def term_coverage(aspect: str, document_stems: set[str]) -> float:
    """Share of the aspect's terms in the document; a one-term aspect is weak evidence and counts half
    (any paper may say 'networks'; few say 'graph neural networks')."""
    wanted = stems(aspect)
    if not wanted:
        return 0.0
    return len(wanted & document_stems) / len(wanted) * min(1.0, len(wanted) / FULL_CREDIT_TERMS)


class RelevanceScorer:
    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder

    @property
    def method(self) -> str:
        return "semantic+lexical" if self.embedder is not None else "lexical"

    def features(self, aspects: list[str], documents: list[str]) -> tuple[np.ndarray | None, np.ndarray]:
        """(semantic, lexical) matrices of shape (documents, aspects); semantic is None without an embedder."""
        document_stems = [stems(document) for document in documents]
        lexical = np.array(
            [[term_coverage(aspect, found) for aspect in aspects] for found in document_stems],
            dtype=np.float32,
        ).reshape(len(documents), len(aspects))
        if self.embedder is None or not documents:
            return None, lexical
        aspect_vectors = self.embedder.embed(aspects)
        document_vectors = self.embedder.embed(documents)
        return document_vectors @ aspect_vectors.T, lexical

    def score(self, goal: str, aspects: list[str], documents: list[str]) -> list[Relevance]:
        """One Relevance per document; `aspects` should start with the goal."""
        aspects = list(dict.fromkeys([goal, *aspects]))
        semantic, lexical = self.features(aspects, documents)
        results = []
        for row in range(len(documents)):
            probabilities = [
                probability(None if semantic is None else float(semantic[row, col]), float(lexical[row, col]))
                for col in range(len(aspects))
            ]
            best = max(range(len(aspects)), key=lambda col: (probabilities[col], -col))
            results.append(
                Relevance(
                    probability=round(probabilities[best], 4),
                    goal_probability=round(probabilities[0], 4),
                    best_aspect=aspects[best],
                    semantic=None if semantic is None else round(float(semantic[row, best]), 4),
                    lexical=round(float(lexical[row, best]), 4),
                    method=self.method,
                )
            )
        return results
