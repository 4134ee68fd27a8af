"""How hook problems and replies reach people (found by a new-user pass): a broken HOOK.md is one
doctor error, as a broken SKILL.md is; `kit hooks fire` shows what the hooks replied; hook
warnings name their key's line, and `kit hooks list --json` gives located Problem objects."""

from __future__ import annotations

import json

from helpers_hooks import write_hook
from kit.hooks.registry import registry_for
from kit.problems import Problem
from kit.workspace import Workspace

BROKEN_HOOK = "---\nname: broken\ndescription: broken yaml\nevents: [tool:before\n---\n"
BROKEN_SKILL = "---\nname: broken\ndescription: [oops\n---\nBody\n"
YAML_ERROR = "invalid frontmatter YAML: expected ',' or ']', but got '<stream end>'"


def test_doctor_reports_a_broken_hook_md_once_as_a_hooks_error_like_a_broken_skill_md(ws_path, cli):
    (ws_path / "hooks" / "broken").mkdir(parents=True)
    (ws_path / "hooks" / "broken" / "HOOK.md").write_text(BROKEN_HOOK)
    (ws_path / "skills" / "broken").mkdir(parents=True)
    (ws_path / "skills" / "broken" / "SKILL.md").write_text(BROKEN_SKILL)

    result = cli("doctor", "--offline", "--json", "-w", ws_path)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["errors"] == 2
    broken = [(f["area"], f["path"], f["line"], f["message"]) for f in report["findings"] if f["severity"] == "error"]
    assert broken == [("skills", "skills/broken/SKILL.md", 3, YAML_ERROR),
                      ("hooks", "hooks/broken/HOOK.md", 4, YAML_ERROR)]

    text = cli("doctor", "--offline", "-w", ws_path).stdout
    assert text.count("hooks/broken/HOOK.md") == 1
    assert f"hooks     hooks/broken/HOOK.md:4: {YAML_ERROR}" in text
    assert "documents" not in text
    assert "2 errors" in text


GREET_HANDLER = 'def handle(event):\n    return {"reply": "hello " + (event.data.get("args") or "world")}\n'


def test_hooks_fire_text_shows_each_reply_and_which_hook_gave_it(ws_path, cli):
    write_hook(ws_path / "hooks", "greet", ["command:greet"], GREET_HANDLER, description="Adds a /greet command.")
    write_hook(ws_path / "hooks", "shout", ["command:greet"], command="echo '[bold]HI[/bold]'")
    assert cli("hooks", "trust", "greet", "-w", ws_path).exit_code == 0
    assert cli("hooks", "trust", "shout", "-w", ws_path).exit_code == 0

    fired = cli("hooks", "fire", "command:greet", "--data", '{"args": "bob"}', "-w", ws_path)
    assert fired.exit_code == 0
    assert fired.stdout.splitlines() == [
        "command:greet: ran command-logger, greet, shout",
        "reply from greet: hello bob",
        "reply from shout: [bold]HI[/bold]",  # a reply is text, not Rich markup
    ]
    as_json = json.loads(cli("hooks", "fire", "command:greet", "--data", '{"args": "bob"}', "--json",
                             "-w", ws_path).stdout)
    assert as_json["replies"] == ["hello bob", "[bold]HI[/bold]"]
    assert as_json["replied_by"] == ["greet", "shout"]


TYPO_HOOK = """\
---
name: typo
description: d
events: [memory:wrte]
colour: blue
timeout_s: -1
---
"""


