"""A broken edit never takes the agent down: the last good version stays, the error is reported."""

from __future__ import annotations

import logging

import pytest

from helpers_watch import WAIT, Recorder, write
from kit.memory.service import memory_for, start_auto_index
from kit.watch import Watcher


@pytest.fixture
def watched(workspace):
    recorder = Recorder()
    workspace.subscribe(recorder)
    seen: list = []
    watcher = Watcher(workspace, backend="native", debounce_ms=100, on_reload=seen.append)
    watcher.start()
    try:
        yield workspace, watcher, seen
    finally:
        watcher.stop()


def test_invalid_kit_yaml_keeps_previous_config_and_reports(watched):
    ws, watcher, seen = watched
    write(ws.root, "kit.yaml", "agent:\n  max_iterations: 7\n")
    assert watcher.wait_for_reloads(1, WAIT)
    assert seen[0].changed == ("kit.yaml",)
    assert seen[0].errors == ()
    assert ws.config.get("agent.max_iterations") == 7

    write(ws.root, "kit.yaml", "agent:\n  max_iterations: [7\n")
    assert watcher.wait_for_reloads(2, WAIT)
    broken = seen[1]
    assert broken.changed == ()
    assert [(e.path, e.line) for e in broken.errors] == [("kit.yaml", 2)]
    assert "invalid YAML" in broken.errors[0].message
    assert ws.config.get("agent.max_iterations") == 7  # the last good config is still in force
    assert [i.path for i in ws.snapshot.issues] == ["kit.yaml"]

    write(ws.root, "kit.yaml", "agent:\n  max_iterations: 9\n")
    assert watcher.wait_for_reloads(3, WAIT)
    assert seen[2].changed == ("kit.yaml",)
    assert seen[2].errors == ()
    assert ws.config.get("agent.max_iterations") == 9
    assert ws.snapshot.issues == ()


def test_unknown_key_in_kit_yaml_is_reported_with_suggestion(watched):
    ws, watcher, seen = watched
    write(ws.root, "kit.yaml", "agent:\n  max_iteratons: 3\n")
    assert watcher.wait_for_reloads(1, WAIT)
    assert [str(e) for e in seen[0].errors] == [
        "kit.yaml:2: unknown key 'agent.max_iteratons' (did you mean 'max_iterations'?)"
    ]
    assert ws.config.get("agent.max_iterations") == 25


def test_debounce_follows_hot_reloaded_config(watched):
    ws, watcher, seen = watched
    plain = Watcher(ws)  # no override: reads watch.debounce_ms from the current snapshot
    assert plain.debounce_s == 0.25
    write(ws.root, "kit.yaml", "watch:\n  debounce_ms: 40\n")
    assert watcher.wait_for_reloads(1, WAIT)
    assert plain.debounce_s == 0.04


def test_broken_frontmatter_keeps_previous_good_soul(watched):
    ws, watcher, seen = watched
    good = "---\ntone: calm\n---\n# Soul\n\nGood version.\n"
    write(ws.root, "SOUL.md", good)
    assert watcher.wait_for_reloads(1, WAIT)
    assert ws.snapshot.get("SOUL.md").meta["tone"] == "calm"

    write(ws.root, "SOUL.md", "---\ntone: [calm\n---\n# Soul\n\nBroken version.\n")
    assert watcher.wait_for_reloads(2, WAIT)
    assert seen[1].changed == ()
    assert [(e.path, e.line) for e in seen[1].errors] == [("SOUL.md", 2)]
    assert ws.snapshot.get("SOUL.md").text == good

    # putting the good text back clears the error even though that content was seen before
    write(ws.root, "SOUL.md", good)
    assert watcher.wait_for_reloads(3, WAIT)
    assert seen[2].errors == ()
    assert ws.snapshot.issues == ()
    assert ws.snapshot.get("SOUL.md").text == good


def test_binary_file_keeps_previous_version(watched):
    ws, watcher, seen = watched
    before = ws.snapshot.get("TOOLS.md").text
    (ws.root / "TOOLS.md").write_bytes(b"\x00\x01\x02binary")
    assert watcher.wait_for_reloads(1, WAIT)
    assert [e.path for e in seen[0].errors] == ["TOOLS.md"]
    assert "binary file" in seen[0].errors[0].message
    assert ws.snapshot.get("TOOLS.md").text == before


def _explode(result, snapshot):
    raise RuntimeError("listener bug")


def test_a_failing_listener_is_logged_and_reported_and_the_others_still_run(workspace, caplog):
    heard: list = []
    workspace.subscribe(_explode)  # subscribed first: it runs before the one that must still hear
    workspace.subscribe(lambda result, snapshot: heard.append(result.changed))
    with caplog.at_level(logging.ERROR, logger="kit.workspace"):
        result = workspace.write_text("memory/2026-05-07.md", "- kept\n")  # the write happened: no raise
    assert (workspace.root / "memory/2026-05-07.md").read_text() == "- kept\n"
    assert heard == [("memory/2026-05-07.md",)]
    assert result.changed == ("memory/2026-05-07.md",)
    assert [(p.area, p.severity, str(p)) for p in result.listener_errors] == [
        ("workspace", "error", "reload listener _explode failed: RuntimeError: listener bug")]
    assert result.to_json()["errors"] == ["reload listener _explode failed: RuntimeError: listener bug"]
    [record] = caplog.records
    assert record.getMessage() == "reload listener _explode failed on memory/2026-05-07.md"
    assert record.exc_info[1].args == ("listener bug",)  # logged with its traceback


def test_a_failing_listener_does_not_starve_the_auto_indexer(watched, real_embedder):
    ws, watcher, seen = watched
    ws.subscribe(_explode)  # before the indexer subscribes, so it is called first
    mem = memory_for(ws)
    mem.use_embedder(real_embedder)
    auto = start_auto_index(ws, initial_sync=False)
    try:
        write(ws.root, "memory/2026-05-07.md", "- The boiler is serviced in June\n")
        assert auto.wait_until_synced(1, 60), auto.last_error
        assert watcher.failures == 0 and watcher.running
        assert [[str(p) for p in r.listener_errors] for r in seen] == [
            ["reload listener _explode failed: RuntimeError: listener bug"]
        ]
        found = mem.search("boiler service", refresh=False)  # no sync of its own: the indexer did it
        assert [(h.path, h.snippet) for h in found.results] == [
            ("memory/2026-05-07.md", "- The boiler is serviced in June")
        ]
    finally:
        auto()
        mem.close()


def test_huge_file_is_refused_and_previous_version_kept(watched):
    ws, watcher, seen = watched
    before = ws.snapshot.get("USER.md").text
    write(ws.root, "USER.md", "# User\n" + "x" * (3 * 1024 * 1024))
    assert watcher.wait_for_reloads(1, WAIT)
    assert [e.path for e in seen[0].errors] == ["USER.md"]
    assert "over the 2 MiB limit" in seen[0].errors[0].message
    assert ws.snapshot.get("USER.md").text == before
