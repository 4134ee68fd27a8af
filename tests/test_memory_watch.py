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
