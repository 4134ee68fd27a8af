"""Compaction with a small context window: a silent memory flush at 70 %, then at 80 % cheap
compaction first (old tool results to placeholders, no model call) and a summary only when that
is not enough, keeping the system prompt and the recent turn; the flush once per cycle, also
across separate `kit run --session` processes; `/compact [focus]`; the hooks."""

from __future__ import annotations

import json

import pytest

from helpers_agent import add_hook, agent_for, recorded_calls, set_config, write_script
from kit.agent import compaction as cp
from kit.templating import templates_for
from kit.tools import builtin_registry
from kit.workspace import Workspace

BIG = "".join(f"row {i:04d}: launch checklist item for release 7.3\n" for i in range(120))  # 5,160 chars
TURN2 = "Now plan the rollout. " + "Context: " + "the rollout covers eu-west and us-east regions. " * 90
CONFIG = """\
agent:
  context_window: {window}
memory:
  active_recall: {{enabled: false}}
"""


def window_for(ws) -> int:
    """A window where turn 1 (BIG) stays under 70 % and turn 2 (TURN2) crosses 80 %, whatever the
    size of the default prompt: base + turn 1 + turn 2 ≈ 85 % of it."""
    base = cp.context_tokens([{"role": "system", "content": ws.prompt().prompt}]) + cp.tools_tokens(
        builtin_registry().schemas())
    return int((base + cp.estimate_tokens(BIG) + cp.estimate_tokens(TURN2) + 100) / 0.85)


SMALL = "release 7.3 owner: dana\n" * 16
TURN1 = "Here is the launch checklist; please also read small.txt.\n" + BIG  # the bulk is the user's


@pytest.fixture
def ws(ws_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    set_config(ws_path, CONFIG.format(window=32000))
    (ws_path / "big.txt").write_text(BIG)
    (ws_path / "small.txt").write_text(SMALL)
    ws = Workspace.open(ws_path)
    set_config(ws_path, CONFIG.format(window=window_for(ws)))
    ws.reload(["kit.yaml"])
    return ws


def _spy(ws, log):
    add_hook(ws, "spy", ["compaction:before", "compaction:after"], handler=f"""
import json
def handle(event):
    with open({str(log)!r}, "a") as fh:
        fh.write(json.dumps({{"type": event.type, "data": event.data}}) + "\\n")
""")


def _first_turn():
    return [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
        {"text": "I read the checklist for release 7.3."},
    ]


def _small_turn():
    return [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "small.txt"}}]},
        {"text": "I read the checklist for release 7.3."},
    ]


def test_flush_then_summary_when_placeholders_are_not_enough(ws, tmp_path):
    log = tmp_path / "hooks.jsonl"
    _spy(ws, log)
    script = write_script(tmp_path, _small_turn() + [
        {"tool_calls": [{"name": "memory_write",
                         "arguments": {"text": "Release 7.3 rollout: eu-west and us-east", "topic": "work"}}]},
        {"text": "NO_REPLY"},
        {"text": "- Active tasks: plan the rollout of release 7.3\n- Files: big.txt"},
        {"text": "Rollout plan: eu-west first, then us-east."},
    ])
    agent = agent_for(ws, script)
    first = agent.turn(TURN1)
    assert first.compactions == ()
    assert first.usage["context_tokens"] < cp.FLUSH_RATIO * ws.config.get("agent.context_window")

    result = agent.turn(TURN2)
    assert result.reply == "Rollout plan: eu-west first, then us-east."
    assert result.iterations == 1
    assert len(result.compactions) == 1
    done = result.compactions[0]
    assert done.mode == "summary" and done.dropped == 4 and done.error is None
    assert done.before_tokens >= cp.SUMMARY_RATIO * ws.config.get("agent.context_window")
    assert done.after_tokens < cp.FLUSH_RATIO * ws.config.get("agent.context_window")
    assert result.usage["model_calls"] == 4  # flush (2) + summary + answer

    # the flush asked for today's daily note and the model's memory_write landed there
    calls = recorded_calls(script)
    flush_prompt = calls[2]["messages"][-1]["content"]
    assert "pre-compaction memory flush" in flush_prompt and "memory/2026-05-07.md" in flush_prompt
    assert calls[2]["tools"] == ["memory_get", "memory_search", "memory_write"]
    note = (ws.root / "memory" / "2026-05-07.md").read_text()
    assert "Release 7.3 rollout: eu-west and us-east" in note

    # the summariser saw the old turn (tool output included), not the current request
    summary_request = calls[4]["messages"]
    assert summary_request[0] == {"role": "system",
                                  "content": templates_for(ws).render("compaction-system.md.j2").text}
    assert "[tool result read_file]" in summary_request[1]["content"]
    assert "Now plan the rollout" not in summary_request[1]["content"]

    # the answer call: system prompt kept, summary, then the recent turn verbatim
    final = calls[5]["messages"]
    assert final[0]["role"] == "system" and final[0]["content"] == calls[0]["messages"][0]["content"]
    assert final[1]["content"].startswith(cp.SUMMARY_PREFIX)
    assert "plan the rollout of release 7.3" in final[1]["content"]
    assert final[2] == {"role": "user", "content": TURN2}
    assert len(final) == 3

    # the transcript keeps everything; resuming rebuilds exactly the compacted history
    lines = agent.store.transcript(agent.session_id)
    assert sum(1 for line in lines if line.get("hidden")) == 4  # flush prompt, call, result, NO_REPLY
    # cheap first (the small tool output), then the summary, since the placeholder was not enough
    assert [line.get("mode") for line in lines if line.get("kind") == "compaction"] == ["placeholders", "summary"]
    assert agent.store.load_messages(agent.session_id) == agent.history

    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["type"] for e in events] == ["compaction:before", "compaction:after"]
    assert events[0]["data"]["compacting"] == 4
    assert events[1]["data"]["mode"] == "summary"


