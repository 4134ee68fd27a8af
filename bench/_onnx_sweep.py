"""Can ONNX Runtime embed the same texts for less CPU? A sweep of graphs and session settings
(issue 14, session 4). Not part of `make bench` (the `_` prefix): about 36 encodes of 2,000 texts.

    python bench/_onnx_sweep.py [--notes 200] [--rounds 3] [--only plain,fused,...]

Texts: exactly what `kit memory index` embeds for bench/memory.py's corpus of N notes (recorded
through the workspace's own sync). Graphs: Kit's plain export (kit.memory.onnx_export), and the
same graph through ONNX Runtime's transformer optimizer (`onnxruntime.transformers.optimizer`,
model_type "bert", 12 heads, hidden 384: fused Attention, SkipLayerNormalization, BiasGelu; the
export's one Unsqueeze(axes=[1, 2]) of the mask is first written as two Unsqueezes, the pattern the
attention fusion looks for). Session settings: batches side by side on one thread each (Kit's
default since session 5) or ONNX Runtime's intra-op threads, spinning, the CPU memory arena,
ORT_ENABLE_EXTENDED instead of ALL, and the padded-token budget per batch (rows cap). Each config
encodes every text (in windows of 512, as the index does) once for parity (minimum cosine to the
plain graph), then R interleaved timed rounds (order reversed every other round): medians of wall and CPU seconds (this process, all
threads), texts per second, and CPU relative to the plain graph. Never asserts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from memory import make_corpus  # noqa: E402  (the same corpus as bench/memory.py and bench/peers.py)


class Recorder:
    """Wraps the workspace's embedder and keeps every text the index sends it."""

    def __init__(self, inner):
        self.inner, self.model_id, self.texts = inner, inner.model_id, []

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts):
        self.texts.extend(texts)
        return self.inner.encode(texts)


def indexed_texts(notes: int) -> list[str]:
    from kit import Workspace
    from kit.init import init_workspace
    from kit.memory.embeddings import Embedders

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        init_workspace(root)
        make_corpus(root, notes, 10)
        ws = Workspace.open(root)
        recorder = Recorder(Embedders().get({"backend": "onnx"}))
        ws.memory.use_embedder(recorder)
        ws.memory.sync()
        ws.close()
        return recorder.texts


