"""Run kinds, the config file name and the ignore list are each defined once, and every part of
Kit that needs them uses that one definition."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import setuptools

from kit import kinds
from kit.errors import KitError
from kit.ignore import IGNORED_DIRS, IGNORED_NAMES, is_ignored

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("command", ["run", "prompt"])
def test_kind_choices_are_the_run_kinds(cli, command):
    from kit.cli.main import cli as group

    sub = group.get_command(None, command)
    [option] = [p for p in sub.params if p.name == "kind"]
    assert tuple(option.type.choices) == kinds.KINDS == ("default", "subagent", "cron", "heartbeat", "shared")
    assert cli(command, "--kind", "nightly", "-w", ".").exit_code == 2


def test_an_unknown_kind_is_refused_in_one_voice(workspace):
    from kit.agent.loop import Agent
    from kit.prompt.builder import build_prompt

    message = "unknown run kind 'nightly'; expected one of default, subagent, cron, heartbeat, shared"
    for attempt in (lambda: build_prompt(workspace, "nightly"), lambda: Agent(workspace, kind="nightly"),
                    lambda: kinds.run_kind("nightly")):
        with pytest.raises(KitError) as caught:
            attempt()
        assert str(caught.value) == message


def test_each_kind_decides_files_recall_and_skipping(workspace):
    from kit.prompt.builder import build_prompt

    for kind in kinds.RUN_KINDS.values():
        result = build_prompt(workspace, kind.name)
        included = {f.name for f in result.files if f.reason != "excluded_by_kind"}
        assert included == kind.files & {f.name for f in result.files}
    assert [k.name for k in kinds.RUN_KINDS.values() if not k.recall] == ["shared"]
    assert [k.name for k in kinds.RUN_KINDS.values() if k.skip_without_tasks] == ["heartbeat"]


def test_the_full_scan_ignores_what_the_watcher_ignores(workspace):
    """An editor's lock file `.#SOUL.md` matches `*.md`; the workspace scan used to load it."""
    root = workspace.root
    (root / ".#SOUL.md").write_text("user@host.1234:1700000000", encoding="utf-8")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "README.md").write_text("# a package\n", encoding="utf-8")
    (root / "NOTES.md").write_text("# notes\n", encoding="utf-8")
    workspace.reload()
    names = set(workspace.snapshot.documents)
    assert "NOTES.md" in names and ".#SOUL.md" not in names
    assert is_ignored(".#SOUL.md") and is_ignored("node_modules/README.md")


def test_memory_index_and_skill_scan_use_the_list(tmp_path):
    from kit.memory.index import is_indexable
    from kit.skills.scanner import code_files

    assert is_indexable("memory/2026-05-07.md")
    for rel in ("memory/node_modules/x.md", "memory/__pycache__/x.md", "memory/a.md~", "memory/.#a.md"):
        assert not is_indexable(rel), rel
    skill = tmp_path / "s"
    for rel in ("scripts/run.sh", "scripts/node_modules/dep.js", ".kit/x.py", "__pycache__/m.py"):
        (skill / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill / rel).write_text("echo hi\n", encoding="utf-8")
    assert code_files(skill) == ["scripts/run.sh"]


def test_init_skips_the_list(tmp_path, monkeypatch):
    from kit import init

    template = tmp_path / "template"
    (template / "__pycache__").mkdir(parents=True)
    (template / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (template / "kit.yaml").write_text("{}\n", encoding="utf-8")
    (template / "SOUL.md").write_text("# soul\n", encoding="utf-8")
    (template / "SOUL.md~").write_text("backup\n", encoding="utf-8")
    (template / ".DS_Store").write_bytes(b"\0")
    monkeypatch.setattr(init, "bundled", lambda name: template)
    result = init.init_workspace(tmp_path / "ws")
    assert sorted(result.created) == [".gitignore", "SOUL.md", "kit.yaml"]  # .gitignore: written by init


def test_the_wheel_build_loads_the_same_list(monkeypatch):
    monkeypatch.setattr(setuptools, "setup", lambda **kw: None)
    ignore = runpy.run_path(str(REPO / "setup.py"), run_name="setup_under_test")["IGNORE"]
    names = [*IGNORED_DIRS, "x.tmp", "a~", ".#a", "b.swp", "4913", "m.pyc", ".DS_Store", "SOUL.md", "hooks"]
    assert ignore("/anywhere", names) == set(names) - {"SOUL.md", "hooks"}
    assert len(IGNORED_NAMES) == 9


def test_the_config_file_name_is_one_constant():
    from kit import paths

    assert paths.CONFIG_FILE == "kit.yaml" and paths.user_config_file().name == paths.CONFIG_FILE
    literal = '"kit.yaml"'
    users = [p.relative_to(REPO).as_posix() for p in (REPO / "engine" / "kit").rglob("*.py")
             if literal in p.read_text(encoding="utf-8")]
    assert users == ["engine/kit/paths.py"]
