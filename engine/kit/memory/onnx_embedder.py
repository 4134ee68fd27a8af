"""all-MiniLM-L6-v2 (any BERT sentence-transformers model with mean pooling) on ONNX Runtime.

The graph is built from the model's own safetensors weights on first use (kit.memory.onnx_export,
no torch) and kept under the user's data dir; tokens come from `tokenizer.json` exactly as the NumPy
backend makes them. Texts are sorted by token count and run in batches of at most `token_budget`
padded tokens (small batches stay in the CPU caches: measured fastest here).

Parallel by batch, not by operator: the session runs each batch on ONE thread, and `threads`
batches (the cores this process may use) run at once, each on a thread of its own. ONNX Runtime's
intra-op pool splits every operator of a batch across the cores and joins them after it, a few
hundred times per batch; on this 2-core machine under load that cost 12 % more CPU and 17 % more
wall time than whole batches side by side (2,012 texts of the 200-note bench corpus, medians of 5
interleaved, load 3-5), for bitwise the same vectors (a batch's rows come out of the same kernels
whichever thread runs it).

The session loads a copy of the graph whose weights sit in a file beside it (ONNX external data),
kept in the user's cache dir (`$XDG_CACHE_HOME/kit/onnx/`): ONNX Runtime maps such weights into
memory instead of parsing and copying 90 MB of protobuf, so a session takes 0.04-0.05 s instead of
0.14-0.15 s (medians of 5-10 fresh processes, session 6). It is the same graph, so the vectors are
bitwise the same; the copy is written once per model file (about a second, 92 MB), and a missing,
changed or broken one is written again. Without it (an unwritable cache) the session loads the whole
file, as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kit.filewrite import atomic_write
from kit.fsutil import file_signature
from kit.memory.embedder_base import (
    DEFAULT_MODEL,
    available_cores,
    model_id_for,
)
from kit.memory.model_files import BertConfig, LocalBertEmbedder, Tokens
from kit.paths import user_cache_dir

if TYPE_CHECKING:
    from kit.memory.onnx_export import OnnxModel

TOKEN_BUDGET = 1024  # padded tokens per batch: the cheapest of 512-4096 in bench/_onnx_sweep.py
MAX_ROWS = 32
MAPPED_LAYOUT = 1  # bump when the mapped copy's layout changes: copies of another layout are rewritten
MIN_MAPPED = 1024  # bytes: smaller constants stay inside the graph (the onnx package's default)
ALIGNMENT = 64 * 1024  # ONNX Runtime maps a weight only at an offset on the allocation granularity
#                        (4 KiB on Linux and macOS, 64 KiB on Windows); else it reads it into memory


def mapped_dir() -> Path:
    """Where the mapped copies of the ONNX models live: derived data, safe to delete."""
    return user_cache_dir() / "onnx"


@dataclass(frozen=True)
class MappedCopy:
    """The copy of one ONNX model file: its graph, its weights and the stamp that vouches for both.
    Named after the model's sha256, so a name always holds the same bytes (a process that maps the
    weights of a copy another process writes again reads the same bytes)."""

    graph: Path
    data: Path
    stamp: Path

    @classmethod
    def of(cls, model: OnnxModel) -> MappedCopy:
        home = mapped_dir() / model.path.parent.name
        name = f"{model.path.stem}-{model.sha256[:16]}"
        return cls(home / f"{name}.onnx", home / f"{name}.onnx.data", home / f"{name}.json")

    def expected_stamp(self, model: OnnxModel) -> dict[str, Any]:
        return {"layout": MAPPED_LAYOUT, "sha256": model.sha256, "graph": file_signature(self.graph), "data": file_signature(self.data)}

    def is_current(self, model: OnnxModel) -> bool:
        """Written for this model file and not touched since (trusted by its stat, as the model
        file itself is by ensure_model: no 90 MB hash per process)."""
        try:
            stamp = json.loads(self.stamp.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return stamp == self.expected_stamp(model)

    def write(self, model: OnnxModel) -> None:
        """Write the copy from `model`'s file (in a folder of its own first: the onnx package
        appends to a data file that exists), then the stamp; drop copies of older model files."""
        import onnx
        from onnx.external_data_helper import set_external_data

        home = self.graph.parent
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=home, prefix=".writing-") as tmp:  # an unwritable cache fails here
            proto = onnx.load(str(model.path))
            offset = 0
            for tensor in proto.graph.initializer:
                size = len(tensor.raw_data)
                if size < MIN_MAPPED:
                    continue
                if size >= ALIGNMENT:  # smaller ones are read, not mapped: no padding for them
                    offset = -(-offset // ALIGNMENT) * ALIGNMENT
                set_external_data(tensor, self.data.name, offset=offset, length=size)
                tensor.data_location = onnx.TensorProto.EXTERNAL
                offset += size
            onnx.save_model(proto, str(Path(tmp) / self.graph.name))  # writes the weights beside it
            os.replace(Path(tmp) / self.data.name, self.data)  # the weights before the graph naming them
            os.replace(Path(tmp) / self.graph.name, self.graph)
        atomic_write(self.stamp, json.dumps(self.expected_stamp(model), sort_keys=True) + "\n")
        ours = {self.graph, self.data, self.stamp}
        for old in home.glob(f"{model.path.stem}-*"):
            if old not in ours:
                with contextlib.suppress(OSError):  # mapped by a process on Windows: left for later
                    old.unlink()


# ONNX Runtime 1.29+ sends usage telemetry from Linux and macOS too: a device id and an event
# store under ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ from the first session, and its
# uploader looks up mobile.events.data.microsoft.com seconds later (seen with 1.32 and strace). Kit
# promises no network beyond loopback, so it is off unless the person set these themselves. Read
# when the runtime starts: set before its import. Two names: ORT_DISABLE_TELEMETRY (what 1.32
# reads), ORT_TELEMETRY_DISABLED (its successor upstream; alone it did not stop 1.32).
TELEMETRY_OFF = (("ORT_DISABLE_TELEMETRY", "1"), ("ORT_TELEMETRY_DISABLED", "1"))


def import_runtime() -> Any:
    """`onnxruntime`, imported with its telemetry off (see TELEMETRY_OFF)."""
    for name, value in TELEMETRY_OFF:
        os.environ.setdefault(name, value)
    import onnxruntime as ort

    with contextlib.suppress(Exception):  # Windows' trace events (the API exists since 1.6)
        ort.disable_telemetry_events()
    return ort


class _Session:
    """One loaded model: the ONNX Runtime session and the tokenizer."""

    def __init__(self, folder: Path, quantize: str):
        ort = import_runtime()

        from kit.memory.onnx_export import ensure_model

        self.config = BertConfig.read(folder)
        self.width = self.config.dim
        self.tokens = Tokens(folder, self.config)
        self.file = ensure_model(folder, quantize)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # one thread per run (no intra-op pool): OnnxEmbedder runs batches side by side instead, and
        # one session serves concurrent runs
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # warnings about shape merging are noise here
        self.session = open_session(self.file, lambda path: ort.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]))

    def infer(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]


def open_session(model: OnnxModel, load: Callable[[Path], Any]) -> Any:
    """`load` the mapped copy of `model`, written first when missing or stale and written again
    when it does not load; when no copy can be written (no `onnx` package, an unwritable cache, a
    full disk) or the new one does not load either, `load` the model file itself."""
    copy = MappedCopy.of(model)
    if copy.is_current(model):
        try:
            return load(copy.graph)
        except Exception:  # damaged after its stamp was written (same size and mtime): write it again
            pass
    try:
        copy.write(model)
    except Exception:
        return load(model.path)
    try:
        return load(copy.graph)
    except Exception:
        return load(model.path)  # its error, if any, is the model's own


Batch = tuple[list[int], np.ndarray, np.ndarray, np.ndarray]  # (rows, ids, type ids, mask): Tokens.batches


def run_side_by_side(batches: Iterator[Batch], run: Callable[[Batch], None], threads: int) -> None:
    """`run` every batch, up to `threads` at a time: the calling thread and `threads - 1` helpers
    take the next batch as they finish one (batches come longest first, so the ends even out).
    The first error stops the others after their current batch and is raised here."""
    first = next(batches, None)
    second = next(batches, None) if first is not None else None
    if second is None or threads <= 1:  # a query, one window of short texts, or one thread: no helper
        for batch in (first, second):
            if batch is not None:
                run(batch)
        for batch in batches:
            run(batch)
        return
    pending = iter((first, second))
    lock = threading.Lock()  # Tokens.batches is a generator: one thread at a time advances it
    stop = threading.Event()

    def take() -> Batch | None:
        with lock:
            return next(pending, None) or next(batches, None)

    def drain() -> None:
        while not stop.is_set() and (batch := take()) is not None:
            try:
                run(batch)
            except BaseException:
                stop.set()
                raise

    with ThreadPoolExecutor(threads - 1, thread_name_prefix="kit-onnx") as pool:
        helpers = [pool.submit(drain) for _ in range(threads - 1)]
        drain()
    for helper in helpers:
        helper.result()


class OnnxEmbedder(LocalBertEmbedder):
    """ONNX backend: the `model_id` and vectors of `SentenceTransformerEmbedder` (fp32), or of its
    own `model_id + '#int8'` with `quantize='int8'`; the model loads on first encode. `threads`:
    batches run at once, one thread each (0: the cores this process may use)."""

    backend = "onnx"
    runtime = "onnxruntime"

    def __init__(self, name: str = DEFAULT_MODEL, *, quantize: str = "none", threads: int = 0,
                 token_budget: int = TOKEN_BUDGET, batch_size: int = MAX_ROWS):
        super().__init__(name, model_id_for(name) + ("#int8" if quantize == "int8" else ""),
                         batch_size=batch_size, token_budget=token_budget)
        self.quantize = quantize
        self.threads = threads or available_cores()

    def _load(self, folder: Path) -> _Session:
        return _Session(folder, self.quantize)

    def _run_batches(self, batches: Iterator[Batch], run: Callable[[Batch], None]) -> None:
        # the one session serves concurrent runs: `threads` batches at once, one thread each
        run_side_by_side(batches, run, self.threads)

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
