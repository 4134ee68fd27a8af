"""End to end with the script provider and the real memory index and embedding model: a turn
that searches memory (recalls recorded with source `tool`, active recall with source `active`),
writes a daily note and views a skill; /new archives the conversation through session-memory;
the transcript and `kit sessions search` find the turn."""

from __future__ import annotations

import json

import pytest

from helpers_agent import agent_for, recorded_calls, write_script
from kit.cli.repl import Repl, parse_slash
from kit.workspace import Workspace

NOTE = """# 2026-05-05

- Deploy checklist for the billing service: run the database migrations, then flip the feature flag.
- Lunch with Priya from the data team on Thursday.
"""
SKILL = """---
name: deploy-helper
description: Walks through the billing service deploy, step by step.
---
# Deploy helper

1. Run the migrations.
2. Flip the feature flag.
3. Watch the error dashboard for ten minutes.
"""
QUESTION = "What is on the deploy checklist for billing?"


@pytest.fixture
def ws(ws_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    (ws_path / "memory").mkdir(exist_ok=True)
    (ws_path / "memory" / "2026-05-05.md").write_text(NOTE)
    (ws_path / "skills" / "deploy-helper").mkdir(parents=True)
    (ws_path / "skills" / "deploy-helper" / "SKILL.md").write_text(SKILL)
    return Workspace.open(ws_path)


def _events(ws):
    from kit.memory.recall import events

    with ws.open_state() as db:
        return events(db)


def test_turn_with_memory_skill_and_archive(ws, tmp_path, cli):
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "memory_search", "arguments": {"query": "deploy checklist billing"}}]},
        {"tool_calls": [{"name": "memory_write",
                         "arguments": {"text": "Asked for the billing deploy checklist again", "topic": "work"}},
                        {"name": "skill_view", "arguments": {"name": "deploy-helper"}}]},
        {"text": "Run the migrations, then flip the feature flag, then watch the dashboard."},
    ])
    agent = agent_for(ws, script, session_key="main")
    result = agent.turn(QUESTION)
    assert result.reply == "Run the migrations, then flip the feature flag, then watch the dashboard."
    assert [(t.name, t.ok) for t in result.tool_calls] == [
        ("memory_search", True), ("memory_write", True), ("skill_view", True)]

    # memory_search found the note and its hits are recalls with source `tool`
    search = json.loads(result.tool_calls[0].result)
    assert search["results"][0]["path"] == "memory/2026-05-05.md"
    assert search["results"][0]["start_line"] == 3
    by_source = {}
    for event in _events(ws):
        by_source.setdefault(event.source, []).append(event)
    assert set(by_source) == {"active", "tool"}
    assert {e.key for e in by_source["tool"]} >= {"memory/2026-05-05.md:3:3"}
    assert all(e.query == "deploy checklist billing" for e in by_source["tool"])
    assert all(e.day == "2026-05-07" for e in _events(ws))

    # active recall put the note on the user message (not in the system prompt)
    first = recorded_calls(script)[0]["messages"]
    user = first[-1]["content"]
    assert user.startswith("<memory-context>\n")
    # the fact and its note's date, no path:line reference and no header for the model to copy
    assert "\n- Deploy checklist for the billing service" in user and "(2026-05-05)\n" in user
    assert "memory/" not in user and ":3-3" not in user
    assert user.endswith("</memory-context>\n\n" + QUESTION)
    assert "<memory-context>" not in first[0]["content"]
    active = by_source["active"]
    assert [e.key for e in active] == ["memory/2026-05-05.md:3:3"]
    assert sum(len(" ".join(e.snippet.split())) for e in active) <= ws.config.get("memory.active_recall.max_chars")

    # the daily note was written, under its topic
    today = (ws.root / "memory" / "2026-05-07.md").read_text()
    assert "Asked for the billing deploy checklist again" in today and "## work" in today

    # skill_view returned the skill body
    assert "Watch the error dashboard for ten minutes." in result.tool_calls[2].result

    # /new: command:new → session-memory archives what the user stated: a question and the
    # model's answer are not memory, so this session leaves no archive (issue 12)
    old_session = agent.session_id
    repl = Repl(ws, agent, input_func=lambda prompt: "/exit")
    assert repl.slash(parse_slash("/new")) is True
    assert sorted(p.name for p in (ws.root / "memory").glob("2026-05-07-*.md")) == []
    assert agent.session_id != old_session and agent.history == []

    # the transcript and `kit sessions search` find the turn
    lines = agent.store.transcript(old_session)
    assert lines[0]["text"] == QUESTION and lines[-1]["content"].startswith("Run the migrations")
    found = json.loads(cli("sessions", "search", "dashboard", "--json", "-w", ws.root).output)
    assert [(r["session"], r["role"]) for r in found["results"]] == [(old_session, "assistant")]
    found = json.loads(cli("sessions", "search", "deploy checklist", "--json", "-w", ws.root).output)
    assert [(r["session"], r["seq"]) for r in found["results"]] == [(old_session, 1)]


