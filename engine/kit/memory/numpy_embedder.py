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
import importlib.util
import json
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kit.memory.embeddings import (
    DEFAULT_MODEL,
    EmbeddingError,
    model_id_for,
    normalise,
    resolve_model,
)

REQUIRED_FILES = ("config.json", "tokenizer.json", "model.safetensors")

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


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_new": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh,
    "relu": lambda x: np.maximum(x, np.float32(0)),
}


# --------------------------------------------------------------------------- BLAS threads

_BLAS: list[Any] = []  # [threadpoolctl controller or None], found on first use


def _one_blas_thread() -> Any:
    """A context with BLAS on one thread, for the B·H small matrix products of attention: OpenBLAS
    wakes its thread pool for each of them, which on a busy 2-core machine is ~50x slower than one
    thread. Uses threadpoolctl when it is installed (it comes with sentence-transformers), else
    changes nothing."""
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS.append(ThreadpoolController())
        except Exception:  # not installed, or cannot inspect the loaded libraries
            _BLAS.append(None)
    controller = _BLAS[0]
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


# --------------------------------------------------------------------------- availability


def numpy_backend_problem(location: str | Path) -> str | None:
    """Why the NumPy backend cannot run `location` (None if it can). Imports nothing heavy."""
    missing = [m for m in ("tokenizers", "safetensors") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed (needed by the numpy embedding backend)"
    folder = Path(location)
    if not folder.is_dir():
        return f"model {str(location)!r} is not a local folder (the numpy embedding backend reads model files from disk)"
    absent = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if absent:
        return f"model folder {str(folder)!r} has no {', '.join(absent)} (needed by the numpy embedding backend)"
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot read {folder / 'config.json'}: {exc}"
    if config.get("model_type", "bert") != "bert":
        return f"the numpy embedding backend runs BERT models only, not {config.get('model_type')!r}"
    if str(config.get("hidden_act", "gelu")) not in _ACTIVATIONS:
        return f"the numpy embedding backend does not know the activation {config.get('hidden_act')!r}"
    if str(config.get("position_embedding_type", "absolute")) != "absolute":
        return "the numpy embedding backend supports absolute position embeddings only"
    modules = folder / "modules.json"
    if modules.is_file():
        try:
            kinds = {str(m.get("type", "")).rsplit(".", 1)[-1] for m in json.loads(modules.read_text(encoding="utf-8"))}
        except (OSError, ValueError, AttributeError) as exc:
            return f"cannot read {modules}: {exc}"
        extra = sorted(kinds - {"Transformer", "Pooling", "Normalize"})
        if extra:
            return f"the numpy embedding backend runs Transformer + Pooling (+ Normalize) models, not {', '.join(extra)}"
    pooling = _pooling_config(folder)
    if pooling is not None and not pooling.get("pooling_mode_mean_tokens", False):
        return "the numpy embedding backend supports mean pooling only"
    return None


def _pooling_config(folder: Path) -> dict[str, Any] | None:
    for candidate in (folder / "1_Pooling" / "config.json",):
        if candidate.is_file():
            return json.loads(candidate.read_text(encoding="utf-8"))
    return None


# --------------------------------------------------------------------------- the model


class _Bert:
    """Weights and hyper-parameters of one BERT encoder, loaded once."""

    def __init__(self, folder: Path):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.activation = _ACTIVATIONS[str(config.get("hidden_act", "gelu"))]
        self.max_positions = int(config.get("max_position_embeddings", 512))

        max_length = self.max_positions
        self.lower_case = False
        st_config = folder / "sentence_bert_config.json"
        if st_config.is_file():
            st_settings = json.loads(st_config.read_text(encoding="utf-8"))
            max_length = int(st_settings.get("max_seq_length") or max_length)
            self.lower_case = bool(st_settings.get("do_lower_case", False))  # sentence-transformers lowers first
        self.max_length = min(max_length, self.max_positions)

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_length)
        self.tokenizer.no_padding()  # batches are padded here, after sorting by length
        self.pad_id = int(config.get("pad_token_id", 0) or 0)

        raw = load_file(str(folder / "model.safetensors"))
        weights = {}
        for key, value in raw.items():  # "bert.embeddings…" (BertForX exports) or "embeddings…"
            weights[key[5:] if key.startswith("bert.") else key] = value

        def get(name: str) -> np.ndarray:
            try:
                return np.ascontiguousarray(weights[name], dtype=np.float32)
            except KeyError as exc:
                raise EmbeddingError(f"{folder / 'model.safetensors'} has no weight {name!r}") from exc

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

    def _layer_norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        centred = x - mean
        var = np.mean(centred * centred, axis=-1, keepdims=True)
        return centred / np.sqrt(var + np.float32(self.eps)) * params[0] + params[1]

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
            with _one_blas_thread():
                scores = q @ k_t  # (B, H, L, L)
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            with _one_blas_thread():
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


