"""Found by a new-user pass: a hook answer Kit cannot read fails closed (Kit's and Claude Code's),
Claude Code problems are reported at their own lines, `kit hooks fire` gives the documented data,
hooks.log has one line per incident, doctor states a kept-out hook once, and `kit hooks list`
shows a Claude Code handler's matcher."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers_agent import set_config
from helpers_hooks import hooks_log, write_hook
from kit.hooks.events import documented_data

CLAUDE = "hooks:\n  claude_code: true\n"
EXEC_LS = '{"name": "exec", "arguments": {"command": "ls"}}'
KIT_UNREADABLE = ("hook g answered in a way Kit cannot read: stdout is not valid JSON: Expecting value: "
                  "line 1 column 27 (char 26); the call is blocked (Kit fails closed)")


def log_lines(ws_path: Path) -> list[str]:
    """hooks.log without its timestamps."""
    return [line.split(" ", 1)[1] for line in hooks_log(ws_path).splitlines()]


def write_settings(ws_path: Path, text: str) -> None:
    (ws_path / ".claude").mkdir(exist_ok=True)
    (ws_path / ".claude" / "settings.json").write_text(text, encoding="utf-8")


# ------------------------------------------------------------------ 1: malformed JSON fails closed


@pytest.fixture
def unreadable_hook(ws_path, cli):
    """The report's hook: `echo '{"block": true, "reason": nope}'` (not JSON: nope is unquoted)."""
    def make(events: list[str]) -> None:
        write_hook(ws_path / "hooks", "g", events, command='sh "$KIT_HOOK_DIR/g.sh"',
                   files={"g.sh": "echo '{\"block\": true, \"reason\": nope}'\n"})
        assert cli("hooks", "trust", "-w", ws_path, "g").exit_code == 0
    return make


def test_a_command_hook_whose_json_does_not_parse_blocks_tool_before(ws_path, cli, unreadable_hook):
    unreadable_hook(["tool:before"])
    fired = cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json")
    assert fired.exit_code == 0
    out = json.loads(fired.stdout)
    assert (out["blocked"], out["blocked_by"], out["reason"]) == (True, "g", KIT_UNREADABLE)
    assert out["errors"] == ["g: stdout is not valid JSON: Expecting value: line 1 column 27 (char 26); blocked"]
    assert log_lines(ws_path) == [f"BLOCK tool:before hook=g: {KIT_UNREADABLE}"]  # once, no OUTPUT line

    text = cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS).stdout.splitlines()
    assert text[:2] == ["tool:before: ran g", f"blocked by g: {KIT_UNREADABLE}"]


def test_unreadable_json_blocks_a_message_and_is_only_an_error_where_nothing_can_be_blocked(
        ws_path, cli, unreadable_hook):
    unreadable_hook(["message:received", "tool:after"])
    received = json.loads(cli("hooks", "fire", "-w", ws_path, "message:received", "--json").stdout)
    assert received["blocked"] is True
    assert received["reason"] == KIT_UNREADABLE.replace("the call is blocked", "the message is blocked")
    after = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:after", "--data", EXEC_LS, "--json").stdout)
    assert after["blocked"] is False
    assert after["errors"] == ["g: stdout is not valid JSON: Expecting value: line 1 column 27 (char 26)"]
    assert log_lines(ws_path)[-1] == ("ERROR tool:after hook=g: stdout is not valid JSON: Expecting value: "
                                      "line 1 column 27 (char 26)")


def test_plain_text_and_valid_json_stdout_are_read_as_before(ws_path, cli):
    write_hook(ws_path / "hooks", "plain", ["tool:before"], command="echo 'checked {things}'")
    write_hook(ws_path / "hooks", "rewrite", ["tool:before"],
               command='echo \'{"arguments": {"command": "ls -a"}}\'')
    for name in ("plain", "rewrite"):
        assert cli("hooks", "trust", "-w", ws_path, name).exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert (out["blocked"], out["errors"]) == (False, [])
    assert out["data"]["arguments"] == {"command": "ls -a"}
    assert log_lines(ws_path) == ["OUTPUT tool:before hook=plain: checked {things}"]


