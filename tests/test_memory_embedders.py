"""Which backend `memory.embedding.backend` picks, and who owns the loaded models: an `Embedders`
object its creator hands to workspaces (no module-level caches)."""

from __future__ import annotations

import types

import pytest

from helpers_memory import record_model_loads, write
from kit.memory import (
    embedder_base,
    embeddings,
    model_files,
    numpy_embedder,
    onnx_embedder,
    onnx_export,
    torch_embedder,
)
from kit.memory.embeddings import (
    Embedders,
    FallbackEmbedder,
    SentenceTransformerEmbedder,
    auto_choice,
    model_problem,
)
from kit.memory.numpy_embedder import NumpyEmbedder
from kit.memory.onnx_embedder import OnnxEmbedder


def test_auto_is_onnx_then_numpy_and_never_torch_when_a_light_backend_runs(monkeypatch):
    owner = Embedders()
    auto = owner.get(None)
    assert isinstance(auto, FallbackEmbedder) and auto.backend == "onnx"
    assert [type(b) for b in auto.backends] == [OnnxEmbedder, NumpyEmbedder]
    assert auto.model_id == "sentence-transformers/all-MiniLM-L6-v2" and auto.dim == 384
    assert auto_choice(None) == ["onnx", "numpy"]
    # explicit backends
    assert isinstance(owner.get({"backend": "onnx"}), OnnxEmbedder)
    assert isinstance(owner.get({"backend": "numpy"}), NumpyEmbedder)
    assert isinstance(owner.get({"backend": "torch"}), SentenceTransformerEmbedder)
    # no onnxruntime: numpy alone, still no torch
    monkeypatch.setattr(embeddings, "installed", lambda package: package != "onnxruntime")
    assert embeddings.onnx_problem(None) == "onnxruntime is not installed"
    assert isinstance(Embedders().get(None), NumpyEmbedder)
    assert Embedders().get({"backend": "onnx"}) is None
    assert model_problem({"backend": "onnx"}) == "onnxruntime is not installed" and model_problem(None) is None
    # no light backend can run the model: torch, and only then
    monkeypatch.setattr(embeddings, "numpy_problem", lambda config=None: "tokenizers is not installed")
    assert isinstance(Embedders().get(None), SentenceTransformerEmbedder)
    assert model_problem(None) is None
    monkeypatch.setattr(embeddings, "sentence_transformers_available", lambda: False)
    assert Embedders().get(None) is None
    assert model_problem(None) == "tokenizers is not installed"


def test_an_accelerator_device_means_torch():
    assert auto_choice({"device": "cuda"}) == ["torch"]
    assert isinstance(Embedders().get({"device": "cuda"}), SentenceTransformerEmbedder)


def test_onnx_needs_the_onnx_package_only_to_build_the_graph(monkeypatch, real_embedder, tmp_path):
    import json
    import os

    # a models dir of its own holding the fp32 graph the session built, and no int8 one (which a
    # test that switches to int8 may have built in the shared dir: the result must not depend on order)
    folder = embeddings.Path(embeddings.resolve_model("all-MiniLM-L6-v2"))
    shared = onnx_export.cache_folder(folder)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    own = onnx_export.cache_folder(folder)
    own.mkdir(parents=True)
    os.link(shared / "model.onnx", own / "model.onnx")  # the same inode: the manifest's stat still matches
    manifest = json.loads((shared / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"].pop("model.int8.onnx", None)
    (own / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setattr(embeddings, "installed", lambda package: package != "onnx")
    assert onnx_export.is_built(embeddings.Path(embeddings.resolve_model("all-MiniLM-L6-v2")))  # by the session
    assert embeddings.onnx_problem(None) is None
    assert embeddings.onnx_problem({"quantize": "int8"}) == (
        "the onnx package is not installed (needed once, to build the model's ONNX graph)")


def test_an_owner_loads_each_model_once_and_workspaces_share_it(ws_path, tmp_path):
    from kit.init import init_workspace
    from kit.workspace import Workspace

    other = tmp_path / "other"
    init_workspace(other)
    for root in (ws_path, other):
        write(root, "memory/2026-02-01.md", "- The heron came back to the pond\n")
    shared = Embedders()
    a = Workspace.open(ws_path, embedders=shared)
    b = Workspace.open(other, embedders=shared)
    assert a.embedders is b.embedders is shared
    assert a.memory.embedder is b.memory.embedder is shared.get(a.config)
    a.memory.search("bird at the pond")
    b.memory.search("a bird by the water")
    onnx = shared.get(a.config).active
    assert onnx.loaded and onnx.calls == 2 + 2  # one sync and one query each, through one loaded model
    assert len(shared) == 3  # the onnx and numpy backends and the auto pair: nothing else was made
    # a workspace opened without one owns its own (nothing shared, nothing global)
    alone = Workspace.open(ws_path)
    assert alone.embedders is not shared and alone.memory.embedder is not a.memory.embedder
    assert not alone.memory.embedder.active.loaded


def test_a_served_workspace_loads_the_model_once_across_reloads(ws_path, monkeypatch):
    """The shape of `kit mcp serve` / `kit watch`: one process, one Workspace opened without an
    Embedders (as the CLI opens it), hot-reloaded on edits, kit.yaml included: one model load."""
    from kit.workspace import Workspace

    loads = record_model_loads(monkeypatch)
    write(ws_path, "memory/2026-02-01.md", "- The heron came back to the pond\n")
    ws = Workspace.open(ws_path)
    assert ws.memory.search("bird at the pond").results
    (ws_path / "kit.yaml").write_text((ws_path / "kit.yaml").read_text() + "\nmemory:\n  search:\n    max_results: 4\n")
    write(ws_path, "memory/2026-02-02.md", "- An otter swam past the heron\n")
    assert "kit.yaml" in ws.reload().changed
    assert ws.config.memory.search.max_results == 4
    assert ws.memory.sync(["memory/2026-02-02.md"]).embedded == 1  # what the watcher's live indexer does
    assert [h.path for h in ws.memory.search("otter in the water").results][0] == "memory/2026-02-02.md"
    assert loads == [ws.memory.embedder.active]
    ws.close()


@pytest.mark.parametrize("module", [embeddings, embedder_base, torch_embedder, numpy_embedder, onnx_embedder,
                                    onnx_export, model_files])
def test_no_module_level_mutable_state(module):
    mutable = sorted(
        name for name, value in vars(module).items()
        if not name.startswith("__") and isinstance(value, dict | list | set | bytearray)
        and not isinstance(value, types.MappingProxyType)
    )
    assert mutable == []
