"""Bundled hooks (session-memory, command-logger) and the agent:bootstrap callback."""

from __future__ import annotations

import json

from helpers_hooks import write_hook
from kit.hooks.bootstrap import apply_bootstrap_hooks, bootstrap_callback
from kit.hooks.registry import registry_for
from kit.prompt.builder import BootstrapFile
from kit.workspace import Workspace

CONVERSATION = [
    {"role": "user", "content": "How do we deploy the billing API?"},
    {"role": "assistant", "content": "Run `make deploy` from the release branch."},
    {"role": "tool", "content": "ignored tool output"},
    {"role": "user", "content": "And roll back?\nWe roll back with the previous tag."},
]


def test_session_memory_archives_what_the_user_stated_on_new(ws_path, kit_now):
    kit_now("2026-05-07T14:30:00+00:00")
    ws = Workspace.open(ws_path)
    outcome = registry_for(ws).fire(
        "command:new", {"command": "new", "args": "", "messages": CONVERSATION, "session_id": "s-42"},
        session_key="main")
    assert outcome.errors == []
    assert outcome.ran == ["command-logger", "session-memory"]
    note = ws_path / "memory" / "2026-05-07-how-do-we-deploy-the-billing.md"
    # the questions and the assistant's reply are not kept; the user's statement is
    assert note.read_text() == (
        "# Session 2026-05-07 14:30\n\n"
        "<!-- kit:session-memory v2: what the user stated, archived on /new (session s-42); questions, "
        "requests and the assistant's replies are not kept -->\n\n"
        "## Decisions\n\n"
        "- We roll back with the previous tag.\n"
    )
    # the same conversation archived again that day gets its own file, never overwrites
    registry_for(ws).fire("session:end", {"messages": CONVERSATION, "session_id": "s-42", "reason": "exit"})
    second = ws_path / "memory" / "2026-05-07-how-do-we-deploy-the-billing-2.md"
    assert "archived on exit (session s-42)" in second.read_text()


def test_session_memory_skips_empty_conversations_and_slugs_non_ascii(ws_path, kit_now):
    kit_now("2026-05-08T08:00:00+00:00")
    ws = Workspace.open(ws_path)
    before = sorted(p.name for p in (ws_path / "memory").iterdir())
    registry_for(ws).fire("command:reset", {"messages": [{"role": "assistant", "content": "hi"}]})
    registry_for(ws).fire("command:reset", {"messages": [{"role": "user", "content": "hi, thanks!"}]})
    assert sorted(p.name for p in (ws_path / "memory").iterdir()) == before  # nothing stated: no file
    registry_for(ws).fire("command:reset", {"messages": [{"role": "user", "content": "会议 notes café: Bob runs them on Mondays"}]})
    assert (ws_path / "memory" / "2026-05-08-notes-cafe-bob-runs-them-on.md").exists()
    registry_for(ws).fire("session:end", {"messages": [{"role": "user", "content": "你好"},
                                                       {"role": "user", "content": "Ana's flight lands at 18:40."}]})
    assert (ws_path / "memory" / "2026-05-08-session.md").exists()


def test_command_logger_writes_json_lines(ws_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    ws = Workspace.open(ws_path)
    registry_for(ws).fire("command:skill", {"command": "skill", "args": "deploy", "session_id": "s1"}, session_key="main")
    registry_for(ws).fire("command:dream", {"command": "dream"})
    lines = (ws_path / ".kit" / "logs" / "commands.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"args": "deploy", "command": "skill", "session_id": "s1", "session_key": "main",
         "timestamp": "2026-05-07T09:00:00+00:00"},
        {"args": "", "command": "dream", "session_id": None, "session_key": None,
         "timestamp": "2026-05-07T09:00:00+00:00"},
    ]


def test_workspace_hook_can_disable_a_bundled_one(ws_path):
    # HOOK.md alone, enabled: false — no handler needed, nothing to trust
    write_hook(ws_path / "hooks", "command-logger", ["command"], enabled=False)
    ws = Workspace.open(ws_path)
    registry = registry_for(ws)
    assert registry.get("command-logger").valid and registry.untrusted() == []
    outcome = registry.fire("command:new", {"messages": []})
    assert outcome.skipped == ["command-logger: disabled"]
    assert not (ws_path / ".kit" / "logs" / "commands.jsonl").exists()


BOOTSTRAP_HANDLER = """\
def handle(event):
    files = event.data["files"]
    assert event.data["kind"] == "default"
    return {
        "remove": ["USER.md"],
        "add": [{"name": "SOUL.md", "content": "rewritten soul"}, {"name": "TEAM.md", "content": "team rules"}],
    }
"""


def test_bootstrap_callback_adds_removes_and_rewrites(ws_path):
    write_hook(ws_path / "hooks", "boot", ["agent:bootstrap"], BOOTSTRAP_HANDLER)
    ws = Workspace.open(ws_path)
    files = [BootstrapFile("AGENTS.md", "agents"), BootstrapFile("SOUL.md", "soul"), BootstrapFile("USER.md", "user")]
    # untrusted workspace hook: nothing changes, the very same objects come back
    assert bootstrap_callback(ws)(files, kind="default") == files
    registry_for(ws).trust("boot")
    out = bootstrap_callback(ws, session_key="main")(files, kind="default")
    assert out == [BootstrapFile("AGENTS.md", "agents"), BootstrapFile("SOUL.md", "rewritten soul"),
                   BootstrapFile("TEAM.md", "team rules")]
    assert out[0] is files[0]


def test_bootstrap_without_hooks_returns_the_input(ws_path):
    ws = Workspace.open(ws_path)
    files = [BootstrapFile("SOUL.md", "soul")]
    assert apply_bootstrap_hooks(ws, files) == files


def test_bootstrap_hooks_shape_the_real_prompt(ws_path):
    from kit.prompt.builder import build_prompt

    write_hook(ws_path / "hooks", "team", ["agent:bootstrap"], """\
        def handle(event):
            return {"remove": ["USER.md"], "add": [{"name": "TEAM.md", "content": "Team rule: ship on Tuesdays."}]}
        """)
    (ws_path / "USER.md").write_text("# User\nThe user is called Zebulon.\n")
    ws = Workspace.open(ws_path)
    callback = bootstrap_callback(ws, session_key="main")

    untrusted = build_prompt(ws, bootstrap=callback)
    assert "Zebulon" in untrusted.prompt and "ship on Tuesdays" not in untrusted.prompt

    registry_for(ws).trust("team")  # same snapshot version: the callback's cache_key changes
    shaped = build_prompt(ws, bootstrap=callback)
    assert "Team rule: ship on Tuesdays." in shaped.prompt
    assert "Zebulon" not in shaped.prompt
    names = [f["name"] for f in shaped.to_json()["files"]]
    assert "TEAM.md" in names and "USER.md" not in names
