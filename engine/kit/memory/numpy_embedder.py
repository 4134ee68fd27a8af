"""all-MiniLM-L6-v2 (any BERT sentence-transformers model with mean pooling) in plain NumPy.

The same vectors as the sentence-transformers backend, without importing torch: weights come from
`model.safetensors` (`safetensors.numpy`), tokens from `tokenizer.json` (`tokenizers`), and the
forward pass (embeddings + LayerNorm, N encoder layers with masked self-attention and exact erf GELU,
mean pooling over the attention mask, L2 normalisation) is a few float32 matrix products. Importing
this module and loading the model takes well under a second, where torch + sentence-transformers
take 5–9 s, so short-lived processes (`kit memory search`, active recall, `kit dream`) stay fast.

Architecture numbers (layers, heads, LayerNorm eps, activation) are read from `config.json`; the
sequence length from `sentence_bert_config.json`; the pooling mode from `1_Pooling/config.json`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from kit.memory.embedder_base import (
    DEFAULT_MODEL,
    model_id_for,
    normalise,
)
from kit.memory.model_files import (
    BertConfig,
    LocalBertEmbedder,
    Tokens,
    bert_folder_problem,
    load_weights,
    weight,
)

# --------------------------------------------------------------------------- erf
# NumPy has no erf. erf(|x|) is interpolated linearly on a table of math.erf at steps of 1/4096 over
# [0, 6] (erf(6) = 1 to double precision): the interpolation error is at most h²/8·max|erf''| ≈ 7e-9,
# and the evaluation, in float64 and in cache-sized blocks, is ~5x faster than a rational
# approximation. The table (24,577 points) is built on first use, in a few milliseconds.
_ERF_STEPS = 4096
_ERF_LIMIT = 6.0
_ERF_BLOCK = 1 << 16


@functools.cache
def _erf_table() -> tuple[np.ndarray, np.ndarray]:
    points = np.array([math.erf(i / _ERF_STEPS) for i in range(int(_ERF_LIMIT * _ERF_STEPS) + 2)])
    return points[:-1].copy(), np.diff(points)


def erf(x: Any) -> np.ndarray:
    """Vectorised erf in float64, absolute error < 1e-8 against math.erf."""
    values, slopes = _erf_table()
    x = np.asarray(x)
    flat = x.reshape(-1)
    out = np.empty(flat.shape, dtype=np.float64)
    for start in range(0, flat.size, _ERF_BLOCK):
        part = flat[start:start + _ERF_BLOCK]
        a = np.abs(part, dtype=np.float64)
        np.minimum(a, _ERF_LIMIT, out=a)
        a *= _ERF_STEPS
        index = a.astype(np.intp)
        a -= index
        a *= slopes[index]
        a += values[index]
        out[start:start + _ERF_BLOCK] = np.copysign(a, part)
    return out.reshape(x.shape)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)), in float32 (erf evaluated in float64)."""
    half = 0.5 * x
    return (half + half * erf(x * np.float32(1 / np.sqrt(2.0))).astype(np.float32)).astype(np.float32, copy=False)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    inner = np.float32(np.sqrt(2.0 / np.pi)) * (x + np.float32(0.044715) * x * x * x)
    return (0.5 * x * (1.0 + np.tanh(inner))).astype(np.float32, copy=False)


_ACTIVATIONS = MappingProxyType({
    "gelu": gelu,
    "gelu_new": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh,
    "relu": lambda x: np.maximum(x, np.float32(0)),
})


# --------------------------------------------------------------------------- BLAS threads


def _blas_controller() -> Any:
    """threadpoolctl's controller when it is installed (it comes with sentence-transformers), else None."""
    try:
        from threadpoolctl import ThreadpoolController

        return ThreadpoolController()
    except Exception:  # not installed, or cannot inspect the loaded libraries
        return None


def numpy_backend_problem(location: str | Path) -> str | None:
    """Why the NumPy backend cannot run `location` (None if it can). Imports nothing heavy."""
    return bert_folder_problem(location, "numpy")


# --------------------------------------------------------------------------- the model


