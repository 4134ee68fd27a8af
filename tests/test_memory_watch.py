"""Auto-indexing under the real watcher: a changed note is searchable within the debounce window,
and only its changed chunks are embedded again."""

from __future__ import annotations

import os

import pytest

from helpers_memory import CountingEmbedder, write
from kit.memory.service import memory_for, start_auto_index

NOW = "2026-05-07T09:00:00+00:00"


@pytest.fixture
def watched(workspace, real_embedder, kit_now):
    from kit.watch import Watcher

    kit_now(NOW)
    write(workspace.root, "memory/2026-05-06.md", "# 2026-05-06\n\n- The boiler service is due in June\n- Ferns need water on Sundays\n")
    counting = CountingEmbedder(real_embedder)
    mem = memory_for(workspace)
    mem.use_embedder(counting)
    watcher = Watcher(workspace, debounce_ms=100, backend="native").start()
    stop = start_auto_index(workspace)
    assert stop.wait_idle(60), stop.last_error  # the start-up sync indexed the existing notes
    counting.reset()
    yield workspace, mem, watcher, stop, counting
    stop()
    watcher.stop()
    mem.close()


def test_kit_memory_write_through_the_watcher_becomes_searchable(watched, cli):
    ws, mem, watcher, auto, counting = watched
    syncs = auto.syncs
    # another process (here: a second Workspace object in the CLI) writes the note
    out = cli("memory", "write", "The locksmith's number is 555-0199", "-w", ws.root)
    assert out.exit_code == 0, out.output
    assert watcher.wait_until(lambda w: w.reloaded_paths()["memory/2026-05-07.md"] >= 1, timeout=30)
    assert auto.wait_until_synced(syncs + 1, timeout=60), auto.last_error
    assert auto.wait_idle(60)
    assert counting.texts == ["- The locksmith's number is 555-0199"]
    found = mem.search("locksmith phone number", refresh=False)  # no sync of its own: the watcher did it
    assert found.results[0].path == "memory/2026-05-07.md"
    assert found.results[0].snippet == "- The locksmith's number is 555-0199"


def test_an_editor_save_reembeds_only_the_changed_claim(watched):
    ws, mem, watcher, auto, counting = watched
    syncs = auto.syncs
    path = ws.root / "memory/2026-05-06.md"
    tmp = path.with_name(".2026-05-06.md.swp")
    tmp.write_text(path.read_text().replace("in June", "in July"))
    os.replace(tmp, path)  # editors save by renaming a temp file over the note
    assert watcher.wait_until(lambda w: w.reloaded_paths()["memory/2026-05-06.md"] >= 1, timeout=30)
    assert auto.wait_until_synced(syncs + 1, timeout=60), auto.last_error
    assert counting.texts == ["- The boiler service is due in July"]
    hit = mem.search("boiler service", refresh=False).results[0]
    assert (hit.path, hit.start_line, hit.snippet) == ("memory/2026-05-06.md", 3, "- The boiler service is due in July")


def test_deleting_a_note_under_the_watcher_drops_it(watched):
    ws, mem, watcher, auto, counting = watched
    syncs = auto.syncs
    (ws.root / "memory/2026-05-06.md").unlink()
    assert watcher.wait_until(lambda w: w.reloaded_paths()["memory/2026-05-06.md"] >= 1, timeout=30)
    assert auto.wait_until_synced(syncs + 1, timeout=60), auto.last_error
    assert mem.index().conn.execute("SELECT COUNT(*) FROM chunks WHERE path = 'memory/2026-05-06.md'").fetchone()[0] == 0
    assert counting.calls == 0


