"""The ONNX Runtime backend (the default): same vectors and model_id as sentence-transformers, a
deterministic export re-created when deleted or damaged, int8 under its own model_id, threads from
the cores available, and `kit memory index` with torch made unimportable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from helpers_memory import LONG, PARITY_TEXTS, write
from kit.memory import embeddings, onnx_embedder, onnx_export
from kit.memory.embeddings import (
    Embedders,
    SentenceTransformerEmbedder,
    resolve_model,
)
from kit.memory.onnx_embedder import OnnxEmbedder

MODEL_FOLDER = Path(resolve_model("all-MiniLM-L6-v2"))


@pytest.fixture(scope="module")
def torch_backend():
    st = SentenceTransformerEmbedder()
    st.encode(["warm up"])
    return st


@pytest.fixture
def onnx_backend(real_embedder):
    """The session's ONNX embedder (built once into the shared models folder)."""
    assert real_embedder.backend == "onnx"
    return real_embedder.active


def test_same_vectors_and_model_id_as_sentence_transformers(torch_backend, onnx_backend):
    assert isinstance(onnx_backend, OnnxEmbedder)
    tokens = onnx_backend.session.tokens
    assert len(tokens.encode([LONG])[0].ids) == 256  # truncated to max_seq_length, as sentence-transformers
    ours = onnx_backend.encode(PARITY_TEXTS)
    theirs = torch_backend.encode(PARITY_TEXTS)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape == (len(PARITY_TEXTS), 384)
    cosine = (ours * theirs).sum(axis=1)
    assert cosine.min() >= 0.9999, dict(zip(PARITY_TEXTS, cosine.round(6), strict=True))
    assert np.abs(ours - theirs).max() <= 1e-4
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert onnx_backend.model_id == torch_backend.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert onnx_backend.dim == 384
    # neither the order of the texts nor the batching changes a text's vector
    small = OnnxEmbedder(token_budget=16)
    small._session = onnx_backend.session  # same loaded model, tiny batches
    again = small.encode(list(reversed(PARITY_TEXTS)))[::-1]
    assert np.abs(again - ours).max() <= 1e-5
    assert onnx_backend.encode([]).shape == (0, 384)


def test_export_is_deterministic_and_recreated_when_deleted_or_damaged(tmp_path, monkeypatch, onnx_backend):
    shared = onnx_backend.session.file  # built by this session in the shared models folder
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    first = onnx_export.ensure_model(MODEL_FOLDER)
    assert first.built and first.path.is_relative_to(tmp_path / "data" / "kit" / "models")
    assert first.sha256 == shared.sha256 == onnx_export._file_sha256(first.path)  # same weights, same bytes
    manifest = json.loads((first.path.parent / "manifest.json").read_text())
    assert manifest["files"]["model.onnx"]["sha256"] == first.sha256
    assert manifest["source_sha256"] == onnx_export.source_sha256(MODEL_FOLDER) == first.source_sha256
    assert manifest["builder"] == onnx_export.BUILDER_VERSION
    assert onnx_export.is_built(MODEL_FOLDER)

    again = onnx_export.ensure_model(MODEL_FOLDER)
    assert not again.built and again.sha256 == first.sha256  # found by its stat: not rebuilt

    first.path.unlink()
    assert not onnx_export.is_built(MODEL_FOLDER)
    rebuilt = onnx_export.ensure_model(MODEL_FOLDER)
    assert rebuilt.built and rebuilt.sha256 == first.sha256 and rebuilt.path.is_file()

    with open(rebuilt.path, "r+b") as handle:  # a damaged file (same size, new bytes)
        handle.seek(4096)
        handle.write(b"\0" * 64)
    repaired = onnx_export.ensure_model(MODEL_FOLDER)
    assert repaired.built and onnx_export._file_sha256(repaired.path) == first.sha256

    # another builder version's file is not used
    monkeypatch.setattr(onnx_export, "BUILDER_VERSION", onnx_export.BUILDER_VERSION + 1)
    assert not onnx_export.is_built(MODEL_FOLDER)