class _Bert:
    """Weights, tokenizer and hyper-parameters of one BERT encoder, loaded once."""

    def __init__(self, folder: Path):
        config = self.config = BertConfig.read(folder)
        self.layers, self.heads, self.hidden = config.layers, config.heads, config.hidden
        self.width = config.hidden
        self._forward_lock = threading.Lock()  # one forward at a time: BLAS thread limits are process-wide
        self.head_dim, self.eps = config.head_dim, config.eps
        self.activation = _ACTIVATIONS[config.activation]
        self.tokens = Tokens(folder, config)
        self.blas = _blas_controller()
        get = functools.partial(weight, load_weights(folder), folder)

        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")
        self.emb_ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.blocks = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            # one (hidden, 3·hidden) product for query, key and value; weights transposed once
            qkv_w = np.concatenate([get(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")], axis=0)
            qkv_b = np.concatenate([get(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            self.blocks.append((
                np.ascontiguousarray(qkv_w.T), qkv_b,
                np.ascontiguousarray(get(p + "attention.output.dense.weight").T), get(p + "attention.output.dense.bias"),
                (get(p + "attention.output.LayerNorm.weight"), get(p + "attention.output.LayerNorm.bias")),
                np.ascontiguousarray(get(p + "intermediate.dense.weight").T), get(p + "intermediate.dense.bias"),
                np.ascontiguousarray(get(p + "output.dense.weight").T), get(p + "output.dense.bias"),
                (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias")),
            ))

    def _one_blas_thread(self) -> Any:
        """BLAS on one thread for the B·H small matrix products of attention: OpenBLAS wakes its
        thread pool for each of them, which on a busy 2-core machine is ~50x slower than one thread."""
        if self.blas is None:
            return contextlib.nullcontext()
        return self.blas.limit(limits=1, user_api="blas")

    def _layer_norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        centred = x - mean
        var = np.mean(centred * centred, axis=-1, keepdims=True)
        return centred / np.sqrt(var + np.float32(self.eps)) * params[0] + params[1]

    def infer(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with self._forward_lock:
            return self.forward(ids, types, mask)

    def forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled, L2-normalised sentence vectors for one padded batch (B, L)."""
        batch, length = ids.shape
        heads, head_dim, hidden = self.heads, self.head_dim, self.hidden
        x = self.word[ids] + self.position[:length][None, :, :] + self.token_type[types]
        x = self._layer_norm(x, self.emb_ln).reshape(batch * length, hidden)
        # additive mask over keys: padded positions get the most negative float32 (as transformers)
        bias = ((1.0 - mask.astype(np.float32)) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head_dim))
        for qkv_w, qkv_b, out_w, out_b, ln1, in_w, in_b, ffn_w, ffn_b, ln2 in self.blocks:
            qkv = x @ qkv_w + qkv_b  # (B·L, 3·hidden)
            qkv = qkv.reshape(batch, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)  # (3, B, H, L, d)
            # contiguous operands: numpy's stacked matmul only reaches BLAS for them (10x faster)
            q = np.ascontiguousarray(qkv[0]) * scale
            k_t = np.ascontiguousarray(qkv[1].transpose(0, 1, 3, 2))
            v = np.ascontiguousarray(qkv[2])
            with self._one_blas_thread():
                scores = q @ k_t  # (B, H, L, L)
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            with self._one_blas_thread():
                context = scores @ v
            context = context.transpose(0, 2, 1, 3).reshape(batch * length, hidden)
            x = self._layer_norm(context @ out_w + out_b + x, ln1)
            h = self.activation(x @ in_w + in_b)
            x = self._layer_norm(h @ ffn_w + ffn_b + x, ln2)
        x = x.reshape(batch, length, hidden)
        weights = mask.astype(np.float32)[:, :, None]
        summed = (x * weights).sum(axis=1)
        counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
        return normalise(summed / counts)


class NumpyEmbedder(LocalBertEmbedder):
    """NumPy backend: same `model_id` and vectors as `SentenceTransformerEmbedder`; loads on first use.

    Texts are sorted by token count and encoded at most `batch_size` at a time and at most
    `token_budget` padded tokens per batch: padding stays small and the arrays stay in cache."""

    backend = "numpy"
    runtime = "numpy"

    def __init__(self, name: str = DEFAULT_MODEL, *, batch_size: int = 32, token_budget: int = 2048):
        super().__init__(name, model_id_for(name), batch_size=batch_size, token_budget=token_budget)

    def _load(self, folder: Path) -> _Bert:
        return _Bert(folder)

    @property
    def model(self) -> _Bert:
        """The loaded model; a folder that failed to load is not tried again by this object."""
        return self._model()

    def __repr__(self) -> str:
        return f"NumpyEmbedder({self.model_id!r}, location={self.location!r})"