def test_a_claude_code_hook_whose_json_does_not_parse_blocks(ws_path, cli):
    set_config(ws_path, CLAUDE)
    write_settings(ws_path, json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo '{permissionDecision: deny}'"}]}]}}))
    assert cli("hooks", "trust", "-w", ws_path, "claude-code").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    reason = ("Claude Code hook .claude/settings.json PreToolUse[0] answered in a way Kit cannot read: stdout is "
              "not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1); "
              "the call is blocked (Kit fails closed)")
    assert (out["blocked"], out["blocked_by"], out["reason"]) == (True, "claude:project:PreToolUse[0]", reason)
    assert out["errors"] == ["claude:project:PreToolUse[0]: answered in a way Kit cannot read: stdout is not "
                             "valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 "
                             "(char 1); blocked"]
    assert log_lines(ws_path) == [f"BLOCK tool:before hook=claude:project:PreToolUse[0]: {reason}"]


# ------------------------------------------------------------------ 2: each handler at its own line

SETTINGS = """\
{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]},
      {"matcher": "Read", "hooks": [{"type": "command", "command": "true"}]},
      {"matcher": "Write(", "hooks": [{"type": "command", "command": "true"}]},
      {"matcher": "Edit", "hooks": [{"type": "http", "url": "http://127.0.0.1:9/"}]}
    ],
    "PostToolUse": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "true",
            "timeout": "soon"
          }
        ]
      }
    ]
  }
}
"""


def test_claude_code_problems_are_reported_at_each_handler_s_line(ws_path, cli):
    set_config(ws_path, CLAUDE)
    write_settings(ws_path, SETTINGS)
    rows = json.loads(cli("hooks", "list", "-w", ws_path, "--json").stdout)["hooks"]
    lines = {r["name"]: (r["line"], [p["line"] for p in r["problems"]]) for r in rows if r["root"] == "claude-code"}
    assert lines == {"claude:project:PreToolUse[0]": (4, []), "claude:project:PreToolUse[1]": (5, []),
                     "claude:project:PreToolUse[2]": (6, [6]), "claude:project:PreToolUse[3]": (7, [7]),
                     "claude:project:PostToolUse[0]": (12, [15])}  # the handler's `{`, its "timeout" key

    report = json.loads(cli("doctor", "--offline", "--json", "-w", ws_path).stdout)
    found = [(f["path"], f["line"], f["message"].split(":")[0]) for f in report["findings"]
             if f["message"].startswith("Claude Code hook claude")]
    assert found == [(".claude/settings.json", 6, "Claude Code hook claude"),
                     (".claude/settings.json", 7, "Claude Code hook claude"),
                     (".claude/settings.json", 15, "Claude Code hook claude")]
    text = cli("doctor", "--offline", "-w", ws_path).stdout
    assert ".claude/settings.json:6: Claude Code hook claude:project:PreToolUse[2] cannot run: matcher" in text
    assert ".claude/settings.json:7: Claude Code hook claude:project:PreToolUse[3] cannot run: handler type" in text


# ------------------------------------------------------------------ 3: fire fills the documented data

DEPLOY = "def handle(event):\n    return {\"reply\": f\"queued a deploy of {event.data['args'] or 'everything'}\"}\n"


def test_fire_command_gives_the_documented_fields_and_the_docs_deploy_example_runs(ws_path, cli):
    write_hook(ws_path / "hooks", "deploy", ["command:deploy"], DEPLOY)  # docs/hooks.md's own example
    assert cli("hooks", "trust", "-w", ws_path, "deploy").exit_code == 0
    fired = cli("hooks", "fire", "-w", ws_path, "command:deploy")
    assert fired.stdout.splitlines() == ["command:deploy: ran command-logger, deploy",
                                         "reply from deploy: queued a deploy of everything"]
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "command:deploy", "--session", "main", "--json",
                         "--data", '{"args": "billing", "session_id": "s-1"}').stdout)
    assert out["data"] == {"session_id": "s-1", "key": "main", "messages": [], "command": "deploy",
                           "args": "billing"}  # --data wins over the defaults
    assert out["replies"] == ["queued a deploy of billing"]


