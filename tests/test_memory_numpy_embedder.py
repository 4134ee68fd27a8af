"""The numpy embedding backend: same vectors and model_id as sentence-transformers, no torch import,
search parity, and a clear fts-only reason without model files."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers_memory import LONG, PARITY_TEXTS, write
from kit.memory.embeddings import SentenceTransformerEmbedder
from kit.memory.numpy_embedder import NumpyEmbedder, erf

TEXTS = PARITY_TEXTS

@pytest.fixture(scope="module")
def torch_backend():
    st = SentenceTransformerEmbedder()
    st.encode(["warm up"])
    return st


@pytest.fixture(scope="module")
def numpy_backend():
    return NumpyEmbedder()


def test_erf_matches_math_erf():
    xs = np.concatenate([np.linspace(-9, 9, 200_001), np.random.default_rng(0).normal(0, 3, 50_000)])
    reference = np.array([math.erf(x) for x in xs])
    assert np.abs(erf(xs) - reference).max() < 1e-7
    assert erf(np.float32(0.0)) == 0.0 and erf(np.array([40.0, -40.0])).tolist() == [1.0, -1.0]


def test_same_vectors_and_model_id_as_sentence_transformers(torch_backend, numpy_backend):
    assert len(numpy_backend.model.tokens.tokenizer.encode(LONG).ids) == 256  # truncated to max_seq_length
    from tokenizers import Tokenizer

    untruncated = Tokenizer.from_file(str(Path(numpy_backend.location) / "tokenizer.json"))
    untruncated.no_truncation()
    assert len(untruncated.encode(LONG).ids) > 600
    ours = numpy_backend.encode(TEXTS)
    theirs = torch_backend.encode(TEXTS)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape == (len(TEXTS), 384)
    cosine = (ours * theirs).sum(axis=1)
    assert cosine.min() >= 0.99999, dict(zip(TEXTS, cosine.round(6), strict=True))
    assert np.abs(ours - theirs).max() <= 1e-4
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert numpy_backend.model_id == torch_backend.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert numpy_backend.dim == torch_backend.dim == 384
    # order and batching do not change a text's vector
    numpy_backend.batch_size = 3
    try:
        again = numpy_backend.encode(list(reversed(TEXTS)))[::-1]
    finally:
        numpy_backend.batch_size = 32
    assert np.abs(again - ours).max() <= 1e-5
    assert numpy_backend.encode([]).shape == (0, 384)


def test_numpy_backend_imports_no_torch():
    code = (
        "import sys; from kit.memory.embeddings import load_embedder; "
        "e = load_embedder({'backend': 'numpy'}); v = e.encode(['hello there', 'a second text']); "
        "print(type(e).__name__, v.shape, sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "NumpyEmbedder (2, 384) []", out.stderr


def _workspace(root: Path):
    from kit.init import init_workspace
    from kit.workspace import Workspace

    init_workspace(root)
    write(root, "MEMORY.md", "# Memory\n\n- Alice is allergic to peanuts\n- Deploys happen on Tuesdays\n")
    write(root, "memory/2026-02-01.md", "# 2026-02-01\n\n- Alice prefers oat milk in a flat white\n"
          "- The staging database listens on port 5433\n")
    write(root, "memory/2026-02-02.md", "# 2026-02-02\n\n- Grandma wants lilies rather than roses\n"
          "- Bob scheduled the design review for Thursday\n")
    write(root, "memory/topics/cooking.md", "# Cooking\n\n## Sourdough\n\nFeed the starter twice a day.\n\n"
          "## Coffee\n\nOat milk steams better than almond milk.\n")
    return Workspace.open(root)


# what each query must find first (and its vector score, within 0.005), whichever backend embeds
EXPECTED_TOP = {
    "what milk does Alice like": ("memory/2026-02-01.md:3:3", 0.754),
    # MEMORY.md by claim: the entry, not the whole file (0.41), and without the title "Memory" as context (0.599)
    "peanut allergy": ("MEMORY.md:3:3", 0.642),
    "database port": ("memory/2026-02-01.md:4:4", 0.595),
    "flowers for grandma": ("memory/2026-02-02.md:3:3", 0.651),
    "when do we deploy": ("MEMORY.md:4:4", 0.655),  # 0.237 whole, 0.488 under "Memory"
    "bread starter": ("memory/topics/cooking.md:1:5", 0.543),
}


def test_search_gives_the_same_results_with_numpy_onnx_and_torch(tmp_path, kit_now, torch_backend, numpy_backend,
                                                                   real_embedder):
    """The three backends give one query the same hits in the same order with the same scores
    (bench/memory.py's 'cold searches agree' once compared three different query texts)."""
    from kit.memory.service import Memory

    kit_now("2026-02-03T09:00:00+00:00")
    assert real_embedder.backend == "onnx"
    mems = {name: Memory(_workspace(tmp_path / name), embedder=e)
            for name, e in (("numpy", numpy_backend), ("onnx", real_embedder.active), ("torch", torch_backend))}
    for query, (top_key, top_vector) in EXPECTED_TOP.items():
        found = {name: mem.search(query) for name, mem in mems.items()}
        ours = found["numpy"]
        assert ours.results and ours.results[0].key == top_key, query
        assert ours.results[0].vector_score == pytest.approx(top_vector, abs=0.005), query
        for name, theirs in found.items():
            assert theirs.mode == "hybrid", name
            assert [h.key for h in theirs.results] == [h.key for h in ours.results], (query, name)
            for a, b in zip(ours.results, theirs.results, strict=True):
                assert a.score == pytest.approx(b.score, abs=1e-5), (query, name)
                assert b.vector_score is not None and a.vector_score == pytest.approx(b.vector_score, abs=1e-5)
    for mem in mems.values():
        mem.close()


def test_numpy_backend_without_model_files_is_fts_only_with_a_clear_reason(ws_path, tmp_path):
    from kit.memory.service import Memory
    from kit.workspace import Workspace

    (ws_path / "kit.yaml").write_text("memory:\n  embedding:\n    backend: numpy\n    model: ./no-such-model\n")
    write(ws_path, "memory/2026-02-01.md", "- the capybara is called Gus\n")
    mem = Memory(Workspace.open(ws_path))
    assert mem.embedder is None and mem.mode == "fts-only"
    assert mem.embedding_error == ("model folder './no-such-model' does not exist (the numpy backend reads "
                                   "a local folder); Kit never downloads")
    assert mem.search("capybara").mode == "fts-only"
    mem.close()

    half = tmp_path / "half-copied"
    half.mkdir()
    (half / "config.json").write_text('{"model_type": "bert", "hidden_act": "gelu"}')
    (ws_path / "kit.yaml").write_text(f"memory:\n  embedding:\n    backend: numpy\n    model: {half}\n")
    mem = Memory(Workspace.open(ws_path))
    assert mem.embedder is None and mem.mode == "fts-only"
    assert mem.embedding_error == f"model folder {str(half)!r} has no tokenizer.json, model.safetensors " \
                                  "(needed by the numpy embedding backend)"
    mem.close()
