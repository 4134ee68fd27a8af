"""A broken edit never takes the agent down: the last good version stays, the error is reported."""

from __future__ import annotations

import pytest

from helpers_watch import WAIT, Recorder, write
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


def test_failing_listener_does_not_stop_the_watcher(watched):
    ws, watcher, seen = watched

    def explode(result, snapshot):
        if "memory/bad.md" in result.changed:
            raise RuntimeError("listener bug")

    ws.subscribe(explode)
    write(ws.root, "memory/bad.md", "x")
    assert watcher.wait_until(lambda w: w.failures == 1, WAIT)
    write(ws.root, "memory/good.md", "y")
    assert watcher.wait_until(lambda w: w.reloaded_paths()["memory/good.md"] == 1, WAIT)
    assert watcher.running


def test_huge_file_is_refused_and_previous_version_kept(watched):
    ws, watcher, seen = watched
    before = ws.snapshot.get("USER.md").text
    write(ws.root, "USER.md", "# User\n" + "x" * (3 * 1024 * 1024))
    assert watcher.wait_for_reloads(1, WAIT)
    assert [e.path for e in seen[0].errors] == ["USER.md"]
    assert "over the 2 MiB limit" in seen[0].errors[0].message
    assert ws.snapshot.get("USER.md").text == before