_MODELS: dict[str, _Bert] = {}
_FAILED: dict[str, str] = {}
_LOCK = threading.Lock()
_FORWARD_LOCK = threading.Lock()


def _load(location: str) -> _Bert:
    """One model per process per folder; a folder that failed to load is not tried again."""
    with _LOCK:
        model = _MODELS.get(location)
        if model is not None:
            return model
        if location in _FAILED:
            raise EmbeddingError(_FAILED[location])
        problem = numpy_backend_problem(location)
        if problem is None:
            try:
                model = _Bert(Path(location))
            except EmbeddingError as exc:
                problem = str(exc)
            except Exception as exc:
                problem = f"cannot load embedding model {location!r} with numpy ({exc.__class__.__name__}: {exc})"
        if model is None:
            _FAILED[location] = problem or "cannot load"
            raise EmbeddingError(_FAILED[location])
        _MODELS[location] = model
        return model


class NumpyEmbedder:
    """NumPy backend: same `model_id` and vectors as `SentenceTransformerEmbedder`; loads on first use.

    Texts are sorted by token count and encoded at most `batch_size` at a time and at most
    `token_budget` padded tokens per batch: padding stays small and the arrays stay in cache."""

    def __init__(self, name: str = DEFAULT_MODEL, *, batch_size: int = 32, token_budget: int = 2048):
        self.name = name
        self.location = resolve_model(name)
        self.model_id = model_id_for(name)
        self.batch_size = max(1, int(batch_size))
        self.token_budget = max(1, int(token_budget))
        self._dim: int | None = None
        self.calls = 0  # encode calls (texts counted in `encoded`), as SentenceTransformerEmbedder
        self.encoded = 0

    @property
    def model(self) -> _Bert:
        return _load(self.location)

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            try:  # from the config files, without loading the weights
                folder = Path(self.location)
                pooling = _pooling_config(folder)
                if pooling and pooling.get("word_embedding_dimension"):
                    self._dim = int(pooling["word_embedding_dimension"])
                else:
                    self._dim = int(json.loads((folder / "config.json").read_text(encoding="utf-8"))["hidden_size"])
            except (OSError, ValueError, KeyError):
                self._dim = self.model.hidden
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.encoded += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model
        cleaned = [str(t).strip() for t in texts]  # stripped (and lowered if configured), as s-t does
        if model.lower_case:
            cleaned = [t.lower() for t in cleaned]
        encodings = model.tokenizer.encode_batch(cleaned)
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        out = np.empty((len(encodings), model.hidden), dtype=np.float32)
        start = 0
        while start < len(order):
            length = len(encodings[order[start]].ids)  # the longest of this batch
            rows = max(1, min(self.batch_size, self.token_budget // length))
            chunk = order[start:start + rows]
            start += rows
            ids = np.full((len(chunk), length), model.pad_id, dtype=np.int64)
            types = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.int64)
            for row, i in enumerate(chunk):
                e = encodings[i]
                n = len(e.ids)
                ids[row, :n] = e.ids
                types[row, :n] = e.type_ids
                mask[row, :n] = e.attention_mask
            with _FORWARD_LOCK:  # one forward at a time: BLAS thread limits are process-wide
                out[chunk] = model.forward(ids, types, mask)
        return out

    def __repr__(self) -> str:
        return f"NumpyEmbedder({self.model_id!r}, location={self.location!r})"