def test_active_recall_respects_budget_and_switch(ws_path, kit_now, tmp_path):
    kit_now("2026-05-07T09:00:00+00:00")
    (ws_path / "memory").mkdir(exist_ok=True)
    (ws_path / "memory" / "2026-05-05.md").write_text(NOTE)
    (ws_path / "kit.yaml").write_text("memory:\n  active_recall: {enabled: true, max_chars: 40}\n")
    ws = Workspace.open(ws_path)
    script = write_script(tmp_path, [{"text": "ok"}, {"text": "ok"}])
    agent = agent_for(ws, script)
    agent.turn(QUESTION)
    user = recorded_calls(script)[0]["messages"][-1]["content"]
    [line] = [ln for ln in user.splitlines() if ln.startswith("- ")]
    assert line.endswith(" (2026-05-05)")  # the daily note's date after the fact
    snippet = line[2:-len(" (2026-05-05)")]
    assert len(snippet) == 40 and snippet.endswith("…")

    (ws_path / "kit.yaml").write_text("memory:\n  active_recall: {enabled: false}\n")
    ws.reload(["kit.yaml"])
    agent.turn(QUESTION)
    assert recorded_calls(script)[1]["messages"][-1]["content"] == QUESTION


def test_system_prompt_stays_identical_while_recall_varies(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "a"}, {"text": "b"}])
    agent = agent_for(ws, script)
    agent.turn(QUESTION)
    agent.turn("Who am I having lunch with on Thursday?")
    calls = recorded_calls(script)
    assert calls[0]["messages"][0]["content"] == calls[1]["messages"][0]["content"]
    first_user, second_user = calls[0]["messages"][1]["content"], calls[1]["messages"][3]["content"]
    assert "Deploy checklist" in first_user
    assert "Lunch with Priya" in second_user
    # the earlier user message is replayed exactly as first sent (its recall block included)
    assert calls[1]["messages"][1]["content"] == first_user


def test_shared_runs_do_not_recall_private_notes(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "ok"}])
    agent_for(ws, script, kind="shared").turn(QUESTION)
    assert recorded_calls(script)[0]["messages"][-1]["content"] == QUESTION
    assert _events(ws) == []


def test_recall_failure_is_reported_and_the_turn_goes_on(ws, tmp_path, monkeypatch):
    import kit.memory.service as service

    def broken(ws):
        raise RuntimeError("index.db is corrupt")

    monkeypatch.setattr(service, "memory_for", broken)
    said = []
    script = write_script(tmp_path, [{"text": "still answering"}])
    result = agent_for(ws, script, status=said.append).turn(QUESTION)
    assert result.reply == "still answering"
    assert said == ["active recall failed: RuntimeError: index.db is corrupt"]


def test_active_recall_leaves_out_memory_md_which_the_prompt_already_carries(ws, tmp_path):
    (ws.root / "MEMORY.md").write_text(
        "# Memory\n\n- The billing deploy checklist: run the database migrations, then flip the feature flag.\n")
    ws.reload(["MEMORY.md"])
    script = write_script(tmp_path, [{"text": "ok"}, {"text": "ok"}])
    agent_for(ws, script).turn(QUESTION)
    first = recorded_calls(script)[0]["messages"]
    assert "The billing deploy checklist: run the database migrations" in first[0]["content"]  # system prompt
    recalled = [ln for ln in first[-1]["content"].splitlines() if ln.startswith("- ")]
    assert recalled == ["- Deploy checklist for the billing service: run the database migrations, then flip "
                        "the feature flag. (2026-05-05)"]
    assert [e.key for e in _events(ws) if e.source == "active"] == ["memory/2026-05-05.md:3:3"]

    # a subagent run does not load MEMORY.md into its prompt, so recall may bring it in
    agent_for(ws, script, kind="subagent").turn(QUESTION)
    second = recorded_calls(script)[1]["messages"]
    assert "The billing deploy checklist" not in second[0]["content"]
    # the entry (MEMORY.md is chunked by claim), with no date: not a daily note
    assert ("\n- The billing deploy checklist: run the database migrations, then flip the feature flag.\n"
            in second[-1]["content"])
