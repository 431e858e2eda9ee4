"""A tiny random BERT written as a sentence-transformers model directory (safetensors, config, vocab)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np

from functions.common.ml.minilm import MiniLmEmbedder

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


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    normalised: np.ndarray = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    result: np.ndarray = normalised * weight + bias
    return result


def reference_embedding(embedder: MiniLmEmbedder, ids: list[int]) -> np.ndarray:
    """One text's sentence vector by the textbook BERT forward pass, in float64 from the raw weights,
    head by head with an exact erf: what the optimised numpy pass must reproduce."""
    w = {name: value.astype(np.float64) for name, value in embedder.weights.items()}
    heads = embedder.config.num_attention_heads
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][: len(ids)]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    erf = np.vectorize(math.erf)
    for layer in range(embedder.config.num_hidden_layers):
        p = f"encoder.layer.{layer}."

        def linear(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
            return v @ w[f"{p}{name}.weight"].T + w[f"{p}{name}.bias"]

        q, k, v = (linear(x, f"attention.self.{name}") for name in ("query", "key", "value"))
        size = q.shape[1] // heads
        context = []
        for head in range(heads):
            part = slice(head * size, (head + 1) * size)
            scores = q[:, part] @ k[:, part].T / math.sqrt(size)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            context.append(probs / probs.sum(-1, keepdims=True) @ v[:, part])
        attended = linear(np.concatenate(context, axis=1), "attention.output.dense")
        x = _layer_norm(
            x + attended, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]
        )
        hidden = linear(x, "intermediate.dense")
        hidden = hidden * 0.5 * (1 + erf(hidden / math.sqrt(2)))
        x = _layer_norm(
            x + linear(hidden, "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    pooled: np.ndarray = x.mean(axis=0)
    normalised: np.ndarray = pooled / np.linalg.norm(pooled)
    return normalised
