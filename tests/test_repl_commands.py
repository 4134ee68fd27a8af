"""REPL slash commands in-process: parsing, command:<name> hooks (command-logger, session-memory
on /reset), /skill, /memory, /prompt, /dream, /help, and a scripted run() to /exit."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from helpers_agent import agent_for, recorded_calls, set_config, write_script
from kit.agent.repl import Repl, SlashCommand, parse_slash
from kit.workspace import Workspace

SKILL = """---
name: standup
description: Writes a three-line standup update.
---
# Standup

Write: yesterday, today, blockers. One line each.
"""


@pytest.fixture
def ws(ws_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    (ws_path / "skills" / "standup").mkdir(parents=True)
    (ws_path / "skills" / "standup" / "SKILL.md").write_text(SKILL)
    (ws_path / "memory").mkdir(exist_ok=True)
    (ws_path / "memory" / "2026-05-06.md").write_text("# 2026-05-06\n\n- The staging database moved to host db-7.\n")
    return Workspace.open(ws_path)


def _repl(ws, agent, lines=()):
    out = io.StringIO()
    feed = iter(lines)

    def read(prompt):
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    return Repl(ws, agent, console=Console(file=out, width=120, color_system=None), input_func=read), out


def test_parse_slash():
    assert parse_slash("/skill standup for team A") == SlashCommand("skill", "standup for team A")
    assert parse_slash("  /QUIT ") == SlashCommand("exit", "")
    assert parse_slash("/?") == SlashCommand("help", "")
    assert parse_slash("hello /new") is None
    assert parse_slash("//not a command") is None


def test_skill_command_sends_the_skill_as_a_turn(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "Yesterday: X. Today: Y. Blockers: none."}])
    agent = agent_for(ws, script)
    repl, out = _repl(ws, agent)
    repl.slash(parse_slash("/skill standup for the infra team"))
    sent = recorded_calls(script)[0]["messages"][-1]["content"]
    assert sent.startswith('<skill name="standup">\n# Standup\n\nWrite: yesterday, today, blockers.')
    assert sent.endswith("</skill>\n\nfor the infra team")
    assert "Yesterday: X. Today: Y. Blockers: none." in out.getvalue()

    repl.slash(parse_slash("/skill no-such-skill"))
    assert "error:" in out.getvalue() and "no-such-skill" in out.getvalue()


def test_commands_fire_hooks_and_reset_archives(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "Sure, noted the db host."}])
    agent = agent_for(ws, script, session_key="main")
    repl, out = _repl(ws, agent)
    repl.message("Where did the staging database go?")
    first = agent.session_id
    repl.slash(parse_slash("/help"))
    repl.slash(parse_slash("/reset"))
    assert agent.session_id != first and agent.session.key == "main"
    assert "/dream" in out.getvalue() and "session reset; new session" in out.getvalue()

    logged = [json.loads(line) for line in (ws.kit_dir / "logs" / "commands.jsonl").read_text().splitlines()]
    assert [(e["command"], e["session_id"], e["session_key"]) for e in logged] == [
        ("help", first, "main"), ("reset", first, "main")]
    archives = sorted(p.name for p in (ws.root / "memory").glob("2026-05-07-*.md"))
    assert archives == ["2026-05-07-where-did-the-staging-database-go.md"]
    assert "Archived by session-memory on /reset" in (ws.root / "memory" / archives[0]).read_text()


def test_memory_prompt_and_dream_commands(ws, tmp_path):
    agent = agent_for(ws, write_script(tmp_path, [{"text": "unused"}]))
    repl, out = _repl(ws, agent)
    repl.slash(parse_slash("/memory staging database host"))
    assert "memory/2026-05-06.md:3-3" in out.getvalue()
    assert "db-7" in out.getvalue()
    from kit.memory.recall import events

    with ws.open_state() as db:
        assert events(db) == []  # the user's own searches are not recalls

    repl.slash(parse_slash("/prompt"))
    assert agent.system_prompt()[:60] in out.getvalue()
    assert f"(workspace version {ws.version})" in out.getvalue()

    repl.slash(parse_slash("/dream"))
    assert "dreamed: 0 memories promoted" in out.getvalue()


def test_run_reads_until_exit(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "Hi!"}])
    agent = agent_for(ws, script)
    repl, out = _repl(ws, agent, ["", "hello \\", "second line", "/exit", "never read"])
    assert repl.run() == 0
    assert recorded_calls(script)[0]["messages"][-1]["content"] == "hello \nsecond line"
    text = out.getvalue()
    assert "Hi!" in text and text.rstrip().endswith("bye")
    assert agent.store.get(agent.session_id).ended is not None


def test_leaving_a_named_session_keeps_it_open(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "Hi!"}, {"text": "Welcome back."}])
    agent = agent_for(ws, script, session_key="work")
    repl, _ = _repl(ws, agent, ["hello", "/exit"])
    repl.run()
    assert agent.store.get(agent.session_id).ended is None
    assert list((ws.root / "memory").glob("2026-05-07-*.md")) == []
    again = agent_for(ws, script, session_key="work")
    assert again.session_id == agent.session_id
    assert again.turn("back").reply == "Welcome back."


def test_skill_command_uses_the_users_view(ws, tmp_path):
    """Regression: /skill went through the model's skill_view, which refuses model-hidden skills."""
    for name, flag in (("manual-only", "disable-model-invocation: true"), ("model-only", "user-invocable: false")):
        folder = ws.root / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: A {name} skill.\n{flag}\n---\n# {name}\n\nDo it.\n")
    ws.reload()
    script = write_script(tmp_path, [{"text": "done"}])
    agent = agent_for(ws, script)
    repl, out = _repl(ws, agent)
    repl.slash(parse_slash("/skill manual-only"))
    assert recorded_calls(script)[0]["messages"][-1]["content"].startswith('<skill name="manual-only">')
    repl.slash(parse_slash("/skill model-only"))
    assert "not user-invocable" in out.getvalue()
    assert len(recorded_calls(script)) == 1


def test_square_brackets_from_the_model_notes_or_user_print_as_text(ws, tmp_path):
    """Tool arguments, replies' metadata, note snippets and typed commands are not Rich markup:
    a "[/dim]" in any of them used to raise MarkupError and end the REPL."""
    (ws.root / "memory" / "2026-05-06.md").write_text("# 2026-05-06\n\n- The [/dim] staging database [red] moved.\n")
    ws.reload()
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "[/dim]x.md"}}]},
        {"text": "Done."},
    ])
    repl, out = _repl(ws, agent_for(ws, script), ["read [/bold] it", "/[/x]", "/memory staging [/dim]", "/exit"])
    assert repl.run() == 0
    text = out.getvalue()
    assert '→ read_file {"path": "[/dim]x.md"} · failed' in text
    assert "unknown command /[/x]" in text
    assert "The [/dim] staging database [red] moved." in text
    assert "bye" in text
