"""all-MiniLM-L6-v2 (any BERT sentence-transformers model with mean pooling) on ONNX Runtime.

The graph is built from the model's own safetensors weights on first use (kit.memory.onnx_export,
no torch) and kept under the user's data dir; tokens come from `tokenizer.json` exactly as the NumPy
backend makes them. Texts are sorted by token count and run in batches of at most `token_budget`
padded tokens (small batches stay in the CPU caches: measured fastest here), with ONNX Runtime's
intra-op threads set to the cores this process may use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kit.memory.embedder_base import (
    DEFAULT_MODEL,
    available_cores,
    model_id_for,
)
from kit.memory.model_files import BertConfig, LocalBertEmbedder, Tokens

TOKEN_BUDGET = 1024  # padded tokens per batch: the cheapest of 512-4096 in bench/_onnx_sweep.py
MAX_ROWS = 32


class _Session:
    """One loaded model: the ONNX Runtime session and the tokenizer."""

    def __init__(self, folder: Path, quantize: str, threads: int):
        import onnxruntime as ort

        from kit.memory.onnx_export import ensure_model

        self.config = BertConfig.read(folder)
        self.width = self.config.dim
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

    def infer(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]


class OnnxEmbedder(LocalBertEmbedder):
    """ONNX backend: the `model_id` and vectors of `SentenceTransformerEmbedder` (fp32), or of its
    own `model_id + '#int8'` with `quantize='int8'`; the model loads on first encode."""

    backend = "onnx"
    runtime = "onnxruntime"

    def __init__(self, name: str = DEFAULT_MODEL, *, quantize: str = "none", threads: int = 0,
                 token_budget: int = TOKEN_BUDGET, batch_size: int = MAX_ROWS):
        super().__init__(name, model_id_for(name) + ("#int8" if quantize == "int8" else ""),
                         batch_size=batch_size, token_budget=token_budget)
        self.quantize = quantize
        self.threads = threads or available_cores()

    def _load(self, folder: Path) -> _Session:
        return _Session(folder, self.quantize, self.threads)

    @property
    def session(self) -> _Session:
        """The loaded model (built into the user's data dir first if needed). A model that failed
        to load is not tried again by this object."""
        return self._model()

    def describe(self) -> dict[str, Any]:
        """What `kit memory status` shows about the loaded model (nothing is loaded for it)."""
        info: dict[str, Any] = {"backend": "onnx", "quantize": self.quantize, "threads": self.threads}
        if self._loaded is not None:
            info.update(file=str(self._loaded.file.path), sha256=self._loaded.file.sha256)
        return info

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.model_id!r}, location={self.location!r}, threads={self.threads})"
