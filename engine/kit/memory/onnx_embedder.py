"""all-MiniLM-L6-v2 (any BERT sentence-transformers model with mean pooling) on ONNX Runtime.

The graph is built from the model's own safetensors weights on first use (kit.memory.onnx_export,
no torch) and kept under the user's data dir; tokens come from `tokenizer.json` exactly as the NumPy
backend makes them. Texts are sorted by token count and run in batches of at most `token_budget`
padded tokens (small batches stay in the CPU caches: measured fastest here), with ONNX Runtime's
intra-op threads set to the cores this process may use.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kit.memory.embedder_base import (
    DEFAULT_MODEL,
    EmbeddingError,
    available_cores,
    model_id_for,
    resolve_model,
)
from kit.memory.model_files import BertConfig, Tokens, bert_folder_problem, vector_dim

TOKEN_BUDGET = 1024  # padded tokens per batch: bench/memory.py --sweep measured 512-1024 fastest
MAX_ROWS = 32


class _Session:
    """One loaded model: the ONNX Runtime session and the tokenizer."""

    def __init__(self, folder: Path, quantize: str, threads: int):
        import onnxruntime as ort

        from kit.memory.onnx_export import ensure_model

        self.config = BertConfig.read(folder)
        self.tokens = Tokens(folder, self.config)
        self.file = ensure_model(folder, quantize)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # warnings about shape merging are noise here
        # idle worker threads sleep instead of spinning: on a machine shared with other work, spinning
        # burnt CPU for nothing and was slower in wall time too (measured with 2 threads under load)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(self.file.path), options, providers=["CPUExecutionProvider"])

    def run(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]


class OnnxEmbedder:
    """ONNX backend: the `model_id` and vectors of `SentenceTransformerEmbedder` (fp32), or of its
    own `model_id + '#int8'` with `quantize='int8'`; the model loads on first encode."""

    backend = "onnx"

    def __init__(self, name: str = DEFAULT_MODEL, *, quantize: str = "none", threads: int = 0,
                 token_budget: int = TOKEN_BUDGET, batch_size: int = MAX_ROWS):
        self.name = name
        self.location = resolve_model(name)
        self.quantize = quantize
        self.model_id = model_id_for(name) + ("#int8" if quantize == "int8" else "")
        self.threads = threads or available_cores()
        self.token_budget = max(1, int(token_budget))
        self.batch_size = max(1, int(batch_size))
        self._dim: int | None = None
        self._session: _Session | None = None
        self._failure: str | None = None
        self._lock = threading.Lock()
        self.calls = 0  # encode calls (texts counted in `encoded`), as the other backends
        self.encoded = 0

    @property
    def session(self) -> _Session:
        """The loaded model (built into the user's data dir first if needed). A model that failed
        to load is not tried again by this object."""
        with self._lock:
            if self._session is None:
                if self._failure:
                    raise EmbeddingError(self._failure)
                problem = bert_folder_problem(self.location, "onnx")
                if problem is None:
                    try:
                        self._session = _Session(Path(self.location), self.quantize, self.threads)
                    except EmbeddingError as exc:
                        problem = str(exc)
                    except Exception as exc:
                        problem = f"cannot load embedding model {self.location!r} with onnxruntime ({exc.__class__.__name__}: {exc})"
                if self._session is None:
                    self._failure = problem or "cannot load"
                    raise EmbeddingError(self._failure)
            return self._session

    @property
    def loaded(self) -> bool:
        return self._session is not None

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            try:  # from the config files, without loading the model
                self._dim = vector_dim(Path(self.location))
            except (OSError, ValueError, KeyError):
                self._dim = self.session.config.dim
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.encoded += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.session
        encodings = model.tokens.encode(texts)
        out = np.empty((len(encodings), model.config.dim), dtype=np.float32)
        for rows, ids, types, mask in model.tokens.batches(encodings, batch_size=self.batch_size,
                                                           token_budget=self.token_budget):
            out[rows] = model.run(ids, types, mask)
        return out

    def describe(self) -> dict[str, Any]:
        """What `kit memory status` shows about the loaded model (nothing is loaded for it)."""
        info: dict[str, Any] = {"backend": "onnx", "quantize": self.quantize, "threads": self.threads}
        if self._session is not None:
            info.update(file=str(self._session.file.path), sha256=self._session.file.sha256)
        return info

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.model_id!r}, location={self.location!r}, threads={self.threads})"
