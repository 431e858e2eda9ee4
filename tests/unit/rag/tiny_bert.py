"""A tiny random BERT written as a sentence-transformers model directory (safetensors, config, vocab)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", ".", "!", "?", "(", ")",
    "belief", "state", "value", "iteration", "policy", "inventory", "control", "un", "##der", "##certain",
    "##ty", "naive", "hello", "world", "the", "of", "a", "p", "##om", "##dp", "update", "algorithm",
]  # fmt: skip


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {}
    offset = 0
    blobs = []
    for name, tensor in tensors.items():
        data = np.ascontiguousarray(tensor, dtype=np.float32).tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def write_tiny_bert(directory: Path, hidden: int = 16, layers: int = 2, heads: int = 2) -> Path:
    rng = np.random.default_rng(7)
    tensors: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rng.normal(size=(len(VOCAB), hidden)),
        "embeddings.position_embeddings.weight": rng.normal(size=(64, hidden)) * 0.1,
        "embeddings.token_type_embeddings.weight": rng.normal(size=(2, hidden)) * 0.1,
        "embeddings.LayerNorm.weight": np.ones(hidden),
        "embeddings.LayerNorm.bias": np.zeros(hidden),
    }
    shapes = {
        "attention.self.query": (hidden, hidden),
        "attention.self.key": (hidden, hidden),
        "attention.self.value": (hidden, hidden),
        "attention.output.dense": (hidden, hidden),
        "intermediate.dense": (4 * hidden, hidden),
        "output.dense": (hidden, 4 * hidden),
    }
    for layer in range(layers):
        prefix = f"encoder.layer.{layer}."
        for name, shape in shapes.items():
            tensors[prefix + name + ".weight"] = rng.normal(size=shape) / np.sqrt(shape[1])
            tensors[prefix + name + ".bias"] = rng.normal(size=shape[0]) * 0.01
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[prefix + norm + ".weight"] = np.ones(hidden)
            tensors[prefix + norm + ".bias"] = np.zeros(hidden)
    directory.mkdir(parents=True, exist_ok=True)
    write_safetensors(directory / "model.safetensors", tensors)
    config = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "layer_norm_eps": 1e-12,
    }
    (directory / "config.json").write_text(json.dumps(config))
    (directory / "vocab.txt").write_text("\n".join(VOCAB), encoding="utf-8")
    (directory / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 32}))
    return directory
