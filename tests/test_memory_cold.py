"""A new process pays only for what it uses: no model load when nothing changed or when the query
was searched before, and the vector matrix memory-mapped from `.kit/index-vectors.bin`."""

from __future__ import annotations

import numpy as np

from helpers_memory import CountingEmbedder, write
from kit.memory import vector_file
from kit.memory.embeddings import Embedders
from kit.memory.service import Memory


def _notes(root) -> None:
    write(root, "memory/2026-02-01.md", "# 2026-02-01\n\n- The heron came back to the pond\n"
          "- Deploys happen on Tuesdays after standup\n")
    write(root, "memory/2026-02-02.md", "# 2026-02-02\n\n- Grandma wants lilies rather than roses\n")


def _fresh(workspace):
    """A Memory as a new process would have it: its own, not yet loaded, model."""
    embedder = CountingEmbedder(Embedders().get(workspace.config))
    return Memory(workspace, embedder=embedder), embedder


def test_nothing_changed_and_a_query_seen_before_load_no_model(workspace):
    _notes(workspace.root)
    first, first_model = _fresh(workspace)
    found = first.search("bird at the pond")
    assert first_model.calls == 2 and first_model.texts[-1] == "bird at the pond"  # the notes, then the query
    first.close()

    again, model = _fresh(workspace)
    repeat = again.search("bird at the pond")
    assert model.calls == 0 and not model.inner.active.loaded  # sync found nothing new; the query vector was kept
    assert [(h.key, round(h.score, 5)) for h in repeat.results] == [(h.key, round(h.score, 5)) for h in found.results]
    assert repeat.results[0].vector_score > 0.4
    other = again.search("flowers for grandma")  # a new query needs the model
    assert model.texts == ["flowers for grandma"] and other.results[0].path == "memory/2026-02-02.md"
    again.close()


def test_the_vector_matrix_is_mapped_from_disk_and_follows_the_index(workspace):
    _notes(workspace.root)
    mem, _ = _fresh(workspace)
    mem.sync()
    idx = mem.index()
    model = mem.embedder.model_id
    path = workspace.kit_dir / vector_file.FILE_NAME
    assert not path.exists()
    ids, matrix = idx.mapped_vectors(model)  # read from SQLite, written for the next process
    assert path.is_file() and not isinstance(matrix, np.memmap)
    # the index's own mode (mkstemp made it 0600 where every other file in .kit/ is 0644)
    assert path.stat().st_mode & 0o777 == (workspace.kit_dir / "index.db").stat().st_mode & 0o777
    ids2, mapped = idx.mapped_vectors(model)
    chunks = idx.counts()["embedded_chunks"]
    assert isinstance(mapped, np.memmap) and mapped.shape == matrix.shape == (chunks, 384)
    assert np.array_equal(ids2, ids) and np.array_equal(np.asarray(mapped), matrix)

    write(workspace.root, "memory/2026-02-03.md", "- The capybara is called Gus\n")
    mem.sync()  # a new generation: the file no longer matches and is rewritten on next use
    assert vector_file.read(path, idx.vector_key(model)) is None
    ids3, matrix3 = idx.mapped_vectors(model)
    assert matrix3.shape == (chunks + 1, 384) and vector_file.read(path, idx.vector_key(model)) is not None

    # another index (deleted and rebuilt: generation counts again from 0) never reuses the file
    key = idx.vector_key(model)
    assert vector_file.read(path, vector_file.VectorKey("another-index", key.generation, model)) is None
    # a torn file is ignored, not trusted
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size - 8)
    assert vector_file.read(path, key) is None
    assert idx.mapped_vectors(model)[1].shape == (chunks + 1, 384)
    found = mem.search("capybara name")
    assert found.results[0].path == "memory/2026-02-03.md"
    mem.close()


def test_query_vectors_are_bounded(workspace, monkeypatch):
    from kit.memory import index as index_module

    monkeypatch.setattr(index_module, "QUERY_VECTORS_KEPT", 3)
    mem, _ = _fresh(workspace)
    idx = mem.index()
    for i in range(5):
        idx.store_query_vector("m", f"query {i}", np.full(4, i, dtype=np.float32))
    kept = [r[0] for r in idx.conn.execute("SELECT COUNT(*) FROM query_vectors")]
    assert kept == [3]
    assert idx.query_vector("m", "query 0") is None and idx.query_vector("m", "query 4").tolist() == [4.0] * 4
    mem.close()