def test_unsubscribing_stops_indexing(workspace, real_embedder, monkeypatch):
    mem = memory_for(workspace)
    mem.use_embedder(real_embedder)
    stop = start_auto_index(workspace, initial_sync=False)
    write(workspace.root, "memory/2026-05-06.md", "- before unsubscribe\n")
    workspace.reload(["memory/2026-05-06.md"])
    assert stop.wait_until_synced(1, 60), stop.last_error  # subscribed: the change is indexed
    stop()
    asked: list[str] = []  # the indexer's listener asks the memory which changed paths it indexes
    monkeypatch.setattr(mem, "is_indexable", lambda rel: asked.append(rel) or True)
    write(workspace.root, "memory/2026-05-07.md", "- after unsubscribe\n")
    result = workspace.reload(["memory/2026-05-07.md"])
    assert result.changed == ("memory/2026-05-07.md",)
    # unsubscribed, not just stopped: the reload no longer reaches the indexer at all
    assert asked == []
    # a worker that still listened would sync within seconds; a stopped one never does
    assert not stop.wait_until_synced(2, timeout=5)
    assert stop.syncs == 1
    indexed = [r[0] for r in mem.index().conn.execute("SELECT DISTINCT path FROM chunks ORDER BY path")]
    assert indexed == ["memory/2026-05-06.md"]


def test_require_index_waits_for_an_index_to_exist(workspace, real_embedder):
    mem = memory_for(workspace)
    mem.use_embedder(real_embedder)
    stop = start_auto_index(workspace, require_index=True)
    try:
        write(workspace.root, "memory/2026-05-07.md", "- first note\n")
        workspace.reload(["memory/2026-05-07.md"])
        assert stop.wait_idle(30) and stop.syncs == 0
        assert not mem.index_path.exists()
        mem.sync()  # someone builds the index (kit memory index, a search)
        write(workspace.root, "memory/2026-05-07.md", "- first note\n- second note\n")
        workspace.reload(["memory/2026-05-07.md"])
        assert stop.wait_until_synced(1, 60) and stop.wait_idle(30)
        texts = [r[0] for r in mem.index().conn.execute("SELECT text FROM chunks WHERE path = 'memory/2026-05-07.md'")]
        assert texts == ["- first note", "- second note"]
    finally:
        stop()