def _documented() -> dict[str, list[str]]:
    """docs/hooks.md's "Data per event" table: each event's required top-level fields."""
    text = (Path(__file__).parents[1] / "docs" / "hooks.md").read_text(encoding="utf-8")
    table = text.split("### Data per event", 1)[1].split("\n\n", 2)[1]
    out = {}
    for row in table.splitlines()[2:]:
        event, data = row.split(" | ", 1)
        braces = data[data.index("`{") + 2:]
        depth, field, fields = 0, "", []
        for ch in braces:
            if ch in "[{(":
                depth += 1
            elif ch in "]})":
                if depth == 0:
                    break
                depth -= 1
            if ch == "," and depth == 0:
                fields.append(field)
                field = ""
            else:
                field += ch
        fields.append(field)
        names = [re.match(r"\s*(\w+\??)", f).group(1) for f in fields]
        out[event.strip("| `")] = [n for n in names if not n.endswith("?")]
    return out


def test_every_documented_event_field_gets_a_default():
    documented = _documented()
    assert len(documented) == 18 and "command:<name>" in documented
    for event, fields in documented.items():
        name = "command:deploy" if event == "command:<name>" else event
        data = documented_data(name, {}, session_key="main")
        assert set(fields) <= set(data), (event, sorted(set(fields) - set(data)))
    assert documented_data("tool:after", {"name": "exec"})["tool"] == "exec"
    assert documented_data("heartbeat", {"reply": "HEARTBEAT_OK"})["ok"] is True


# ------------------------------------------------------------------ 4: one log line per incident


def test_a_claude_code_timeout_is_one_block_line_and_fire_names_a_hook_that_could_not_run(ws_path, cli):
    set_config(ws_path, CLAUDE)
    write_settings(ws_path, json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Read", "hooks": [{"type": "command", "command": "sleep 30", "timeout": 0.5}]},
        {"matcher": "Edit", "hooks": [{"type": "http", "url": "http://127.0.0.1:9/"}]}]}}))
    assert cli("hooks", "trust", "-w", ws_path, "claude-code").exit_code == 0
    cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", '{"name": "read_file", "arguments": {"path": "a"}}')
    assert log_lines(ws_path) == [
        "BLOCK tool:before hook=claude:project:PreToolUse[0]: Claude Code hook .claude/settings.json "
        "PreToolUse[0] could not be run: timed out after 0.5s (command killed); the call is blocked "
        "(Kit fails closed)"]

    edit = '{"name": "edit_file", "arguments": {"path": "a", "old_text": "x", "new_text": "y"}}'
    text = cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", edit).stdout.splitlines()
    assert text[:2] == ["tool:before: ran no hooks; could not run claude:project:PreToolUse[1]",
                        "blocked by claude:project:PreToolUse[1]: Claude Code hook .claude/settings.json "
                        "PreToolUse[1] could not be run: handler type 'http' is not supported by Kit (only "
                        "'command'); the call is blocked (Kit fails closed)"]
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", edit, "--json").stdout)
    assert (out["ran"], out["not_run"], out["blocked_by"]) == ([], ["claude:project:PreToolUse[1]"],
                                                               "claude:project:PreToolUse[1]")
    assert len(log_lines(ws_path)) == 3  # one BLOCK line per fire


# ------------------------------------------------------------------ 6: doctor states it once


def test_doctor_names_a_kept_out_hook_once_at_the_workspace_file(ws_path, cli):
    folder = ws_path / "hooks" / "session-memory"
    folder.mkdir(parents=True)
    (folder / "HOOK.md").write_text("---\nname: session-memory\ndescription: OpenClaw's\n---\n")
    (folder / "handler.ts").write_text("export default async () => {};\n")
    report = json.loads(cli("doctor", "--offline", "--json", "-w", ws_path).stdout)
    said = [(f["path"], f["message"]) for f in report["findings"] if "stays in force" in f["message"]]
    assert said == [("hooks/session-memory/HOOK.md",
                     "the bundled hook 'session-memory' stays in force until this one is valid")]


# ------------------------------------------------------------------ 7: list shows the matcher


