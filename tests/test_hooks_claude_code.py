"""Claude Code hooks unchanged (issue 11, deliver 3): .claude/settings*.json and
~/.claude/settings.json run on Kit's events with Claude Code's payloads and decisions, trust-gated,
failing closed when Kit cannot run them. The scripts below are shaped like the public ones in
anthropics/claude-code (bash_command_validator_example.py, deny-with-reason, agents-md)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from helpers_agent import add_hook, agent_for, recorded_calls, set_config, write_script
from kit.hooks import claude_map as cm
from kit.hooks.registry import registry_for
from kit.tools import ToolContext, execute_tool
from kit.workspace import Workspace

CONFIG = """\
memory:
  active_recall: {enabled: false}
hooks:
  claude_code: true
tools:
  exec: {mode: allow}
"""

# like anthropics/claude-code examples/hooks/bash_command_validator_example.py: stderr + exit 2
GUARD_EXIT2 = """\
import json, re, sys
data = json.load(sys.stdin)
with open("payloads.jsonl", "a") as log:
    log.write(json.dumps({"data": data, "project": __import__("os").environ.get("CLAUDE_PROJECT_DIR")}) + "\\n")
if data.get("tool_name") != "Bash":
    sys.exit(0)
command = data["tool_input"]["command"]
if re.search(r"\\brm\\s+-rf\\b", command):
    print("• Blocked: rm -rf is not allowed here, move files to trash/ instead", file=sys.stderr)
    sys.exit(2)
