"""REPL slash commands in-process: parsing, command:<name> hooks (command-logger, session-memory
on /reset), /skill, /memory, /prompt, /dream, /help, and a scripted run() to /exit."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from helpers_agent import agent_for, recorded_calls, set_config, write_script
from kit.cli.repl import Repl, SlashCommand, parse_slash
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
    repl.message("The staging database moved to db-7.internal on Monday.")
    first = agent.session_id
    repl.slash(parse_slash("/help"))
    repl.slash(parse_slash("/reset"))
    assert agent.session_id != first and agent.session.key == "main"
    assert "/dream" in out.getvalue() and "session reset; new session" in out.getvalue()

    logged = [json.loads(line) for line in (ws.kit_dir / "logs" / "commands.jsonl").read_text().splitlines()]
    assert [(e["command"], e["session_id"], e["session_key"]) for e in logged] == [
        ("help", first, "main"), ("reset", first, "main")]
    archives = sorted(p.name for p in (ws.root / "memory").glob("2026-05-07-*.md"))
    assert archives == ["2026-05-07-the-staging-database-moved-to-db.md"]
    text = (ws.root / "memory" / archives[0]).read_text()
    assert "archived on /reset" in text and "- The staging database moved to db-7.internal on Monday.\n" in text
    assert "noted the db host" not in text  # the assistant's reply is never archived


def test_memory_prompt_and_dream_commands(ws, tmp_path):
    agent = agent_for(ws, write_script(tmp_path, [{"text": "unused"}]))
    repl, out = _repl(ws, agent)
    repl.slash(parse_slash("/memory staging database host"))
    assert "memory/2026-05-06.md:3 " in out.getvalue()  # one line is path:3, as `kit memory search` says
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


def test_skill_turns_are_recorded_as_typed_and_never_archived(ws, tmp_path):
    """Regression: archives and the transcript's own words held the expanded <skill> body of
    `/skill NAME msg` instead of what the user typed; the model still receives the body."""
    script = write_script(tmp_path, [{"text": "Yesterday: X."}, {"text": "Today: Y."}])
    agent = agent_for(ws, script, session_key="main")
    repl, _ = _repl(ws, agent)
    repl.slash(parse_slash("/skill standup for team A"))
    repl.slash(parse_slash("/skill standup"))
    sent = [call["messages"][-1]["content"] for call in recorded_calls(script)]
    assert sent[0].startswith('<skill name="standup">\n# Standup') and sent[0].endswith("</skill>\n\nfor team A")
    assert sent[1].endswith("</skill>\n\nFollow the standup skill.")
    first = agent.session_id
    assert agent.conversation() == [
        {"role": "user", "content": "/skill standup for team A"},
        {"role": "assistant", "content": "Yesterday: X."},
        {"role": "user", "content": "/skill standup"},
        {"role": "assistant", "content": "Today: Y."},
    ]
    lines = agent.store.transcript(first)
    assert [line.get("text") for line in lines if line["role"] == "user"] == [
        "/skill standup for team A", "/skill standup"]
    assert agent.store.get(first).title == "/skill standup for team A"

    repl.slash(parse_slash("/new"))
    # slash commands are not statements and the replies are the model's: nothing to archive
    assert sorted(p.name for p in (ws.root / "memory").glob("2026-05-07-*.md")) == []


def test_help_describes_every_command_accurately(ws, tmp_path):
    """Regression: /help said /reset discards the conversation; session-memory archives it."""
    repl, out = _repl(ws, agent_for(ws, write_script(tmp_path, [{"text": "unused"}])))
    repl.slash(parse_slash("/help"))
    assert out.getvalue().splitlines() == [
        "  /new     archive this conversation (session-memory) and start a new session",
        "  /reset   archive this conversation (session-memory, labelled /reset) and start a new session",
        "  /skill   /skill NAME [message] — run a turn that follows the skill NAME",
        "  /memory  /memory QUERY — search memory (not recorded as a recall)",
        "  /dream   run dreaming now (light, REM, deep)",
        "  /prompt  show the current system prompt and its size",
        "  /compact /compact [focus] — compact the conversation now (old tool results, then a summary)",
        "  /help    show this help (also /?)",
        "  /exit    leave (also /quit, /q, Ctrl-D); a --session KEY session stays open to resume",
    ]


class _Reload:
    def __init__(self, changed, errors=()):
        self.changed, self.errors = changed, errors


def test_reload_notices_wait_for_the_next_prompt(ws, tmp_path):
    """Regression: a watcher notice printed while the user typed landed after "you> "; notices are
    queued and printed before the next prompt (or before the turn the user just typed)."""
    script = write_script(tmp_path, [{"text": "Hi!"}])
    out_at_prompt: list[str] = []
    feed = iter(["hello", "/exit"])
    repl = None

    def read(prompt):
        out_at_prompt.append(out.getvalue())
        if len(out_at_prompt) == 1:
            repl._on_reload(_Reload(["SOUL.md", "memory/2026-05-07.md"]))  # the watcher, mid-typing
        elif len(out_at_prompt) == 2:
            repl._on_reload(_Reload(["skills/standup/SKILL.md"]))
        assert out.getvalue() == out_at_prompt[-1]  # nothing printed after "you> "
        return next(feed)

    out = io.StringIO()
    repl = Repl(ws, agent_for(ws, script), console=Console(file=out, width=120, color_system=None),
                input_func=read)
    repl._start_background = lambda: None  # no real watcher: the reloads above stand in for it
    assert repl.run() == 0
    assert "reloaded" not in out_at_prompt[0]
    # the reload seen while "hello" was typed is printed before that turn's reply
    assert [line.rstrip() for line in out_at_prompt[1].splitlines()[-3:-1]] == ["reloaded: SOUL.md", "Hi!"]
    assert out.getvalue().splitlines()[-2:] == ["reloaded: skills/standup/SKILL.md", "bye"]


def test_a_reload_that_breaks_a_skill_rule_is_said(ws, tmp_path):
    """Regression (new-user pass): the REPL said `reloaded: skills/w1/SKILL.md` for an edit that
    broke a rule while the last good version stayed in force."""
    script = write_script(tmp_path, [{"text": "unused"}])
    repl, out = _repl(ws, agent_for(ws, script))
    ws.write_text("skills/w1/SKILL.md", "---\nname: w1\ndescription: good\n---\nbody\n")
    assert ws.skills.get("w1").description == "good"
    ws.write_text("skills/w1/SKILL.md", "---\nname: w1-renamed\ndescription: bad\n---\nbody\n")
    repl._on_reload(_Reload(["skills/w1/SKILL.md"]))
    assert repl._notices == [
        "[dim]reloaded: skills/w1/SKILL.md[/dim]",
        "[yellow]workspace error: skills/w1/SKILL.md:2: 'name' 'w1-renamed' must equal the folder name 'w1' "
        "(keeping the last good version)[/yellow]"]


def test_compact_command(ws, tmp_path):
    script = write_script(tmp_path, [
        {"text": "first answer"}, {"text": "second answer"}, {"text": "- the user said hello twice"}])
    agent = agent_for(ws, script)
    repl, out = _repl(ws, agent)
    repl.slash(SlashCommand("compact", ""))
    assert "nothing to compact: nothing old enough to compact" in out.getvalue()
    agent.turn("hello")
    agent.turn("hello again")
    repl.slash(SlashCommand("compact", "greetings"))
    assert "compacted (summary):" in out.getvalue()
    assert "focus on: greetings" in recorded_calls(script)[-1]["messages"][1]["content"]
    assert [m["role"] for m in agent.history] == ["user", "user", "assistant"]


def test_a_status_line_never_lands_on_the_prompt_line(ws_path, tmp_path, cli):
    # `printf 'hi\n/exit\n' | kit run` printed "you> MCP server 'gone' failed to start: …": piped input
    # is not echoed, so the prompt and the next line shared one line; the line typed is echoed now
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n"
                        "mcp:\n  servers:\n    gone: {command: no-such-mcp-server-here}\n")
    script = write_script(tmp_path, [{"text": "hello there"}])
    result = cli("run", "-w", ws_path, "--model", f"script:{script}", input="hi\n/exit\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    warning = ("MCP server 'gone' failed to start: command not found: no-such-mcp-server-here; the agent runs "
               "without its tools")
    assert lines[1:5] == ["you> hi", warning, "hello there", "1 step · " + lines[4].split(" · ", 1)[1]]
    assert lines[5:] == ["you> /exit", "bye"]


def test_a_status_line_while_the_person_types_waits_for_the_next_prompt(ws, tmp_path):
    out = io.StringIO()
    repl_box = []

    def typed(prompt: str) -> str:
        out.write(prompt)
        if len(typed.lines) == 2:  # a background status arrives while the person is at the prompt
            repl_box[0].notify("mcp: a late warning")
        return typed.lines.pop(0)

    typed.lines = ["/help", "/exit"]
    agent = agent_for(ws, write_script(tmp_path, [{"text": "unused"}]))
    # echo: the line typed shows, as a terminal shows it
    repl = Repl(ws, agent, console=Console(file=out, width=200), input_func=typed, echo=True)
    repl_box.append(repl)
    repl.run()
    text = out.getvalue()
    # queued while the person typed, printed on its own line once the line is in (before /help's output)
    assert "you> mcp" not in text and "you> /help\nmcp: a late warning\n  /new" in text