def test_hooks_list_shows_each_claude_code_handler_s_matcher(ws_path, cli):
    set_config(ws_path, CLAUDE)
    write_settings(ws_path, json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "true"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true"}]}]}}))
    rows = [line.split(None, 4) for line in cli("hooks", "list", "-w", ws_path).stdout.splitlines()
            if line.startswith("claude:")]
    assert [(row[0], row[4]) for row in rows] == [
        ("claude:project:PreToolUse[0]", 'tool:before (PreToolUse, matcher "Write|Edit")'),
        ("claude:project:UserPromptSubmit[0]", "message:received (UserPromptSubmit, no matcher)")]


# ------------------------------------------------------------------ a guard's answer Kit's own hooks cannot read

@pytest.mark.parametrize(("answer", "problem"), [
    ('{"block": 1}', "block 1 is not true or false"),
    ('{"block": "true"}', 'block "true" is not true or false'),
    ('{"decision": "denied"}', 'decision "denied" is not block, deny, allow or approve'),
    ('{"hookSpecificOutput": {"permissionDecision": "nope"}}',
     'permissionDecision "nope" is not allow or deny (Kit\'s own hooks cannot ask)'),
    ('{"continue": "no"}', 'continue "no" is not true or false'),
])
def test_a_kit_command_hooks_unreadable_decision_blocks(ws_path, cli, answer, problem):
    """Regression (new-user pass): a Kit HOOK.md guard answering `{"block": 1}` or `{"decision":
    "denied"}` let the call through, nothing logged. Where nothing can be blocked, the answer is
    not read at all."""
    write_hook(ws_path / "hooks", "g", ["tool:before", "tool:after"], command=f"cat > /dev/null; echo '{answer}'")
    assert cli("hooks", "trust", "-w", ws_path, "g").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    reason = f"hook g answered in a way Kit cannot read: {problem}; the call is blocked (Kit fails closed)"
    assert (out["blocked"], out["blocked_by"], out["reason"]) == (True, "g", reason)
    after = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:after", "--data", EXEC_LS, "--json").stdout)
    assert (after["blocked"], after["errors"]) == (False, [])


def test_continue_false_blocks_and_readable_answers_pass(ws_path, cli):
    write_hook(ws_path / "hooks", "stop", ["tool:before"],
               command="""cat > /dev/null; echo '{"continue": false, "stopReason": "frozen"}'""")
    assert cli("hooks", "trust", "-w", ws_path, "stop").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert (out["blocked"], out["reason"]) == (True, "frozen")
    for fine in ('{"block": false}', '{"decision": "Allow"}', '{"decision": "approve"}', '{"continue": true}',
                 '{"hookSpecificOutput": {"permissionDecision": "allow"}}',
                 # null is no answer (review: it blocked every call)
                 '{"decision": null, "block": null, "continue": null}', '{"decision": ""}',
                 '{"hookSpecificOutput": {"permissionDecision": null}}'):
        write_hook(ws_path / "hooks", "stop", ["tool:before"], command=f"cat > /dev/null; echo '{fine}'")
        assert cli("hooks", "trust", "-w", ws_path, "stop").exit_code == 0
        out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
        assert (out["blocked"], out["errors"]) == (False, []), fine


@pytest.mark.parametrize(("returned", "problem"), [
    ("{'block': 1}", "block 1 is not true or false"),
    ("'deny'", "returned str, expected a mapping or None"),
    ("True", "returned bool, expected a mapping or None"),
])
def test_a_python_handlers_unreadable_decision_blocks_too(ws_path, cli, returned, problem):
    write_hook(ws_path / "hooks", "py", ["tool:before"], f"def handle(event):\n    return {returned}\n")
    assert cli("hooks", "trust", "-w", ws_path, "py").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert (out["blocked"], out["reason"]) == (
        True, f"hook py answered in a way Kit cannot read: {problem}; the call is blocked (Kit fails closed)")


def test_a_null_decision_is_no_answer_and_a_bootstrap_hooks_files_still_apply(ws_path):
    """Review: `{"decision": None, "add": [...]}` blocked every call and dropped the bootstrap's file."""
    from kit.hooks.registry import registry_for
    from kit.workspace import Workspace

    write_hook(ws_path / "hooks", "boot", ["agent:bootstrap", "tool:before"],
               "def handle(event):\n    return {'decision': None, 'add': [{'name': 'X.md', 'content': 'x'}]}\n")
    registry = registry_for(Workspace.open(ws_path))
    registry.trust("boot")
    boot = registry.fire("agent:bootstrap", {"files": []})
    assert (boot.errors, boot.data["files"]) == ([], [{"name": "X.md", "content": "x"}])
    before = registry.fire("tool:before", {"name": "exec", "arguments": {"command": "ls"}})
    assert (before.blocked, before.errors) == (False, [])


def test_a_python_guard_that_times_out_blocks_and_one_that_raises_does_not(ws_path, cli):
    """Never answering (a timeout) may hide a no: it blocks where a hook may say no, as a command's
    timeout does. A handler that raised said it failed: logged, the pipeline goes on (exit 1 alike)."""
    write_hook(ws_path / "hooks", "slow", ["tool:before"], "import time\ndef handle(event):\n    time.sleep(5)\n",
               timeout_s=0.3)
    assert cli("hooks", "trust", "-w", ws_path, "slow").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert (out["blocked"], out["reason"]) == (
        True, "hook slow could not be run: timed out after 0.3s (handler abandoned); the call is blocked "
              "(Kit fails closed)")
    # (the sleeper's thread still runs: while it does, that hook is not started again, and blocks)
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert out["reason"] == ("hook slow could not be run: still running after an earlier timeout (not started "
                             "again); the call is blocked (Kit fails closed)")
    (ws_path / "hooks" / "slow" / "HOOK.md").unlink()
    write_hook(ws_path / "hooks", "raises", ["tool:before"], "def handle(event):\n    raise RuntimeError('boom')\n")
    assert cli("hooks", "trust", "-w", ws_path, "raises").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert (out["blocked"], out["errors"]) == (False, ["raises: RuntimeError: boom"])


@pytest.mark.parametrize(("command", "error"), [
    ("sleep 5", "timed out after 0.5s (command killed)"),
    ('"$KIT_HOOK_DIR/missing.sh"', "command exited 127: /bin/sh: 1: {dir}/missing.sh: not found"),
])
def test_a_kit_command_guard_that_never_answers_blocks_where_it_may_stop_kit(ws_path, cli, command, error):
    """Regression (new-user pass): a HOOK.md guard that timed out, or whose script path was mistyped,
    let the call through; a Claude Code hook doing the same blocks."""
    write_hook(ws_path / "hooks", "slow", ["tool:before", "tool:after"], command=command, timeout_s=0.5)
    assert cli("hooks", "trust", "-w", ws_path, "slow").exit_code == 0
    error = error.format(dir=ws_path / "hooks" / "slow")
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert out["blocked"] is True
    assert out["reason"].startswith(f"hook slow could not be run: {error}")
    assert out["reason"].endswith("; the call is blocked (Kit fails closed)")
    after = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:after", "--data", EXEC_LS, "--json").stdout)
    assert after["blocked"] is False and after["errors"][0].startswith(f"slow: {error}")


def test_a_claude_code_block_names_the_handler_not_only_its_group(ws_path, cli):
    """Regression (new-user pass): handler PreToolUse[0].1 timing out was reported as PreToolUse[0]."""
    set_config(ws_path, CLAUDE)
    write_settings(ws_path, json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Read", "hooks": [{"type": "command", "command": "true"},
                                      {"type": "command", "command": "sleep 30", "timeout": 0.5}]}]}}))
    assert cli("hooks", "trust", "-w", ws_path, "claude-code").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data",
                         '{"name": "read_file", "arguments": {"path": "a"}}', "--json").stdout)
    assert (out["blocked_by"], out["reason"]) == (
        "claude:project:PreToolUse[0].1", "Claude Code hook .claude/settings.json PreToolUse[0].1 could not be run: "
        "timed out after 0.5s (command killed); the call is blocked (Kit fails closed)")


