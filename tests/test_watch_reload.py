"""Hot reload with real watchdog (inotify) events: every way an editor saves, and bursts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers_watch import WAIT, Recorder, flush_with_sentinel, write
from kit.watch import Watcher


@pytest.fixture
def watched(workspace):
    """A started native watcher (debounce 150 ms) plus a listener subscribed to the workspace."""
    recorder = Recorder()
    workspace.subscribe(recorder)
    watcher = Watcher(workspace, backend="native", debounce_ms=150)
    watcher.start()
    try:
        yield workspace, watcher, recorder
    finally:
        watcher.stop()


def soul(ws) -> str:
    return ws.snapshot.get("SOUL.md").text


def test_in_place_write_reaches_snapshot_once(watched):
    ws, watcher, recorder = watched
    assert watcher.backend == "native"
    v0 = ws.version
    with open(ws.root / "SOUL.md", "w", encoding="utf-8") as handle:
        handle.write("# Soul\n\nIn place.\n")
        handle.flush()
        handle.write("Second line.\n")
    assert watcher.wait_for_reloads(1, WAIT)
    flush_with_sentinel(watcher, ws.root)
    assert soul(ws) == "# Soul\n\nIn place.\nSecond line.\n"
    assert watcher.reloaded_paths() == {"SOUL.md": 1, "memory/zz-sentinel.md": 1}
    assert recorder.changed() == {"SOUL.md": 1, "memory/zz-sentinel.md": 1}
    first = watcher.history[0]
    assert first.changed == ("SOUL.md",)
    assert first.errors == ()
    assert first.version == v0 + 1


def test_temp_file_and_os_replace_is_handled_by_destination(watched):
    ws, watcher, recorder = watched
    tmp = ws.root / ".SOUL.md.abc123.tmp"
    tmp.write_text("# Soul\n\nReplaced atomically.\n", encoding="utf-8")
    os.replace(tmp, ws.root / "SOUL.md")
    assert watcher.wait_for_reloads(1, WAIT)
    flush_with_sentinel(watcher, ws.root)
    assert soul(ws) == "# Soul\n\nReplaced atomically.\n"
    assert watcher.history[0].changed == ("SOUL.md",)
    assert watcher.reloaded_paths()["SOUL.md"] == 1
    assert not any(".tmp" in path for path in recorder.changed())


def test_vim_style_save_rename_backup_create_delete(watched):
    ws, watcher, recorder = watched
    root = ws.root
    os.rename(root / "SOUL.md", root / "SOUL.md~")  # vim: backup by rename
    (root / "4913").write_text("")  # vim's "can I write here?" probe
    os.unlink(root / "4913")
    write(root, "SOUL.md", "# Soul\n\nSaved by vim.\n")  # the new file
    os.unlink(root / "SOUL.md~")  # backup removed after a good write
    assert watcher.wait_for_reloads(1, WAIT)
    flush_with_sentinel(watcher, root)
    assert soul(ws) == "# Soul\n\nSaved by vim.\n"
    assert watcher.history[0].changed == ("SOUL.md",)
    assert recorder.changed() == {"SOUL.md": 1, "memory/zz-sentinel.md": 1}
    assert ws.snapshot.issues == ()


def test_deleted_file_leaves_the_snapshot(watched):
    ws, watcher, recorder = watched
    assert ws.snapshot.get("USER.md") is not None
    (ws.root / "USER.md").unlink()
    assert watcher.wait_for_reloads(1, WAIT)
    assert watcher.history[0].changed == ("USER.md",)
    assert ws.snapshot.get("USER.md") is None
    # re-created with the very same text it had: still a change, because it had gone
    flush_with_sentinel(watcher, ws.root)
    write(ws.root, "USER.md", "# User\n")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["USER.md"] == 2, WAIT)
    assert ws.snapshot.get("USER.md").text == "# User\n"


def test_memory_note_reaches_listeners(watched):
    ws, watcher, recorder = watched
    write(ws.root, "memory/2026-05-07.md", "# 2026-05-07\n\n- Met Ana about the roadmap.\n")
    assert watcher.wait_for_reloads(1, WAIT)
    assert watcher.history[0].changed == ("memory/2026-05-07.md",)
    assert recorder.results[-1].changed == ("memory/2026-05-07.md",)
    # daily notes are the memory index's business, not the snapshot's
    assert "memory/2026-05-07.md" not in ws.snapshot.documents


def test_burst_of_500_notes_is_one_reload_with_each_path_once(workspace):
    recorder = Recorder()
    workspace.subscribe(recorder)
    # a 1 s window: the 500 writes finish well inside it even on a loaded machine
    with Watcher(workspace, backend="native", debounce_ms=1000) as watcher:
        names = [f"memory/2026-01-01-note-{i:03d}.md" for i in range(500)]
        for index, rel in enumerate(names):
            write(workspace.root, rel, f"# Note {index}\n\nBody {index}.\n")
        assert watcher.wait_until(lambda w: len(w.reloaded_paths()) >= 500, WAIT * 2)
        assert watcher.reload_count == 1
        assert watcher.history[0].changed == tuple(sorted(names))
        flush_with_sentinel(watcher, workspace.root)
        counts = watcher.reloaded_paths()
    assert counts == {**{rel: 1 for rel in names}, "memory/zz-sentinel.md": 1}
    assert recorder.changed() == counts


def test_own_write_is_applied_once_and_its_echo_skipped(watched):
    ws, watcher, recorder = watched
    v0 = ws.version
    result = ws.write_text("MEMORY.md", "# Memory\n\n- Kit wrote this.\n")
    assert result.changed == ("MEMORY.md",)
    assert ws.version == v0 + 1
    assert watcher.wait_until(lambda w: "MEMORY.md" in w.skipped, WAIT)
    flush_with_sentinel(watcher, ws.root)
    assert watcher.reloaded_paths()["MEMORY.md"] == 0
    assert recorder.changed()["MEMORY.md"] == 1  # only the direct apply from write_text
    assert ws.snapshot.get("MEMORY.md").text == "# Memory\n\n- Kit wrote this.\n"


def test_touch_and_identical_save_are_skipped(watched):
    ws, watcher, recorder = watched
    text = (ws.root / "AGENTS.md").read_text(encoding="utf-8")
    os.utime(ws.root / "AGENTS.md")
    write(ws.root, "AGENTS.md", text)  # same bytes: a no-op save
    assert watcher.wait_until(lambda w: "AGENTS.md" in w.skipped, WAIT)
    flush_with_sentinel(watcher, ws.root)
    assert watcher.reloaded_paths()["AGENTS.md"] == 0


def test_ignored_names_and_folders_never_reach_reload(watched):
    ws, watcher, recorder = watched
    root = ws.root
    for rel in (
        ".kit/state.db-wal",
        ".git/index",
        "notes.tmp",
        "SOUL.md.swp",
        ".SOUL.md.swx",
        ".#SOUL.md",
        "USER.md~",
        "4913",
        "memory/.2026-05-07.md.k3j4.tmp",
        "skills/__pycache__/x.pyc",
    ):
        write(root, rel, "noise")
    # created and deleted inside one debounce window: nothing to report
    write(root, "memory/scratch.md", "gone soon")
    (root / "memory/scratch.md").unlink()
    flush_with_sentinel(watcher, root)
    assert watcher.reloaded_paths() == {"memory/zz-sentinel.md": 1}
    assert recorder.changed() == {"memory/zz-sentinel.md": 1}


def test_new_top_level_folder_is_watched(watched):
    ws, watcher, recorder = watched
    os.mkdir(ws.root / "projects")
    write(ws.root, "projects/plan.md", "# Plan\n")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["projects/plan.md"] >= 1, WAIT)
    flush_with_sentinel(watcher, ws.root)
    write(ws.root, "projects/plan.md", "# Plan\n\nv2\n")  # an event inside the newly watched folder
    assert watcher.wait_until(lambda w: w.reloaded_paths()["projects/plan.md"] == 2, WAIT)


def test_new_skill_folder_moved_in_is_loaded(watched, tmp_path: Path):
    ws, watcher, recorder = watched
    outside = tmp_path / "incoming" / "greet"
    outside.mkdir(parents=True)
    (outside / "SKILL.md").write_text("---\nname: greet\ndescription: Say hello.\n---\nSay hello.\n")
    os.rename(outside, ws.root / "skills" / "greet")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["skills/greet/SKILL.md"] == 1, WAIT)
    doc = ws.snapshot.get("skills/greet/SKILL.md")
    assert doc is not None and doc.meta["name"] == "greet"
    # and moved out again: a deletion
    os.rename(ws.root / "skills" / "greet", tmp_path / "incoming" / "greet-back")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["skills/greet/SKILL.md"] == 2, WAIT)
    assert ws.snapshot.get("skills/greet/SKILL.md") is None


def test_top_level_folder_removed_and_recreated_keeps_being_watched(watched):
    ws, watcher, recorder = watched
    import shutil

    write(ws.root, "memory/2026-05-06.md", "first")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["memory/2026-05-06.md"] == 1, WAIT)
    shutil.rmtree(ws.root / "memory")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["memory/2026-05-06.md"] == 2, WAIT)
    assert watcher.history[-1].changed == ("memory/.gitkeep", "memory/2026-05-06.md")  # deletions
    os.mkdir(ws.root / "memory")
    write(ws.root, "memory/2026-05-07.md", "second")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["memory/2026-05-07.md"] == 1, WAIT)
    flush_with_sentinel(watcher, ws.root)  # events inside the new folder arrive
    write(ws.root, "memory/2026-05-07.md", "second, edited")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["memory/2026-05-07.md"] == 2, WAIT)
