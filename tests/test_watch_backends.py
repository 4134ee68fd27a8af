"""Backends (native, polling, fallback on inotify limits), the safety-net scans and the helpers."""

from __future__ import annotations

import errno
import logging
import os

import pytest
from watchdog.observers import Observer

from helpers_watch import WAIT, flush_with_sentinel, write
from kit.documents import load_document
from kit.errors import ConfigError
from kit.ignore import is_ignored
from kit.watch import Watcher, file_digest, inotify_advice, scan_tree


def test_polling_backend_reloads_edits(workspace):
    with Watcher(workspace, backend="polling", poll_interval=0.1, debounce_ms=50) as watcher:
        assert watcher.backend == "polling"
        write(workspace.root, "SOUL.md", "# Soul\n\nPolled edit, longer than before.\n")
        assert watcher.wait_for_reloads(1, WAIT)
        assert watcher.history[0].changed == ("SOUL.md",)
        assert workspace.snapshot.get("SOUL.md").text == "# Soul\n\nPolled edit, longer than before.\n"
        (workspace.root / "USER.md").unlink()
        assert watcher.wait_for_reloads(2, WAIT)
        assert watcher.history[1].changed == ("USER.md",)
        assert workspace.snapshot.get("USER.md") is None


def test_backend_comes_from_config(ws_path):
    from kit.workspace import Workspace

    (ws_path / "kit.yaml").write_text("watch:\n  backend: polling\n  debounce_ms: 30\n")
    ws = Workspace.open(ws_path)
    with Watcher(ws, poll_interval=0.1) as watcher:
        assert watcher.backend == "polling"
        assert watcher.debounce_s == 0.03
        write(ws.root, "memory/2026-05-07.md", "note")
        assert watcher.wait_for_reloads(1, WAIT)
        assert watcher.history[0].changed == ("memory/2026-05-07.md",)


def test_unknown_backend_is_a_config_error(workspace):
    with pytest.raises(ConfigError, match="watch.backend must be one of auto, native, polling"):
        Watcher(workspace, backend="magic")


def _failing_factory(code: int, after: int = 0):
    """A real inotify observer whose schedule() fails like the kernel does at its limits."""

    class LimitedObserver(Observer):
        calls = 0

        def schedule(self, *args, **kwargs):
            LimitedObserver.calls += 1
            if LimitedObserver.calls > after:
                raise OSError(code, "inotify limit reached")
            return super().schedule(*args, **kwargs)

    return LimitedObserver


@pytest.mark.parametrize(
    ("code", "advice"),
    [(errno.ENOSPC, "fs.inotify.max_user_watches=524288"), (errno.EMFILE, "fs.inotify.max_user_instances")],
)
def test_inotify_limit_falls_back_to_polling_and_says_how_to_fix(workspace, caplog, code, advice):
    caplog.set_level(logging.WARNING, logger="kit.watch")
    factory = _failing_factory(code, after=2)  # fails half-way through scheduling
    with Watcher(workspace, backend="auto", native_factory=factory, poll_interval=0.1, debounce_ms=50) as watcher:
        assert watcher.backend == "polling"
        assert advice in watcher.fallback
        assert f"errno {code}" in watcher.fallback
        assert any(advice in r.getMessage() and "falling back to polling" in r.getMessage() for r in caplog.records)
        write(workspace.root, "SOUL.md", "# Soul\n\nStill reloading after the fallback.\n")
        assert watcher.wait_for_reloads(1, WAIT)
        assert watcher.stats().fallback == watcher.fallback


def test_native_backend_other_errors_are_raised(workspace):
    def broken():
        raise OSError(errno.EACCES, "permission denied")

    watcher = Watcher(workspace, backend="native", native_factory=broken)
    with pytest.raises(OSError, match="permission denied"):
        watcher.start()
    assert not watcher.running


def test_start_scan_catches_changes_made_before_the_watcher_started(workspace):
    write(workspace.root, "SOUL.md", "# Soul\n\nEdited while nobody watched.\n")
    (workspace.root / "USER.md").unlink()
    with Watcher(workspace, backend="native", debounce_ms=50) as watcher:
        assert watcher.wait_for_reloads(1, WAIT)
        assert watcher.history[0].changed == ("SOUL.md", "USER.md")
        assert workspace.snapshot.get("SOUL.md").text == "# Soul\n\nEdited while nobody watched.\n"
        assert workspace.snapshot.get("USER.md") is None
        flush_with_sentinel(watcher, workspace.root)
        assert watcher.reload_count == 2  # the start scan reports each stale file once