def test_a_command_with_a_handler_py_beside_it_is_warned(ws_path, cli):
    """Regression (new-user pass): a hook with both `command:` and handler.py ran the command and
    never the handler, without a word."""
    write_hook(ws_path / "hooks", "both", ["tool:before"], "def handle(event):\n    return {'block': True}\n",
               command="true")
    write_hook(ws_path / "hooks", "runs-it", ["tool:before"], "def handle(event):\n    return None\n",
               command='python3 "$KIT_HOOK_DIR/handler.py"')
    write_hook(ws_path / "hooks", "module", ["tool:before"], "def handle(event):\n    return None\n",
               command='cd "$KIT_HOOK_DIR" && python3 -m handler')
    write_hook(ws_path / "hooks", "other", ["tool:before"], "def handle(event):\n    return None\n",
               command='python3 "$KIT_HOOK_DIR/my_handler.py"')
    rows = {r["name"]: r for r in json.loads(cli("hooks", "list", "-w", ws_path, "--json").stdout)["hooks"]}
    warning = ("'command' runs and the handler.py beside it never does (a guard written there does not guard): "
               "remove one")
    assert [(p["path"], p["line"], p["severity"], p["message"]) for p in rows["both"]["problems"]] == [
        ("hooks/both/HOOK.md", 6, "warning", warning)]
    assert rows["runs-it"]["problems"] == rows["module"]["problems"] == []
    assert [p["message"] for p in rows["other"]["problems"]] == [warning]  # review: a substring was enough