def fused_graph(plain: Path, target: Path) -> dict[str, int]:
    """The plain export through ONNX Runtime's transformer optimizer; returns the fused op counts."""
    import onnx
    from onnx import helper, numpy_helper
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    model = onnx.load(str(plain))
    graph = model.graph
    at = next(i for i, n in enumerate(graph.node) if n.name == "mask_4d")
    graph.initializer.extend([numpy_helper.from_array(np.array([1], dtype=np.int64), "sweep_axis_1"),
                              numpy_helper.from_array(np.array([2], dtype=np.int64), "sweep_axis_2")])
    del graph.node[at]
    graph.node.insert(at, helper.make_node("Unsqueeze", ["mask_3d_sweep", "sweep_axis_2"], ["mask_4d"], name="mask_4d"))
    graph.node.insert(at, helper.make_node("Unsqueeze", ["attention_mask", "sweep_axis_1"], ["mask_3d_sweep"],
                                           name="mask_3d_sweep"))
    rewritten = target.with_name("two-unsqueezes.onnx")
    onnx.save(model, str(rewritten))
    optimized = optimizer.optimize_model(str(rewritten), model_type="bert", num_heads=12, hidden_size=384,
                                         optimization_options=FusionOptions("bert"), opt_level=1, use_gpu=False)
    optimized.save_model_to_file(str(target))
    return {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated config names")
    args = parser.parse_args()

    from kit.memory.onnx_embedder import import_runtime

    ort = import_runtime()  # telemetry off, as Kit runs it

    from kit.memory.embedder_base import DEFAULT_MODEL, available_cores, resolve_model
    from kit.memory.model_files import BertConfig, Tokens
    from kit.memory.onnx_embedder import MAX_ROWS, TOKEN_BUDGET, run_side_by_side
    from kit.memory.onnx_export import ensure_model

    folder = Path(resolve_model(DEFAULT_MODEL))
    config = BertConfig.read(folder)
    tokens = Tokens(folder, config)
    texts = indexed_texts(args.notes)
    lengths = [len(e.ids) for e in tokens.encode(texts)]
    print(f"{len(texts)} texts ({len(set(texts))} distinct), {sum(lengths)} tokens, median {statistics.median(lengths)}")
    plain = ensure_model(folder).path
    tmp = tempfile.TemporaryDirectory()
    fused = Path(tmp.name) / "fused.onnx"
    print("optimizer fused:", fused_graph(plain, fused))

    ALL, EXTENDED = ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    cores = available_cores()
    configs = {  # name: (graph, intra-op threads, spinning, arena, level, token budget, rows[, batches at once])
        "plain": (plain, 1, False, True, ALL, TOKEN_BUDGET, MAX_ROWS, cores),  # Kit's default (session 5)
        "plain-intra": (plain, cores, False, True, ALL, TOKEN_BUDGET, MAX_ROWS),  # session 4's default
        "fused": (fused, 2, False, True, ALL, TOKEN_BUDGET, MAX_ROWS),
        "fused-1thread": (fused, 1, False, True, ALL, TOKEN_BUDGET, MAX_ROWS),
        "fused-spin": (fused, 2, True, True, ALL, TOKEN_BUDGET, MAX_ROWS),
        "fused-noarena": (fused, 2, False, False, ALL, TOKEN_BUDGET, MAX_ROWS),
        "fused-b512": (fused, 2, False, True, ALL, 512, MAX_ROWS),
        "fused-b2048": (fused, 2, False, True, ALL, 2048, 64),
        "fused-b4096": (fused, 2, False, True, ALL, 4096, 128),
        "fused-extended": (fused, 2, False, True, EXTENDED, TOKEN_BUDGET, MAX_ROWS),
    }
    names = args.only.split(",") if args.only else list(configs)
    sessions, loads = {}, {}
    for name in names:
        path, threads, spin, arena, level = configs[name][:5]
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        options.enable_cpu_mem_arena = arena
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        start = time.perf_counter()
        sessions[name] = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        loads[name] = time.perf_counter() - start

    def encode(name: str) -> np.ndarray:
        budget, rows, side_by_side = (*configs[name][5:], 1)[:3]
        encodings = tokens.encode(texts)
        out = np.empty((len(encodings), config.dim), dtype=np.float32)

        def run(batch) -> None:
            chunk, ids, types, mask = batch
            out[chunk] = sessions[name].run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]

        # in windows of 512 texts, as `kit memory index` sends them (index.WINDOW_TEXTS)
        for start in range(0, len(encodings), 512):
            window = encodings[start:start + 512]
            batches = (([start + i for i in b[0]], *b[1:])
                       for b in tokens.batches(window, batch_size=rows, token_budget=budget))
            run_side_by_side(batches, run, side_by_side)
        return out

    reference = encode(names[0])
    for name in names:
        print(f"{name:16} min cosine to {names[0]}: {float((encode(name) * reference).sum(1).min()):.7f}")
    timings: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            encode(name)
            timings[name].append((time.perf_counter() - wall, time.process_time() - cpu))
        print(f"round {r + 1}: load {open('/proc/loadavg').read().split()[0]}", flush=True)
    base = statistics.median(t[1] for t in timings[names[0]])
    for name in names:
        wall = statistics.median(t[0] for t in timings[name])
        cpu = statistics.median(t[1] for t in timings[name])
        print(f"{name:16} session load {loads[name]:.2f} s  wall {wall:7.2f} s  CPU {cpu:7.2f} s  "
              f"{len(texts) / wall:6.1f} texts/s  {len(texts) / cpu:6.1f} texts/CPU-s  CPU / {names[0]} {cpu / base:.3f}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