def test_int8_has_its_own_model_id_and_close_vectors(tmp_path, monkeypatch, onnx_backend, caplog):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    caplog.set_level("WARNING")
    int8 = Embedders().get({"quantize": "int8"})
    assert isinstance(int8, OnnxEmbedder) and int8.quantize == "int8"  # no numpy stand-in for int8
    assert int8.model_id == "sentence-transformers/all-MiniLM-L6-v2#int8"
    ours = int8.encode(PARITY_TEXTS)
    exact = onnx_backend.encode(PARITY_TEXTS)
    cosine = (ours * exact).sum(axis=1)
    assert 0.97 < cosine.min() < 0.9999 and cosine.mean() > 0.985, cosine.round(4)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    file = int8.session.file
    assert file.quantize == "int8" and file.path.name == "model.int8.onnx"
    file.path.unlink()  # the int8 copy is deterministic too
    assert onnx_export.ensure_model(MODEL_FOLDER, "int8").sha256 == file.sha256
    # built twice, and the quantizer's root-logger advice never reached a handler (kit watch prints those)
    assert [r.getMessage() for r in caplog.records if "quantization" in r.getMessage()] == []


def test_threads_come_from_the_cores_this_process_may_use(onnx_backend):
    cores = len(os.sched_getaffinity(0))
    assert OnnxEmbedder().threads == cores == embeddings.available_cores()
    assert onnx_backend.threads == cores
    # parallel by batch: the session itself runs each batch on one thread (no intra-op pool)
    assert onnx_backend.session.session.get_session_options().intra_op_num_threads == 1
    pinned = Embedders().get({"threads": 1, "backend": "onnx"})
    assert pinned.threads == 1
    assert embeddings.embedding_settings({"memory": {"embedding": {"threads": 3}}}).threads == 3


def _sharing(source: OnnxEmbedder, **kwargs) -> OnnxEmbedder:
    """An OnnxEmbedder over `source`'s loaded model (no second 90 MB session)."""
    other = OnnxEmbedder(**kwargs)
    other._loaded = source.session
    return other


def test_batches_side_by_side_give_bitwise_the_same_vectors(onnx_backend, monkeypatch):
    texts = [*PARITY_TEXTS, *(f"note {i}: the heron came back to pond {i}" for i in range(40))]
    single = _sharing(onnx_backend, threads=1, token_budget=64)
    alone = single.encode(texts)  # many small batches, one thread
    one_by_one = np.stack([single.encode([text])[0] for text in texts])
    assert np.abs(alone - one_by_one).max() <= 1e-5  # each vector is its own text's
    session = onnx_backend.session
    real_infer, runs = session.infer, []

    def counting(ids, types, mask):
        runs.append(threading.current_thread().name)
        return real_infer(ids, types, mask)

    monkeypatch.setattr(session, "infer", counting)
    for threads in (2, 3):
        runs.clear()
        side_by_side = _sharing(onnx_backend, threads=threads, token_budget=64)
        assert np.array_equal(side_by_side.encode(texts), alone)  # bitwise, every row in its place
        assert len(runs) > 10 and {name.split("_")[0] for name in runs} <= {threading.current_thread().name, "kit-onnx"}
        assert len(set(runs)) <= threads


def _batches(n: int):
    return iter([([i], None, None, None) for i in range(n)])


def test_run_side_by_side_runs_two_batches_at_once_and_each_once():
    met = threading.Barrier(2, timeout=30)  # broken (an error) unless two batches run at the same time
    ran, lock = [], threading.Lock()

    def run(batch):
        if batch[0][0] < 2:
            met.wait()
        with lock:
            ran.append(batch[0][0])

    onnx_embedder.run_side_by_side(_batches(50), run, 2)
    assert sorted(ran) == list(range(50))
    one = []
    onnx_embedder.run_side_by_side(_batches(5), lambda b: one.append((b[0][0], threading.current_thread().name)), 1)
    assert one == [(i, threading.current_thread().name) for i in range(5)]  # one thread: in order, on the caller
    onnx_embedder.run_side_by_side(_batches(0), run, 2)  # nothing to do


@pytest.mark.parametrize("failing_thread", ["helper", "caller"])
def test_run_side_by_side_raises_the_first_error_of_any_thread(failing_thread):
    met = threading.Barrier(2, timeout=30)
    caller = threading.current_thread().name

    def run(batch):
        if batch[0][0] < 2:
            met.wait()  # batches 0 and 1: one on each thread
            on_helper = threading.current_thread().name != caller
            if on_helper == (failing_thread == "helper"):
                raise RuntimeError(f"batch failed on the {failing_thread}")

    with pytest.raises(RuntimeError, match=f"^batch failed on the {failing_thread}$"):
        onnx_embedder.run_side_by_side(_batches(50), run, 2)