def test_firing_an_empty_event_is_a_usage_error(ws_path, cli):
    fired = cli("hooks", "fire", "", "-w", ws_path)  # it printed ": ran no hooks", exit 0
    assert fired.exit_code == 2 and "Invalid value for EVENT: is empty: name an event" in fired.stderr


@pytest.mark.parametrize(("event", "kit_event", "answer", "problem"), [
    ("PreToolUse", "tool:before", {"continue": "no"}, 'continue "no" is not true or false'),
    ("UserPromptSubmit", "message:received", {"decision": "denied"}, 'decision "denied" is not block'),
])
def test_a_claude_code_hooks_unreadable_answer_blocks_as_a_kit_hooks_does(ws_path, cli, event, kit_event, answer,
                                                                         problem):
    """Review: the two readers disagreed — a Kit hook's `{"continue": "no"}` blocked, a Claude Code
    hook's passed."""
    set_config(ws_path, CLAUDE)
    write_settings(ws_path, json.dumps({"hooks": {event: [{"hooks": [
        {"type": "command", "command": f"cat > /dev/null; echo '{json.dumps(answer)}'"}]}]}}))
    assert cli("hooks", "trust", "-w", ws_path, "claude-code").exit_code == 0
    data = EXEC_LS if kit_event == "tool:before" else '{"text": "hi"}'
    out = json.loads(cli("hooks", "fire", "-w", ws_path, kit_event, "--data", data, "--json").stdout)
    assert out["blocked"] is True
    assert f"answered in a way Kit cannot read: {problem};" in out["reason"]
    write_settings(ws_path, json.dumps({"hooks": {event: [{"hooks": [
        {"type": "command", "command": "cat > /dev/null; echo '{\"decision\": null, \"continue\": null}'"}]}]}}))
    assert cli("hooks", "trust", "-w", ws_path, "claude-code").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, kit_event, "--data", data, "--json").stdout)
    assert (out["blocked"], out["errors"]) == (False, [])


@pytest.mark.parametrize("answer", ['{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}',
                                    '{"decision": "block", "reason": "no"}'])
def test_a_deny_written_before_exit_1_blocks_in_both_readers_and_the_exit_is_logged(ws_path, cli, answer):
    """Re-check pass: the Claude Code reader blocked a written deny on exit 1, a Kit command hook
    did not; and a Claude Code hook's exit 1 with JSON stdout was not logged."""
    write_hook(ws_path / "hooks", "g", ["tool:before"], command=f"cat > /dev/null; echo '{answer}'; exit 1")
    assert cli("hooks", "trust", "-w", ws_path, "g").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert (out["blocked"], out["reason"]) == (True, "no")
    (ws_path / "hooks" / "g" / "HOOK.md").unlink()
    set_config(ws_path, CLAUDE)
    write_settings(ws_path, json.dumps({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": f"cat > /dev/null; echo '{answer}'; exit 1"}]}]}}))
    assert cli("hooks", "trust", "-w", ws_path, "claude-code").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert (out["blocked"], out["reason"]) == (True, "no")
    write_settings(ws_path, json.dumps({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "cat > /dev/null; echo '{}'; exit 1"}]}]}}))
    assert cli("hooks", "trust", "-w", ws_path, "claude-code").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert (out["blocked"], out["errors"]) == (False, ["claude:project:PreToolUse[0]: non-blocking error: exit 1"])


def test_a_claude_code_hooks_unknown_decision_is_named_by_its_own_key(ws_path, cli):
    set_config(ws_path, CLAUDE)
    write_settings(ws_path, json.dumps({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "cat > /dev/null; echo '{\"decision\": \"maybe\"}'"}]}]}}))
    assert cli("hooks", "trust", "-w", ws_path, "claude-code").exit_code == 0
    out = json.loads(cli("hooks", "fire", "-w", ws_path, "tool:before", "--data", EXEC_LS, "--json").stdout)
    assert out["blocked"] is True
    assert "answered in a way Kit cannot read: decision 'maybe' is not approve, block, allow, ask or deny;" in out["reason"]
