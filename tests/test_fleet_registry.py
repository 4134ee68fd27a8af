"""The fleet registry: paths and globs in one YAML file; bad files are one line with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.errors import ConfigError, WorkspaceError
from kit.fleet.registry import Registry
from kit.init import init_workspace


def spaces(base: Path, *names: str) -> list[Path]:
    out = []
    for n in names:
        init_workspace(base / n)
        out.append(base / n)
    return out


def test_add_paths_and_globs_then_members_each_once(tmp_path):
    a, b, c = spaces(tmp_path / "users", "alice", "bob", "carol")
    (tmp_path / "users" / "not-a-workspace").mkdir()
    reg = Registry(tmp_path / "fleet.yaml")
    change = reg.add([str(a), str(tmp_path / "users" / "*")])
    assert change.done == (str(a), str(tmp_path / "users" / "*"))
    assert [m.path for m in reg.members()] == [str(a), str(b), str(c)]  # alice once, the folder skipped
    assert reg.add([str(a)]).unchanged == (str(a),)
    text = (tmp_path / "fleet.yaml").read_text()
    assert text.startswith("# Kit fleet registry") and f"- {a}\n" in text


def test_queue_routing_is_kept_per_entry_and_the_first_entry_wins(tmp_path):
    a, b = spaces(tmp_path, "a", "b")
    reg = Registry(tmp_path / "fleet.yaml")
    reg.add([str(a)])
    reg.add([str(tmp_path / "*")], queue="shard-b")
    assert [(m.path, m.queue) for m in reg.members()] == [(str(a), None), (str(b), "shard-b")]
    reg.add([str(a)], queue="shard-a")  # same pattern, new queue: updated in place
    assert reg.entries()[0].queue == "shard-a"
    assert Registry(tmp_path / "fleet.yaml").members()[0].queue == "shard-a"  # and read back


def test_a_path_that_is_not_a_workspace_is_refused_and_nothing_added(tmp_path):
    [a] = spaces(tmp_path, "a")
    reg = Registry(tmp_path / "fleet.yaml")
    with pytest.raises(WorkspaceError, match="does not exist; nothing was added"):
        reg.add([str(a), str(tmp_path / "typo")])
    assert reg.entries() == []
    (tmp_path / "plain").mkdir()
    with pytest.raises(WorkspaceError, match="has no kit.yaml"):
        reg.add([str(tmp_path / "plain")])
    assert reg.add([str(tmp_path / "later" / "*")]).notes == (f"{tmp_path / 'later' / '*'} matches no workspace yet",)


def test_relative_paths_are_stored_absolute(tmp_path):
    [a] = spaces(tmp_path, "a")
    reg = Registry(tmp_path / "fleet.yaml")
    reg.add(["a"], cwd=tmp_path)
    assert reg.entries()[0].pattern == str(a)


def test_remove_by_pattern_and_a_glob_covered_path_names_the_glob(tmp_path):
    a, b = spaces(tmp_path / "u", "a", "b")
    reg = Registry(tmp_path / "fleet.yaml")
    reg.add([str(tmp_path / "u" / "*")])
    change = reg.remove([str(a)])
    assert change.done == () and change.unchanged == (str(a),)
    assert "the glob" in change.notes[0] and str(tmp_path / "u" / "*") in change.notes[0]
    assert reg.remove([str(tmp_path / "u" / "*")]).done == (str(tmp_path / "u" / "*"),)
    assert reg.members() == []


def test_a_workspace_that_disappears_is_a_member_with_a_problem(tmp_path):
    [a] = spaces(tmp_path, "a")
    reg = Registry(tmp_path / "fleet.yaml")
    reg.add([str(a)])
    (a / "kit.yaml").unlink()
    [m] = reg.members()
    assert m.problem == "has no kit.yaml, so it is not a Kit workspace"


@pytest.mark.parametrize("text, line, message", [
    ("workspaces:\n  - /a\n  - [x]\n", 3, "each workspaces entry is a path"),
    ("workspace:\n  - /a\n", 1, "unknown key 'workspace'"),
    ("workspaces:\n  - path: /a\n    queu: b\n", 2, "unknown key 'queu'"),
    ("workspaces: /a\n", 1, "'workspaces' must be a list"),
    ("workspaces:\n  - /a\n - /b\n", 3, "invalid YAML"),
    ("- /a\n", 1, "must be a mapping"),
])
def test_a_bad_registry_is_one_error_with_its_line(tmp_path, text, line, message):
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        Registry(path).entries()
    assert info.value.path == str(path) and info.value.line == line
    assert message in info.value.message


def test_an_edit_saved_while_kit_fleet_add_writes_is_merged_not_reverted(tmp_path, monkeypatch):
    """Regression (issue 12): `add` read the file, then wrote its own version over a person's save."""
    import os
    import subprocess
    import sys

    a, b = spaces(tmp_path, "a", "b")
    path = tmp_path / "fleet.yaml"
    reg = Registry(path)
    reg.add([str(a)])
    real = os.fsync
    fired: list[int] = []

    def fsync(fd: int) -> None:  # another process saves the registry while Kit flushes its temp file
        real(fd)
        if not fired and os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".fleet.yaml."):
            fired.append(fd)
            subprocess.run([sys.executable, "-c", "import sys; p = sys.argv[1]; t = open(p).read(); "
                            "open(p, 'w').write(t.replace(sys.argv[2], sys.argv[2] + sys.argv[3]))",
                            str(path), f"- {a}\n", f"- {tmp_path}/users/*\n"], check=True)

    monkeypatch.setattr(os, "fsync", fsync)
    assert reg.add([str(b)]).done == (str(b),)
    assert fired
    assert [e.pattern for e in reg.entries()] == [str(a), f"{tmp_path}/users/*", str(b)]


def test_a_registry_nested_thousands_deep_is_one_line_not_a_crash(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text("workspaces:\n  - " + "[" * 2000 + "]" * 2000 + "\n")  # was a RecursionError
    with pytest.raises(ConfigError) as info:
        Registry(path).entries()
    assert "nested more than 64 levels" in info.value.message and (info.value.path, info.value.line) == (str(path), 2)


def test_a_registry_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    path = tmp_path / "fleet.yaml"
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="FIFO"):
        Registry(path).entries()
    with pytest.raises(ConfigError, match="FIFO"):
        Registry(path).add([str(spaces(tmp_path, "a")[0])])