def test_hook_problems_name_their_key_line_everywhere_and_json_gives_problem_objects(ws_path, cli):
    folder = ws_path / "hooks" / "typo"
    folder.mkdir(parents=True)
    (folder / "HOOK.md").write_text(TYPO_HOOK)
    (folder / "handler.py").write_text("def handle(event):\n    return None\n")
    expected = [
        Problem(area="hooks", path="hooks/typo/HOOK.md", line=6, severity="error",
                message="'timeout_s' must be a positive number of seconds, not -1",
                details={"hook": "typo", "root": "workspace"}),
        Problem(area="hooks", path="hooks/typo/HOOK.md", line=4, severity="warning",
                message="event 'memory:wrte' is not one Kit fires; did you mean 'memory:write'?",
                details={"hook": "typo", "root": "workspace"}),
        Problem(area="hooks", path="hooks/typo/HOOK.md", line=5, severity="warning",
                message="unknown frontmatter key 'colour' (ignored)",
                details={"hook": "typo", "root": "workspace"}),
    ]
    hook = registry_for(Workspace.open(ws_path)).get("typo")
    assert hook.problems == tuple(expected)
    # the message tuples and the first error's line stay, for what reads them
    assert hook.errors == ("'timeout_s' must be a positive number of seconds, not -1",)
    assert hook.warnings == (expected[1].message, expected[2].message)
    assert hook.line == 6

    listed = json.loads(cli("hooks", "list", "--json", "-w", ws_path).stdout)
    [row] = [r for r in listed["hooks"] if r["name"] == "typo"]
    assert row["problems"] == [p.to_json() for p in expected]  # the shape `kit skills check --json` has
    assert (row["errors"], row["warnings"], row["line"]) == (list(hook.errors), list(hook.warnings), 6)
    # every row has them, Claude Code's too
    assert all(isinstance(r["problems"], list) for r in listed["hooks"])

    text = cli("hooks", "list", "-w", ws_path).stdout
    assert "error: hooks/typo/HOOK.md:6: 'timeout_s' must be a positive number" in text
    assert "warning: hooks/typo/HOOK.md:4: event 'memory:wrte' is not one Kit fires" in text
    assert "warning: hooks/typo/HOOK.md:5: unknown frontmatter key 'colour'" in text

    doctor = json.loads(cli("doctor", "--offline", "--json", "-w", ws_path).stdout)
    found = [f for f in doctor["findings"] if f["path"] == "hooks/typo/HOOK.md"]
    assert found == [{k: v for k, v in p.to_json().items() if k not in ("hook", "root")} for p in expected]


def test_a_warning_about_a_command_names_the_command_line(ws_path):
    write_hook(ws_path / "hooks", "sneaky", ["heartbeat"], command='sh "$KIT_HOOK_DIR/.run.sh"',
               files={".run.sh": "echo hi\n"})
    [problem] = registry_for(Workspace.open(ws_path)).get("sneaky").problems
    text = (ws_path / "hooks" / "sneaky" / "HOOK.md").read_text().split("\n")
    assert problem.severity == "warning" and text[problem.line - 1].startswith("command:")


def test_a_handler_that_can_never_run_is_a_located_error_in_doctor_list_and_run(ws_path, cli, tmp_path):
    """Regression (fuzz pass): a handler.py with a syntax error, or without handle(), was silent:
    `hooks list` said active, doctor nothing, `kit run` nothing; only .kit/logs/hooks.log knew."""
    hooks = ws_path / "hooks"
    write_hook(hooks, "typo", ["session:start"], handler="def handle(event:\n")
    write_hook(hooks, "nohandle", ["session:start"], handler="def handler(event):\n    return None\n")
    write_hook(hooks, "fine", ["session:start"], handler="from os import path as handle\n")
    write_hook(hooks, "unpacked", ["session:start"], handler="handle, other = print, 1\nx = '\\d'\n")
    write_hook(hooks, "looped", ["session:start"], handler="for _ in [1]:\n    def handle(event):\n        pass\n")
    write_hook(hooks, "nul", ["session:start"], handler="x = 1\n\0\n")
    report = json.loads(cli("doctor", "--offline", "--json", "-w", ws_path).stdout)
    errors = [(f["path"], f["line"], f["message"]) for f in report["findings"] if f["severity"] == "error"]
    assert errors == [
        ("hooks/nohandle/handler.py", None, "handler.py defines no top-level handle(event) function"),
        ("hooks/nul/handler.py", None, "handler.py does not compile: source code string cannot contain null bytes"),
        ("hooks/typo/handler.py", 1, "handler.py does not compile: '(' was never closed"),
    ]
    listed = {h["name"]: h["valid"] for h in json.loads(cli("hooks", "list", "--json", "-w", ws_path).stdout)["hooks"]}
    assert (listed["typo"], listed["nohandle"], listed["nul"], listed["fine"]) == (False, False, False, True)
    assert listed["unpacked"] and listed["looped"]  # bound where only running the file would tell
    script = tmp_path / "t.yaml"
    script.write_text("turns:\n  - text: hi\n")
    ran = cli("run", "hello", "-w", ws_path, "--model", f"script:{script}")
    assert "kit: hook typo does not run: hooks/typo/handler.py:1: handler.py does not compile: '(' was never " \
           "closed" in ran.stderr