"""
# like plugins/deny-with-reason/hooks/pretooluse.py: JSON deny, exit 0
DENY_JSON = """\
import json, sys
data = json.load(sys.stdin)
path = data["tool_input"]["file_path"]
if "/secrets/" in path:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": "protected: " + path}}))
"""
# like plugins/agents-md/hooks-handlers/session-start.py
SESSION_CTX = """\
import json
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "branch=main"}}))
"""


def settings(hooks: dict) -> str:
    return json.dumps({"hooks": hooks}, indent=2)


def py(script: str) -> list[dict]:
    return [{"type": "command", "command": f"python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/{script}\""}]


def write_claude(root: Path, hooks: dict, *, local: dict | None = None, scripts: dict | None = None) -> None:
    folder = root / ".claude"
    (folder / "hooks").mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(settings(hooks), encoding="utf-8")
    if local is not None:
        (folder / "settings.local.json").write_text(settings(local), encoding="utf-8")
    for name, text in (scripts or {}).items():
        (folder / "hooks" / name).write_text(textwrap.dedent(text), encoding="utf-8")


STANDARD = {
    "PreToolUse": [
        {"matcher": "Bash", "hooks": py("guard_exit2.py")},
        {"matcher": "Write|Edit", "hooks": [{**py("deny_json.py")[0], "timeout": 5}]},
    ],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'Project uses tabs.'"}]}],
    "SessionStart": [{"matcher": "startup", "hooks": py("session_ctx.py")}],
}
SCRIPTS = {"guard_exit2.py": GUARD_EXIT2, "deny_json.py": DENY_JSON, "session_ctx.py": SESSION_CTX}


@pytest.fixture
def ws(ws_path):
    set_config(ws_path, CONFIG)
    write_claude(ws_path, STANDARD, scripts=SCRIPTS)
    ws = Workspace.open(ws_path)
    registry_for(ws).trust("claude-code")
    return ws


def payloads(ws) -> list[dict]:
    path = ws.root / "payloads.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_exit2_bash_guard_blocks_exec_and_the_model_sees_the_reason(ws, tmp_path):
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "exec", "arguments": {"command": "rm -rf build"}}]},
        {"tool_calls": [{"name": "exec", "arguments": {"command": "echo fine > ok.txt", "timeout_s": 5}}]},
        {"text": "done"},
    ])
    (ws.root / "build").mkdir()
    result = agent_for(ws, script).turn("clean up")
    assert result.reply == "done"
    blocked, ran = result.tool_calls
    assert blocked.blocked and not blocked.ok
    assert (ws.root / "build").is_dir()  # rm -rf never ran
    assert ran.ok and (ws.root / "ok.txt").read_text() == "fine\n"
    tool_messages = [m for m in recorded_calls(script)[1]["messages"] if m["role"] == "tool"]
    assert tool_messages[-1]["content"] == (
        "blocked by a hook: • Blocked: rm -rf is not allowed here, move files to trash/ instead")
    first, second = payloads(ws)
    assert first["project"] == str(ws.root)
    data = first["data"]
    assert data["hook_event_name"] == "PreToolUse" and data["tool_name"] == "Bash"
    assert data["tool_input"] == {"command": "rm -rf build"}
    assert data["cwd"] == str(ws.root) and data["session_id"] == result.session
    assert data["transcript_path"] == str(ws.root / ".kit" / "sessions" / f"{result.session}.jsonl")
    assert second["data"]["tool_input"] == {"command": "echo fine > ok.txt", "timeout": 5000}


def test_json_permission_deny_blocks_write_and_edit(ws):
    ctx = ToolContext(ws, session_id="s1")
    out = execute_tool(ctx, "write_file", {"path": "secrets/key.txt", "content": "x"})
    assert out.blocked
    assert out.result == f"blocked by a hook: protected: {ws.root}/secrets/key.txt"
    assert not (ws.root / "secrets" / "key.txt").exists()
    (ws.root / "notes.md").write_text("a b")
    edit = execute_tool(ctx, "edit_file", {"path": "notes.md", "old_text": "a", "new_text": "c"})
    assert edit.ok and (ws.root / "notes.md").read_text() == "c b"  # Edit matched, not denied


def test_prompt_and_session_context_reach_the_model_not_the_transcript(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "ok"}])
    agent = agent_for(ws, script)
    agent.turn("hello")
    user = [m for m in recorded_calls(script)[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert user == "hello\n\n<hook-context>\nbranch=main\n\nProject uses tabs.\n</hook-context>"
    assert "hook-context" not in recorded_calls(script)[0]["messages"][0]["content"]  # not the system prompt
    assert agent.conversation()[0] == {"role": "user", "content": "hello"}


def test_unmappable_payload_fails_closed(ws):
    """exec without a string command cannot be put in Bash's terms: the Bash guard cannot judge it,
    so the call is blocked with a warning, never let through."""
    ctx = ToolContext(ws, session_id="s1")
    out = execute_tool(ctx, "exec", {"command": ["rm", "-rf", "build"]})
    assert out.blocked
    assert out.result.startswith("blocked by a hook: Claude Code hook .claude/settings.json PreToolUse[0] "
                                 "could not be run: Kit cannot give it this call's payload: exec call has no "
                                 "string 'command' argument; the call is blocked (Kit fails closed)")
    assert payloads(ws) == []
    log = (ws.root / ".kit" / "logs" / "hooks.log").read_text()
    assert "BLOCK tool:before hook=claude:project:PreToolUse[0]" in log


@pytest.mark.parametrize("handler, why", [
    ({"type": "http", "url": "http://127.0.0.1:9/hook"}, "handler type 'http' is not supported by Kit"),
    ({"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/missing.sh"},
     "its command could not be run (exit 127)"),
    ({"type": "command", "command": "sleep 5", "timeout": 0.3}, "timed out after 0.3s"),
    ({"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"permissionDecision\": \"maybe\"}}'"},
     "permissionDecision 'maybe'"),
])
def test_hooks_kit_cannot_run_fail_closed(ws, handler, why):
    write_claude(ws.root, {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]})
    registry_for(ws).trust("claude-code")
    out = execute_tool(ToolContext(ws), "exec", {"command": "echo hi > hi.txt"})
    assert out.blocked and why in out.result and "Kit fails closed" in out.result
    assert not (ws.root / "hi.txt").exists()


def test_broken_matcher_blocks_every_call_and_doctor_names_the_line(ws):
    write_claude(ws.root, {"PreToolUse": [{"matcher": "Bash(", "hooks": py("guard_exit2.py")}]}, scripts=SCRIPTS)
    registry_for(ws).trust("claude-code")
    out = execute_tool(ToolContext(ws), "read_file", {"path": "SOUL.md"})
    assert out.blocked and "is not a valid regular expression" in out.result
    rows = {r["name"]: r for r in ws.hooks.listing() if r["root"] == "claude-code"}
    row = rows["claude:project:PreToolUse[0]"]
    # the handler starts on line 7; its problem is the matcher's, on line 5 (not "PreToolUse" on 3)
    assert row["valid"] is False and row["line"] == 7 and row["file"] == ".claude/settings.json"
    assert [p["line"] for p in row["problems"]] == [5]
    assert '"matcher": "Bash("' in (ws.root / ".claude" / "settings.json").read_text().splitlines()[4]
    found = [p for p in ws.doctor(offline=True) if "Claude Code hook" in p.message]
    assert [(p.severity, p.path, p.line) for p in found] == [("error", ".claude/settings.json", 5)]
    assert "cannot run: matcher 'Bash(' is not a valid regular expression" in found[0].message
    assert found[0].message.endswith("(it blocks what it matches: Kit fails closed)")


def test_non_blocking_exit_and_allow(ws):
    write_claude(ws.root, {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo oops >&2; exit 1"}]},
        {"matcher": "Read", "hooks": [{"type": "command", "command":
                                       "echo '{\"hookSpecificOutput\": {\"permissionDecision\": \"allow\", "
                                       "\"additionalContext\": \"read carefully\"}}'"}]},
    ]})
    registry_for(ws).trust("claude-code")
    ctx = ToolContext(ws)
    out = execute_tool(ctx, "exec", {"command": "echo hi > hi.txt"})
    assert out.ok and (ws.root / "hi.txt").exists()  # exit 1 does not block, as in Claude Code
    assert "non-blocking error: exit 1: oops" in (ws.root / ".kit" / "logs" / "hooks.log").read_text()
    read = execute_tool(ctx, "read_file", {"path": "hi.txt"})
    assert read.ok and read.result == "hi\n\n\n[hook context] read carefully"


def test_ask_is_deny_without_a_person_and_asks_one(ws):
    write_claude(ws.root, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
        "echo '{\"hookSpecificOutput\": {\"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"sure?\"}}'"}]}]})
    registry_for(ws).trust("claude-code")
    out = execute_tool(ToolContext(ws), "exec", {"command": "echo hi > hi.txt"})
    assert out.blocked and "sure?" in out.result and "not interactive" in out.result
    asked = []
    ctx = ToolContext(ws, interactive=True, approve=lambda command, reason: asked.append((command, reason)) or True)
    assert execute_tool(ctx, "exec", {"command": "echo hi > hi.txt"}).ok
    assert asked == [("exec echo hi > hi.txt", "sure? (claude:project:PreToolUse[0])")]


def test_updated_input_is_mapped_back_and_outside_paths_fail_closed(ws):
    rewrite = ("import json,sys; d=json.load(sys.stdin); p=d['tool_input']['file_path']; "
               "print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow', 'updatedInput': "
               "{'file_path': p.replace('draft', sys.argv[1]), 'content': d['tool_input']['content']}}}))")
    (ws.root / ".claude" / "hooks" / "rewrite.py").write_text(rewrite)
    write_claude(ws.root, {"PreToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": "python3", "args": [".claude/hooks/rewrite.py", "final"]}]}]})
    registry_for(ws).trust("claude-code")
    out = execute_tool(ToolContext(ws), "write_file", {"path": "draft.md", "content": "x"})
    assert out.ok and out.arguments == {"path": "final.md", "content": "x"}
    assert (ws.root / "final.md").read_text() == "x" and not (ws.root / "draft.md").exists()
    write_claude(ws.root, {"PreToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": "python3", "args": [".claude/hooks/rewrite.py", "../../escape"]}]}]})
    registry_for(ws).trust("claude-code")
    out = execute_tool(ToolContext(ws), "write_file", {"path": "draft.md", "content": "x"})
    assert out.blocked and "outside the workspace" in out.result


def test_an_edit_untrusts_and_hooks_list_shows_it(ws, cli):
    rows = {r["name"]: r for r in ws.hooks.listing() if r["root"] == "claude-code"}
    assert sorted(rows) == ["claude:project:PreToolUse[0]", "claude:project:PreToolUse[1]",
                            "claude:project:SessionStart[0]", "claude:project:UserPromptSubmit[0]"]
    assert rows["claude:project:PreToolUse[0]"]["runs"] is True
    assert rows["claude:project:PreToolUse[1]"]["matcher"] == "Write|Edit"
    assert rows["claude:project:PreToolUse[0]"]["events"] == ["tool:before"]
    # editing a script the settings run untrusts them all: the guard is skipped, with a warning
    (ws.root / ".claude" / "hooks" / "guard_exit2.py").write_text("import sys; sys.exit(0)\n")
    out = execute_tool(ToolContext(ws), "exec", {"command": "echo hi > hi.txt"})
    assert out.ok
    rows = {r["name"]: r for r in ws.hooks.listing() if r["root"] == "claude-code"}
    assert rows["claude:project:PreToolUse[0]"]["trusted"] is False and not rows["claude:project:PreToolUse[0]"]["runs"]
    notices = ws.run_notices()
    assert any("Claude Code hooks do not run" in n and "kit hooks trust claude-code" in n for n in notices)
    listed = cli("hooks", "list", "-w", str(ws.root))
    assert "claude:project:PreToolUse[0]" in listed.output and "untrusted" in listed.output
    assert "kit hooks trust claude-code" in listed.output
    # regression: the columns were 20/9/7 wide, so these rows pushed STATE, ROOT and KIND out of line
    table = [line for line in listed.output.splitlines() if not line.startswith(" ")]
    assert table[0].split() == ["NAME", "STATE", "ROOT", "KIND", "EVENTS"]
    for column in ("STATE", "ROOT", "KIND", "EVENTS"):
        at = table[0].index(column)
        assert all(line[at - 1] == " " and line[at] != " " for line in table[1:]), (column, table)
    trusted = cli("hooks", "trust", "claude-code", "-w", str(ws.root), "--json")
    assert json.loads(trusted.output)["root"] == "claude-code"
    ws.reload()
    assert all(r["runs"] for r in ws.hooks.listing() if r["root"] == "claude-code")


def test_off_by_default_and_user_settings_merge(ws_path, tmp_path):
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    write_claude(ws_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}]})
    ws = Workspace.open(ws_path)
    registry_for(ws).trust("claude-code")
    assert execute_tool(ToolContext(ws), "read_file", {"path": "SOUL.md"}).ok
    rows = [r for r in ws.hooks.listing() if r["root"] == "claude-code"]
    assert [r["runs"] for r in rows] == [False]
    assert any("hooks.claude_code is false" in w for w in rows[0]["warnings"])
    # ~/.claude/settings.json (HOME is the test's own) joins; the same handler twice runs once
    home = Path.home() / ".claude"
    home.mkdir()
    same = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}],
            "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "true"}]}]}
    (home / "settings.json").write_text(settings(same))
    set_config(ws_path, CONFIG)
    ws.reload()
    registry_for(ws).trust("claude-code")
    rows = {r["name"]: r for r in ws.hooks.listing() if r["root"] == "claude-code"}
    assert rows["claude:user:PreToolUse[0]"]["runs"] and not rows["claude:project:PreToolUse[0]"]["runs"]
    assert any("Kit has no Notification event" in w for w in rows["claude:user:Notification[0]"]["warnings"])
    out = execute_tool(ToolContext(ws), "exec", {"command": "true"})
    assert out.blocked and out.result == "blocked by a hook: blocked by a Claude Code hook (exit 2)"
    assert registry_for(ws).fire("tool:before", {"tool": "exec", "arguments": {"command": "true"}}).ran == [
        "claude:user:PreToolUse[0]"]


def test_kit_command_hooks_get_claude_fields_so_one_script_serves_both(ws):
    (ws.root / "payloads.jsonl").unlink(missing_ok=True)
    write_claude(ws.root, {})  # no Claude Code hooks: only Kit's own below
    guard = ws.root / ".claude" / "hooks" / "guard_exit2.py"
    guard.write_text(GUARD_EXIT2)
    add_hook(ws, "bash-guard", ["tool:before"], command=f"python3 {guard}")
    out = execute_tool(ToolContext(ws), "exec", {"command": "rm -rf /tmp/x"})
    assert out.blocked and out.result.endswith("rm -rf is not allowed here, move files to trash/ instead")
    data = payloads(ws)[0]["data"]
    assert data["tool_name"] == "Bash" and data["hook_event_name"] == "PreToolUse"
    assert data["type"] == "tool:before" and data["data"]["arguments"] == {"command": "rm -rf /tmp/x"}
    # and a Kit command hook answering as Claude Code does (JSON deny) blocks too
    (ws.root / ".claude" / "hooks" / "deny_json.py").write_text(DENY_JSON)
    add_hook(ws, "json-deny", ["tool:before"], command="python3 " + str(ws.root / ".claude/hooks/deny_json.py"))
    out = execute_tool(ToolContext(ws), "write_file", {"path": "secrets/a", "content": "x"})
    assert out.blocked and out.result == f"blocked by a hook: protected: {ws.root}/secrets/a"


def test_tool_and_input_mapping():
    root = "/ws"
    assert cm.claude_tool("read_file", {"path": "a/b.md", "start": 3, "lines": 5}, root) == (
        "Read", {"file_path": "/ws/a/b.md", "offset": 3, "limit": 5})
    assert cm.claude_tool("edit_file", {"path": "x", "old_text": "a", "new_text": "b"}, root) == (
        "Edit", {"file_path": "/ws/x", "old_string": "a", "new_string": "b", "replace_all": False})
    assert cm.claude_tool("memory_search", {"query": "q"}, root) == ("mcp__kit__memory_search", {"query": "q"})
    assert cm.claude_tool("time__get_current_time", {"timezone": "UTC"}, root)[0] == "mcp__time__get_current_time"
    assert cm.kit_arguments("Edit", {"file_path": "/ws/x", "old_string": "a", "new_string": "b",
                                     "replace_all": True}, root) == {
        "path": "x", "old_text": "a", "new_text": "b", "replace_all": True}
    assert cm.kit_arguments("Bash", {"command": "ls", "timeout": 2500}, root) == {"command": "ls", "timeout_s": 2}
    with pytest.raises(cm.Unmappable):
        cm.kit_arguments("Read", {"file_path": "/etc/passwd"}, root)


@pytest.mark.parametrize("matcher, value, expected", [
    (None, "Bash", True), ("", "Bash", True), ("*", "Read", True),
    ("Bash", "Bash", True), ("Bash", "BashOutput", False),
    ("Edit|Write", "Write", True), ("Edit, Write", "Edit", True), ("Edit|Write", "NotebookEdit", False),
    ("Edit.*", "NotebookEdit", True), ("^Edit$", "NotebookEdit", False),
    ("mcp__memory", "mcp__memory__create", False), ("mcp__memory__.*", "mcp__memory__create", True),
    ("mcp__kit__.*", "mcp__kit__memory_write", True), ("bash", "Bash", False),
])
def test_matcher_semantics(matcher, value, expected):
    assert cm.matches(matcher, value) is expected


def test_if_narrows_a_tool_hook_like_claude_code(ws):
    write_claude(ws.root, {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo 'no rm' >&2; exit 2", "if": "Bash(rm *)"}]}]})
    registry_for(ws).trust("claude-code")
    ctx = ToolContext(ws)
    assert execute_tool(ctx, "exec", {"command": "echo hi > hi.txt"}).ok  # not an rm: the hook does not run
    out = execute_tool(ctx, "exec", {"command": "rm -rf hi.txt"})
    assert out.blocked and out.result == "blocked by a hook: no rm" and (ws.root / "hi.txt").exists()
    # a call Kit cannot map is still judged (fails closed), whatever `if` says
    assert execute_tool(ctx, "exec", {"command": ["rm", "x"]}).blocked


def test_hooks_list_in_a_real_process(ws):
    from conftest import run_kit

    done = run_kit("hooks", "list", "--json", "-w", str(ws.root))
    assert done.returncode == 0, done.stderr
    rows = [r for r in json.loads(done.stdout)["hooks"] if r["root"] == "claude-code"]
    assert [(r["name"], r["claude_event"], r["matcher"], r["runs"]) for r in rows] == [
        ("claude:project:PreToolUse[0]", "PreToolUse", "Bash", True),
        ("claude:project:PreToolUse[1]", "PreToolUse", "Write|Edit", True),
        ("claude:project:UserPromptSubmit[0]", "UserPromptSubmit", None, True),
        ("claude:project:SessionStart[0]", "SessionStart", "startup", True)]


def test_session_start_after_new_is_clear(ws, tmp_path):
    write_claude(ws.root, {"SessionStart": [
        {"matcher": "startup", "hooks": [{"type": "command", "command": "echo fresh"}]},
        {"matcher": "clear", "hooks": [{"type": "command", "command": "echo cleared"}]}]})
    registry_for(ws).trust("claude-code")
    script = write_script(tmp_path, [{"text": "one"}, {"text": "two"}])
    agent = agent_for(ws, script)
    agent.turn("hello")
    agent.new_session()
    agent.turn("again")
    users = [[m for m in call["messages"] if m["role"] == "user"][-1]["content"] for call in recorded_calls(script)]
    assert users == ["hello\n\n<hook-context>\nfresh\n</hook-context>",
                     "again\n\n<hook-context>\ncleared\n</hook-context>"]


def test_a_claude_code_hooks_setsid_child_ends_with_it(ws):
    """Issue 12 deliver 6 for Claude Code hooks too: a detached child of the hook's command does not
    outlive the hook."""
    import os
    import time

    pidfile = ws.root / "child.pid"
    write_claude(ws.root, {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command":
                 f"setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > {pidfile}; exit 0"}]}]})
    registry_for(ws).trust("claude-code")
    out = execute_tool(ToolContext(ws), "read_file", {"path": "SOUL.md"})
    assert not out.blocked
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        try:
            with open(f"/proc/{pid}/stat") as handle:  # a zombie is ended, only not yet reaped
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"child {pid} outlived the Claude Code hook")


def test_a_settings_file_that_does_not_parse_is_said_by_hooks_list_trust_and_run(ws, cli):
    """Regression (new-user pass): a trailing comma in .claude/settings.local.json made its hooks
    vanish: no row in `kit hooks list`, `trust` said nothing, `kit run` gave no warning; only
    doctor said it."""
    local = ws.root / ".claude" / "settings.local.json"
    local.write_text('{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", '
                     '"command": "exit 2"}]}],}}\n', encoding="utf-8")
    ws.reload()
    problem = (".claude/settings.local.json:1: Claude Code settings: not valid JSON: Expecting property name "
               "enclosed in double quotes")
    listed = cli("hooks", "list", "-w", str(ws.root))
    assert listed.exit_code == 0 and f"error: {problem}" in listed.output.splitlines()
    as_json = json.loads(cli("hooks", "list", "-w", str(ws.root), "--json").output)
    assert [(p["path"], p["line"], p["severity"]) for p in as_json["problems"]] == [
        (".claude/settings.local.json", 1, "error")]
    assert problem in ws.run_notices()
    # an entry it ignores is for `kit hooks list` and doctor, not every run (review)
    settings = json.loads((ws.root / ".claude" / "settings.json").read_text())
    settings["hooks"]["NoSuchEvent"] = []
    (ws.root / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    ws.reload()
    ignored = "'NoSuchEvent' is not a Claude Code hook event; ignored"
    assert any(ignored in p["message"] for p in json.loads(cli("hooks", "list", "-w", str(ws.root),
                                                               "--json").output)["problems"])
    assert [n for n in ws.run_notices() if "Claude Code settings" in n] == [problem]
    trusted = cli("hooks", "trust", "claude-code", "-w", str(ws.root))
    assert trusted.exit_code == 0 and f"kit: warning: {problem}" in trusted.stderr
    # only the broken file: nothing to trust, and why
    (ws.root / ".claude" / "settings.json").unlink()
    ws.reload()
    refused = cli("hooks", "trust", "claude-code", "-w", str(ws.root))
    assert refused.exit_code != 0 and f"that Kit can read ({problem})" in refused.stderr