def test_start_on_clean_workspace_reloads_nothing(workspace):
    write(workspace.root, "memory/2026-05-01.md", "an old note")
    v0 = workspace.version
    with Watcher(workspace, backend="native", debounce_ms=50) as watcher:
        flush_with_sentinel(watcher, workspace.root)
        assert watcher.reloaded_paths() == {"memory/zz-sentinel.md": 1}
    assert workspace.version == v0 + 1


def test_periodic_rescan_feeds_changes_the_os_never_reported(workspace):
    write(workspace.root, "memory/2026-05-01.md", "old")
    # a polling observer that never polls within the test: only the rescan can see changes
    with Watcher(
        workspace, backend="polling", poll_interval=3600, rescan_interval=0.2, debounce_ms=20
    ) as watcher:
        write(workspace.root, "memory/2026-05-01.md", "old, then edited")
        write(workspace.root, "memory/2026-05-02.md", "new")
        (workspace.root / "IDENTITY.md").unlink()
        expected = {"memory/2026-05-01.md", "memory/2026-05-02.md", "IDENTITY.md"}
        assert watcher.wait_until(lambda w: set(w.reloaded_paths()) == expected, WAIT)
        assert watcher.rescan_count >= 2
        assert workspace.snapshot.get("IDENTITY.md") is None
        # a later rescan with nothing new reloads nothing more
        count = watcher.reload_count
        rescans = watcher.rescan_count
        assert watcher.wait_until(lambda w: w.rescan_count >= rescans + 2, WAIT)
        assert watcher.reload_count == count


def test_explicit_rescan_returns_queued_paths(workspace):
    with Watcher(workspace, backend="polling", poll_interval=3600, debounce_ms=20) as watcher:
        write(workspace.root, "memory/a.md", "a")
        write(workspace.root, ".git/HEAD", "ref")  # never scanned
        assert watcher.rescan() == ["memory/a.md"]
        assert watcher.wait_for_reloads(1, WAIT)
        assert watcher.history[0].changed == ("memory/a.md",)


def test_is_ignored():
    for rel in (".kit/index.db", ".git/config", "a/.git/x", "x.tmp", ".SOUL.md.ab12.tmp", "SOUL.md~",
                ".#SOUL.md", ".SOUL.md.swp", ".SOUL.md.swx", "4913", "memory/4913", ".", "../x"):
        assert is_ignored(rel), rel
    for rel in ("SOUL.md", "memory/2026-05-07.md", "skills/a/SKILL.md", ".claude/skills/a/SKILL.md",
                "kit.yaml", "templates/system.md.j2", "memory/49130.md"):
        assert not is_ignored(rel), rel


def test_file_digest_matches_document_hash(tmp_path):
    (tmp_path / "a.md").write_bytes("\ufeff---\nk: v\n---\nhé\n".encode())
    (tmp_path / "b.md").write_text("plain\n")
    for name in ("a.md", "b.md"):
        assert file_digest(tmp_path / name) == load_document(tmp_path, name).hash


def test_scan_tree_skips_ignored(tmp_path):
    for rel in ("a.md", "memory/b.md", ".kit/state.db", ".git/HEAD", "c.md~", "memory/.b.md.x.tmp"):
        write(tmp_path, rel, "x")
    assert sorted(scan_tree(tmp_path)) == ["a.md", "memory/b.md"]


def test_inotify_advice_names_the_sysctl():
    assert "sysctl fs.inotify.max_user_watches=" in inotify_advice(errno.ENOSPC)
    assert "sysctl fs.inotify.max_user_instances=" in inotify_advice(errno.EMFILE)


def test_limit_hit_while_running_switches_to_polling(workspace, caplog):
    caplog.set_level(logging.WARNING, logger="kit.watch")
    folders = [p for p in workspace.root.iterdir() if p.is_dir() and p.name not in (".kit", ".git")]
    factory = _failing_factory(errno.ENOSPC, after=len(folders) + 1)  # root + today's folders succeed
    with Watcher(workspace, backend="auto", native_factory=factory, poll_interval=0.1, debounce_ms=50) as watcher:
        assert watcher.backend == "native"
        os.mkdir(workspace.root / "projects")  # watching it needs one more inotify watch: refused
        write(workspace.root, "projects/plan.md", "# Plan\n")
        assert watcher.wait_until(lambda w: w.reloaded_paths()["projects/plan.md"] == 1, WAIT)
        assert watcher.backend == "polling"
        assert "fs.inotify.max_user_watches" in watcher.fallback
        write(workspace.root, "projects/plan.md", "# Plan\n\nPolled now.\n")
        assert watcher.wait_until(lambda w: w.reloaded_paths()["projects/plan.md"] == 2, WAIT)
