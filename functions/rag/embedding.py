"""The dense half of hybrid retrieval: how an embedder's scores meet BM25's (the `Embedder` protocol
itself is `functions.common.ml.embedder.Embedder`).

An index built with an embedder stores one normalised vector per document and the embedder's own
(int8) weights next to them, so the container that serves the index embeds queries with exactly the
model that embedded the book. An index built without one is served lexical-only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

# Share of the (max-normalised) lexical score in the fused score; the rest is the cosine's share.
# Chosen on bench/rag_queries.json: see docs/rag.md for the measurements against RRF.
LEXICAL_SHARE = 0.5
# With the static query encoder (query_encoder.py), whose vectors approximate MiniLM's, the dense half
# counts less: chosen on the dev natural item questions (0.5: 34/47, 0.6: 35, 0.7: 36), docs/rag.md.
STATIC_LEXICAL_SHARE = 0.7


def fuse_scores(
    lexical: NDArray[np.float32],
    dense: NDArray[np.float32],
    lexical_share: float = LEXICAL_SHARE,
    kinds: NDArray[np.bool_] | None = None,
) -> NDArray[np.float32]:
    """Convex combination of the two scores, each divided by its best value (negative cosines count 0).

    With `kinds` (a mask over the documents: the numbered items), the cosines are divided by the best of
    their own kind: an item's vector embeds the sentences around it and a passage's its own prose, so the
    two kinds answer the same question with cosines of different ranges (passages run higher), and one
    divisor for both would let the passages' range flatten the items' differences."""
    lexical_top = float(lexical.max()) if lexical.size else 0.0
    dense = np.maximum(dense, 0)
    fused = np.zeros_like(lexical, dtype=np.float32)
    if lexical_top > 0:
        fused += np.float32(lexical_share) * lexical / np.float32(lexical_top)
    masks = [np.ones(dense.shape, dtype=bool)] if kinds is None else [kinds, ~kinds]
    for mask in masks:
        dense_top = float(dense[mask].max()) if mask.any() else 0.0
        if dense_top > 0:
            fused[mask] += np.float32(1 - lexical_share) * dense[mask] / np.float32(dense_top)
    return fused.astype(np.float32)