def test_auto_falls_back_to_numpy_when_the_onnx_model_cannot_load(monkeypatch):
    def broken(folder, quantize):
        raise RuntimeError("no space left on device")

    monkeypatch.setattr(onnx_embedder, "_Session", broken)
    auto = Embedders().get(None)
    assert auto.backend == "onnx"
    vectors = auto.encode(["peanut allergy", "what milk does Alice like"])
    assert auto.backend == "numpy" and vectors.shape == (2, 384)
    assert auto.failures == [f"OnnxEmbedder: cannot load embedding model {str(MODEL_FOLDER)!r} with onnxruntime "
                             "(RuntimeError: no space left on device)"]
    assert auto.model_id == "sentence-transformers/all-MiniLM-L6-v2"


BLOCK_TORCH = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "sentence_transformers", "transformers"):
            raise ImportError(f"{name} is blocked by the test")
sys.meta_path.insert(0, Block())
"""
RUN_KIT = BLOCK_TORCH + """
import runpy
sys.argv = ["kit", *sys.argv[1:]]
try:
    runpy.run_module("kit", run_name="__main__")
finally:
    print("TORCH-LOADED" if "torch" in sys.modules else "NO-TORCH", file=sys.stderr)
"""


def test_kit_memory_index_runs_with_torch_unimportable(ws_path):
    for day in range(1, 6):
        write(ws_path, f"memory/2026-02-0{day}.md", f"# 2026-02-0{day}\n\n- Note {day}: the heron came back "
              f"to the pond\n- Deploys happen on day {day}\n")
    check = subprocess.run([sys.executable, "-c", BLOCK_TORCH + "import torch"], capture_output=True, text=True)
    assert check.returncode == 1 and "ImportError: torch is blocked by the test" in check.stderr  # the guard is real
    blocked = [sys.executable, "-c", RUN_KIT]

    def kit(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*blocked, *args], capture_output=True, text=True, timeout=300)

    index = kit("memory", "index", "--json", "-w", str(ws_path))
    assert index.returncode == 0, index.stderr
    assert index.stderr.strip().endswith("NO-TORCH")
    result = json.loads(index.stdout)
    assert result["mode"] == "hybrid" and result["embedded"] > 0 and result["errors"] == []
    status = json.loads(kit("memory", "status", "--json", "-w", str(ws_path)).stdout)
    assert status["backend"] == "onnx" and status["embedded_chunks"] == status["chunks"] > 0
    found = kit("memory", "search", "--json", "-w", str(ws_path), "bird at the pond")
    assert found.returncode == 0 and found.stderr.strip().endswith("NO-TORCH")
    top = json.loads(found.stdout)["results"][0]
    assert top["path"].startswith("memory/2026-02-0") and top["vector_score"] > 0.4


def test_onnx_runtime_telemetry_is_off_no_device_id_no_event_store(ws_path):
    """ONNX Runtime 1.29+ keeps a device id and an event store under the user's cache from its
    first session, and its uploader looks up mobile.events.data.microsoft.com seconds later (1.32:
    ~9 s into a process, seen with strace; none with telemetry off, over 14 s). A real `kit memory
    index` process on the ONNX backend, with neither opt-out variable set by the caller, leaves
    nothing under $XDG_CACHE_HOME/Microsoft: the uploader was never made."""
    write(ws_path, "memory/2026-02-01.md", "# 2026-02-01\n\n- The heron came back to the pond.\n")
    env = {k: v for k, v in os.environ.items() if k not in dict(onnx_embedder.TELEMETRY_OFF)}
    done = subprocess.run([sys.executable, "-m", "kit", "memory", "index", "--json", "-w", str(ws_path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["embedded"] > 0  # the model ran: a session was made
    cache = Path(os.environ["XDG_CACHE_HOME"])
    assert (cache / "kit" / "onnx").exists() and not (cache / "Microsoft").exists()


# --------------------------------------------------------------------------- the mapped copy

MANY_TEXTS = [*PARITY_TEXTS, *(f"note {i}: " + " ".join(f"the heron came back to pond {k}" for k in range(i % 12))
                               for i in range(300))]


def _whole_file_session(monkeypatch) -> onnx_embedder._Session:
    """A session over the model file itself, as before the mapped copy."""
    with monkeypatch.context() as m:
        m.setattr(onnx_embedder, "open_session", lambda model, load: load(model.path))
        return onnx_embedder._Session(MODEL_FOLDER, "none")


def _loaded_from(session: onnx_embedder._Session) -> Path:
    return Path(session.session._model_path)


def test_the_mapped_copy_gives_bitwise_the_same_vectors_and_is_written_once(tmp_path, monkeypatch):
    import onnx

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    whole = _whole_file_session(monkeypatch)
    assert _loaded_from(whole) == whole.file.path
    assert not onnx_embedder.mapped_dir().exists()

    mapped = onnx_embedder._Session(MODEL_FOLDER, "none")
    copy = onnx_embedder.MappedCopy.of(mapped.file)
    assert _loaded_from(mapped) == copy.graph and copy.graph.is_relative_to(tmp_path / "cache" / "kit" / "onnx")
    assert copy.data.stat().st_size > 85e6 > 1e6 > copy.graph.stat().st_size  # the weights are beside the graph
    reference, ours = OnnxEmbedder(), OnnxEmbedder()
    reference._loaded, ours._loaded = whole, mapped
    assert np.array_equal(ours.encode(MANY_TEXTS), reference.encode(MANY_TEXTS))  # bitwise, every row

    # every large weight starts on the allocation granularity (ONNX Runtime maps only those)
    proto = onnx.load(str(copy.graph), load_external_data=False)
    offsets = {t.name: {e.key: int(e.value) for e in t.external_data if e.key != "location"}
               for t in proto.graph.initializer if t.external_data}
    large = [o["offset"] for o in offsets.values() if o["length"] >= onnx_embedder.ALIGNMENT]
    assert len(large) > 30 and all(offset % onnx_embedder.ALIGNMENT == 0 for offset in large)

    # the next process finds it by its stamp: nothing is written again
    written = {path: path.stat().st_mtime_ns for path in (copy.graph, copy.data, copy.stamp)}
    monkeypatch.setattr(onnx_embedder.MappedCopy, "write", lambda self, model: pytest.fail("written again"))
    again = onnx_embedder._Session(MODEL_FOLDER, "none")
    assert _loaded_from(again) == copy.graph
    assert {path: path.stat().st_mtime_ns for path in written} == written


def test_a_changed_or_broken_mapped_copy_is_written_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = onnx_embedder._Session(MODEL_FOLDER, "none")
    copy = onnx_embedder.MappedCopy.of(first.file)
    stale = copy.graph.with_name("model-0123456789abcdef.onnx")  # of an older model file: dropped
    stale.write_bytes(b"old")
    writes = []
    real_write = onnx_embedder.MappedCopy.write

    def counted(self, model):
        writes.append(model.path)
        real_write(self, model)

    monkeypatch.setattr(onnx_embedder.MappedCopy, "write", counted)

    weights = copy.data.read_bytes()
    with open(copy.data, "r+b") as handle:  # other weights (they would load): its stat no longer matches
        handle.seek(4096)
        handle.write(b"\0" * 64)
    assert not copy.is_current(first.file)
    changed = onnx_embedder._Session(MODEL_FOLDER, "none")
    assert _loaded_from(changed) == copy.graph and len(writes) == 1
    assert copy.data.read_bytes() == weights and not stale.exists()

    # damaged without a trace in its stat (same size, same mtime): it fails to load, and is written again
    stat = copy.graph.stat()
    copy.graph.write_bytes(b"\xff" * stat.st_size)
    os.utime(copy.graph, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert copy.is_current(first.file)
    repaired = onnx_embedder._Session(MODEL_FOLDER, "none")
    assert _loaded_from(repaired) == copy.graph and len(writes) == 2
    assert repaired.infer(*_one_batch(repaired)).shape == (1, 384)

    # no cache to write to (a file where the folder should be): the model file itself loads
    (tmp_path / "blocked").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "blocked"))
    fallback = onnx_embedder._Session(MODEL_FOLDER, "none")
    assert _loaded_from(fallback) == fallback.file.path and len(writes) == 3


def _one_batch(session: onnx_embedder._Session):
    _, ids, types, mask = next(session.tokens.batches(session.tokens.encode(["the heron"]), batch_size=1,
                                                      token_budget=64))
    return ids, types, mask
