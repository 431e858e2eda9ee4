"""The candidate vectors a Screen iteration embedded, kept beside the job's other payloads for the next
iteration (`Screen` continues in a further iteration of the state machine rather than scoring what it
had no time to embed lexically: the ranking must not depend on how busy the machine is)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from functions.common.storage import BlobStore

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


@dataclass
class ScreenVectors:
    rounds: int = 0  # Screen iterations that ran out of embedding time so far
    vectors: dict[str, NDArray[np.float32]] = field(default_factory=dict)  # by `text_digest`


def load_vectors(data: BlobStore, key: str) -> ScreenVectors:
    import numpy as np

    stored = data.get_bytes(key)
    if stored is None:
        return ScreenVectors()
    with np.load(io.BytesIO(stored), allow_pickle=False) as arrays:
        digests = [str(digest) for digest in arrays["digests"]]
        return ScreenVectors(int(arrays["rounds"]), dict(zip(digests, arrays["vectors"], strict=True)))


def save_vectors(data: BlobStore, key: str, kept: ScreenVectors) -> None:
    import numpy as np

    buffer = io.BytesIO()
    digests = list(kept.vectors)
    vectors = np.stack([kept.vectors[d] for d in digests]) if digests else np.zeros((0, 0), np.float32)
    np.savez(
        buffer,
        rounds=np.array(kept.rounds),
        digests=np.array(digests, dtype="U32"),
        vectors=vectors.astype(np.float32),
    )
    data.put_bytes(key, buffer.getvalue())