def test_kit_watch_keeps_an_existing_index_fresh(workspace, real_embedder, kit_now):
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    kit_now(NOW)
    mem = memory_for(workspace)
    mem.use_embedder(real_embedder)
    mem.sync()  # the index exists, so `kit watch` keeps it fresh
    mem.close()
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "kit", "watch", "-w", str(workspace.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert "watching" in proc.stderr.readline()
        write(workspace.root, "memory/2026-05-07.md", "# 2026-05-07\n\n- The piano tuner comes on Thursday\n")
        found = []
        deadline = time.monotonic() + 120  # a wait for the outcome, not a speed assertion
        while not found and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            conn = sqlite3.connect(workspace.kit_dir / "index.db")
            found = conn.execute(
                "SELECT start_line, text, embedding IS NOT NULL FROM chunks WHERE path = 'memory/2026-05-07.md'"
            ).fetchall()
            conn.close()
        assert found == [(3, "- The piano tuner comes on Thursday", 1)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode == 0


BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _set_embedding(root, **settings) -> None:
    body = "".join(f"    {key}: {value}\n" for key, value in settings.items())
    (root / "kit.yaml").write_text(f"memory:\n  embedding:\n{body}", encoding="utf-8")


def test_a_memory_embedding_edit_takes_effect_in_the_running_watcher(ws_path, kit_now, monkeypatch, caplog):
    """`kit watch`'s shape: a Workspace opened as the CLI opens it (its own models), the real
    watcher and the auto-indexer over an existing index. kit.yaml edits of memory.embedding reach
    the running process: the old embedder is dropped, a new model_id re-embeds every chunk."""
    import logging

    from helpers_memory import record_model_loads
    from kit.watch import Watcher
    from kit.workspace import Workspace

    kit_now(NOW)
    loads = record_model_loads(monkeypatch)
    write(ws_path, "memory/2026-05-06.md", "# 2026-05-06\n\n- The boiler service is due in June\n- Ferns need water on Sundays\n")
    ws = Workspace.open(ws_path)
    mem = ws.memory
    first = mem.embedder
    assert mem.search("boiler service").results[0].start_line == 3  # builds the index, keeps the query vector
    watcher = Watcher(ws, debounce_ms=100, backend="native").start()
    auto = mem.auto_index(require_index=True)
    try:
        assert auto.wait_idle(60), auto.last_error
        syncs = auto.syncs
        with caplog.at_level(logging.WARNING, logger="kit.memory"):
            _set_embedding(ws_path, quantize="int8")
            assert watcher.wait_until(lambda w: w.reloaded_paths()["kit.yaml"] >= 1, timeout=30)
            assert auto.wait_until_synced(syncs + 1, timeout=120), auto.last_error
        assert ws.config.memory.embedding.quantize == "int8"
        assert mem.embedder is not first
        assert mem.embedder.model_id == BASE_MODEL + "#int8"
        rows = [tuple(r) for r in mem.index().conn.execute("SELECT model, COUNT(*) FROM chunks GROUP BY model")]
        assert rows == [(BASE_MODEL + "#int8", 2)]  # both claims embedded again, with the int8 model
        assert [r.getMessage() for r in caplog.records if r.name == "kit.memory"] == [
            "kit.yaml: memory.embedding changed (quantize none → int8): the old embedder is dropped; vectors are "
            f"now {BASE_MODEL}#int8: every note is embedded again (cached vectors are reused)"]
        hit = mem.search("boiler service", refresh=False).results[0]
        assert (hit.path, hit.start_line) == ("memory/2026-05-06.md", 3)
        assert [e.quantize for e in loads] == ["none", "int8"]

        # back to fp32, on the numpy backend: the first model_id again, so the re-index finds
        # every vector in the embedding cache and embeds nothing (and loads no model)
        caplog.clear()
        syncs = auto.syncs
        with caplog.at_level(logging.WARNING, logger="kit.memory"):
            _set_embedding(ws_path, backend="numpy")
            assert watcher.wait_until(lambda w: w.reloaded_paths()["kit.yaml"] >= 2, timeout=30)
            assert auto.wait_until_synced(syncs + 1, timeout=120), auto.last_error
        numpy = mem.embedder
        assert (numpy.backend, numpy.model_id, numpy.encoded) == ("numpy", BASE_MODEL, 0)
        rows = [tuple(r) for r in mem.index().conn.execute("SELECT model, COUNT(*) FROM chunks GROUP BY model")]
        assert rows == [(BASE_MODEL, 2)]
        assert [r.getMessage() for r in caplog.records if r.name == "kit.memory"] == [
            "kit.yaml: memory.embedding changed (backend auto → numpy, quantize int8 → none): the old embedder is "
            f"dropped; vectors are now {BASE_MODEL}: every note is embedded again (cached vectors are reused)"]
        assert mem.search("boiler service", refresh=False).results[0].start_line == 3
        assert (numpy.encoded, numpy.loaded) == (0, False)  # the query's vector came from the index
        assert "memory.embedding changed (backend auto → numpy" in (ws_path / ".kit/logs/memory.log").read_text()
    finally:
        auto()
        watcher.stop()
        ws.close()


def test_an_embedding_edit_that_keeps_the_model_id_swaps_the_embedder_without_reindexing(ws_path, kit_now):
    """A library caller's reload (no watcher, no auto-indexer): the next use of the embedder follows it."""
    from kit.workspace import Workspace

    kit_now(NOW)
    write(ws_path, "memory/2026-05-06.md", "- The boiler service is due in June\n")
    ws = Workspace.open(ws_path)
    first = ws.memory.embedder
    ws.memory.sync()
    _set_embedding(ws_path, threads=1)
    assert "kit.yaml" in ws.reload().changed
    assert ws.memory.embedder is not first and ws.memory.embedder.active.threads == 1
    assert ws.memory.follow_config() is None  # seen once, on that use
    assert (ws_path / ".kit/logs/memory.log").read_text().endswith(
        f"kit.yaml: memory.embedding changed (threads 0 → 1): the old embedder is dropped; the vectors stay "
        f"{BASE_MODEL} (nothing to re-index)\n")
    assert ws.memory._synced  # no full sync pending: the vectors are still valid
    # an edit elsewhere in kit.yaml keeps the embedder
    kept = ws.memory.embedder
    (ws_path / "kit.yaml").write_text("memory:\n  embedding:\n    threads: 1\n  search:\n    max_results: 4\n")
    assert "kit.yaml" in ws.reload().changed
    assert ws.memory.follow_config() is None and ws.memory.embedder is kept
    ws.close()