def test_placeholders_first_and_no_model_call_when_they_suffice(ws, tmp_path):
    script = write_script(tmp_path, _first_turn() + [
        {"text": "NO_REPLY"},  # flush: nothing to save
        {"text": "Done."},
    ])
    agent = agent_for(ws, script)
    agent.turn("Please read big.txt")
    result = agent.turn(TURN2)
    assert result.reply == "Done."
    [done] = result.compactions
    assert (done.mode, done.error, done.summary, len(done.replaced)) == ("placeholders", None, None, 1)
    window = ws.config.get("agent.context_window")
    assert done.before_tokens >= cp.SUMMARY_RATIO * window > done.after_tokens
    assert result.usage["model_calls"] == 2  # the flush and the answer: no summary call

    calls = recorded_calls(script)
    assert len(calls) == 4
    final = calls[3]["messages"]
    tool = [m for m in final if m["role"] == "tool"]
    assert len(tool) == 1
    assert tool[0]["content"].startswith("[read_file result (5760 chars)")
    assert tool[0]["content"].endswith("dropped by compaction; call the tool again if needed]")
    assert "row 0001" not in json.dumps(final)
    assert [m["role"] for m in final] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert agent.store.load_messages(agent.session_id) == agent.history


def test_failed_summary_keeps_the_placeholders(ws, tmp_path):
    script = write_script(tmp_path, _small_turn() + [
        {"text": "NO_REPLY"},  # flush: nothing to save
        {"error": {"kind": "context_overflow", "message": "summary request too long"}},
        {"text": "Done."},
    ])
    agent = agent_for(ws, script)
    agent.turn(TURN1)
    result = agent.turn(TURN2)
    assert result.reply == "Done."
    [done] = result.compactions
    assert done.mode == "placeholders"
    assert "summarising failed: summary request too long" in done.error
    assert done.after_tokens < done.before_tokens
    final = recorded_calls(script)[4]["messages"]
    assert [m["content"] for m in final if m["role"] == "tool"] == [
        "[read_file result (384 chars) dropped by compaction; call the tool again if needed]"]
    assert agent.store.load_messages(agent.session_id) == agent.history


def test_compact_command_summarises_with_the_focus(ws, tmp_path):
    script = write_script(tmp_path, _first_turn() + [
        {"text": "hello back"},
        {"text": "- the checklist of release 7.3 was read"},
    ])
    agent = agent_for(ws, script)
    agent.turn("Please read big.txt")
    agent.turn("hello")
    done = agent.compact("the release number")
    assert (done.mode, done.dropped, len(done.replaced)) == ("summary", 4, 1)
    asked = recorded_calls(script)[-1]["messages"][1]["content"]
    assert "The user asked the summary to focus on: the release number" in asked
    assert "row 0001" in asked  # the summariser read the tool output as it was, not its placeholder
    assert [m["role"] for m in agent.history] == ["user", "user", "assistant"]
    assert agent.history[0]["content"].startswith(cp.SUMMARY_PREFIX)
    assert agent.store.load_messages(agent.session_id) == agent.history


def test_the_flush_happens_once_per_cycle_across_kit_run_processes(ws, tmp_path):
    """Regression (issue 10): the "already flushed" flag lived in the process, so every
    `kit run --session K` turn above 70 % flushed again. Three processes, one flush."""
    from conftest import run_kit

    base = cp.context_tokens([{"role": "system", "content": ws.prompt().prompt}]) + cp.tools_tokens(
        builtin_registry().schemas())
    set_config(ws.root, CONFIG.format(window=int(base / 0.72)))  # over 70 % at once, under 80 % for a while
    script = write_script(tmp_path, [{"text": "ok"}] * 3)
    env = {"KIT_NOW": "2026-05-07T09:00:00+00:00"}
    for number in range(3):
        done = run_kit("run", "--session", "main", "--model", f"script:{script}", f"message {number}",
                       cwd=ws.root, env=env)
        assert done.returncode == 0, done.stderr
    calls = recorded_calls(script)
    flushes = [c for c in calls if "pre-compaction memory flush" in c["messages"][-1]["content"]]
    assert len(flushes) == 1
    assert len(calls) == 4  # one flush, three answers
    assert [c["messages"][-1]["content"] for c in calls if c not in flushes] == [
        "message 0", "message 1", "message 2"]


def test_split_keeps_tool_calls_with_their_results():
    history = [
        {"role": "user", "content": "a" * 400},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function",
                                                             "function": {"name": "x", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "1", "name": "x", "content": "b" * 400},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "c" * 40},
        {"role": "assistant", "content": "d"},
        {"role": "user", "content": "e"},
    ]
    old, recent = cp.split_history(history, keep_tokens=50)
    assert old == history[:4] and recent == history[4:]
    old, recent = cp.split_history(history, keep_tokens=5)
    assert recent == history[6:]
    old, recent = cp.split_history(history, keep_tokens=10_000)
    assert old == [] and recent == history
