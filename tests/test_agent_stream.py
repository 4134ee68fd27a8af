"""The loop consumes the provider's stream and re-emits the turn as agent events (kit.agent.events):
text as it arrives, tool calls and results, status lines, the final result; Ctrl-C mid-stream
keeps the partial reply in the session, marked interrupted; `kit run --stream-json` prints the
events one per line as they happen (a real HTTP server holds the reply back until the test has
read the first line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from helpers_agent import agent_for, set_config, write_script
from helpers_openai_server import FakeLLMServer, text_reply, tool_reply
from kit.workspace import Workspace

T0 = "2026-05-07T09:00:00+00:00"


@pytest.fixture(autouse=True)
def frozen(kit_now):
    kit_now(T0)


def no_recall(ws_path, extra: str = "") -> None:
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n" + extra)


def test_a_turn_is_reported_as_events_in_order(ws_path, tmp_path):
    no_recall(ws_path)
    ws = Workspace.open(ws_path)
    (ws_path / "notes.txt").write_text("the deploy is on Friday\n")
    script = write_script(tmp_path, [
        {"text": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "The deploy is on **Friday**."},
    ])
    events = []
    agent = agent_for(ws, script, on_event=events.append)
    result = agent.turn("when is the deploy?")
    kinds = [e.type for e in events]
    assert kinds == (["turn_start", "model_call"] + ["text_delta"] * 3 + ["tool_call", "tool_result", "model_call"]
                     + ["text_delta"] * 5 + ["final"])
    assert events[0].to_json() == {"type": "turn_start", "v": 1, "session": result.session,
                                   "model": f"script:{script}"}
    first = [e.text for e in events if e.type == "text_delta" and e.step == 1]
    second = [e.text for e in events if e.type == "text_delta" and e.step == 2]
    assert ("".join(first), "".join(second)) == ("Let me look.", result.reply)
    call, done = events[5], events[6]
    assert call.to_json() == {"type": "tool_call", "id": "call_1_1", "name": "read_file",
                              "arguments": {"path": "notes.txt"}, "step": 1}
    assert (done.name, done.ok, done.blocked, done.id) == ("read_file", True, False, "call_1_1")
    assert "the deploy is on Friday" in done.preview
    final = events[-1].to_json()
    assert final["type"] == "final" and final["reply"] == "The deploy is on **Friday**."
    assert {k: v for k, v in final.items() if k != "type"} == result.to_json()


def test_status_lines_are_events_too(ws_path, tmp_path):
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    ws = Workspace.open(ws_path)
    script = write_script(tmp_path, [{"text": "hi"}])
    events, lines = [], []
    agent = agent_for(ws, script, on_event=events.append, status=lines.append)
    agent._say("info", "something to know", {"detail": 3})
    assert lines == ["something to know"]
    assert events[-1].to_json() == {"type": "status", "kind": "info", "line": "something to know", "detail": 3}


class CtrlC:
    """Raises KeyboardInterrupt (what SIGINT does in the main thread) after `after` text deltas."""

    def __init__(self, after: int):
        self.after, self.seen = after, 0

    def __call__(self, event) -> None:
        if event.type == "text_delta":
            self.seen += 1
            if self.seen == self.after:
                raise KeyboardInterrupt


def test_ctrl_c_mid_stream_keeps_the_partial_reply(ws_path, tmp_path):
    no_recall(ws_path)
    ws = Workspace.open(ws_path)
    script = write_script(tmp_path, [{"text": "one two three four five six"}, {"text": "again"}])
    agent = agent_for(ws, script, session_key="main", on_event=CtrlC(after=3))
    result = agent.turn("count")
    assert (result.stopped, result.finish_reason, result.reply) == ("cancelled", "interrupted", "one two three ")
    # in the session, marked interrupted, and in the history the next turn sends
    lines = [json.loads(line) for line in next((ws_path / ".kit" / "sessions").glob("*.jsonl")).read_text().splitlines()]
    last = lines[-1]
    assert (last["role"], last["content"], last["finish_reason"]) == ("assistant", "one two three ", "interrupted")
    agent.on_event = None
    assert agent.turn("go on").reply == "again"
    assert [m["content"] for m in agent.history[-4:]] == ["count", "one two three ", "go on", "again"]


def test_ctrl_c_before_any_text_keeps_nothing_and_the_session_goes_on(ws_path, tmp_path):
    no_recall(ws_path)
    ws = Workspace.open(ws_path)
    script = write_script(tmp_path, [{"text": "the answer"}])

    def interrupt(event):  # while waiting for the first token (before the request: no turn used)
        if event.type == "model_call":
            raise KeyboardInterrupt

    agent = agent_for(ws, script, on_event=interrupt)
    result = agent.turn("hello")
    assert (result.stopped, result.reply) == ("cancelled", "")
    assert [m["role"] for m in agent.history] == ["user"]
    agent.on_event = None
    assert agent.turn("hello again").reply == "the answer"


def test_ctrl_c_while_a_tool_runs_answers_the_call_next_turn(ws_path, tmp_path):
    no_recall(ws_path)
    ws = Workspace.open(ws_path)
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "memory_search", "arguments": {"query": "x"}}]},
        {"text": "fine"},
    ])

    def interrupt(event):
        if event.type == "tool_call":
            raise KeyboardInterrupt

    agent = agent_for(ws, script, on_event=interrupt)
    assert agent.turn("search").stopped == "cancelled"
    agent.on_event = None
    assert agent.turn("and now?").reply == "fine"
    tool = [m for m in agent.history if m["role"] == "tool"]
    assert [m["content"] for m in tool] == ["[kit] not run: the turn was interrupted before this call"]


# ---------------------------------------------------------------------------- kit run --stream-json


def configure_server(ws_path, server: FakeLLMServer) -> None:
    (ws_path / "kit.yaml").write_text(textwrap.dedent(f"""\
        agent:
          model: local/gpt-a
          retry: {{max_attempts: 1}}
        providers:
          local: {{type: openai, base_url: "{server.url}", api_key_env: KIT_TEST_KEY}}
        memory:
          active_recall: {{enabled: false}}
        """))


def test_stream_json_prints_each_event_as_it_happens(ws_path, tmp_path):
    (ws_path / "notes.txt").write_text("Friday\n")
    gate = threading.Event()
    with FakeLLMServer() as server:
        configure_server(ws_path, server)
        server.push(tool_reply("read_file", {"path": "notes.txt"}))
        held = text_reply("It is on Friday, as the notes say.", gate=gate, gate_after=3)
        server.push(held)
        env = dict(os.environ, KIT_TEST_KEY="sk-test", KIT_NOW=T0, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen([sys.executable, "-m", "kit", "run", "--stream-json", "when?"], cwd=ws_path,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            seen = []
            for line in proc.stdout:
                seen.append(json.loads(line))
                if seen[-1]["type"] == "text_delta":
                    break  # the reply's first words, read while the server still holds the rest
            assert not gate.is_set() and proc.poll() is None
            gate.set()
            seen += [json.loads(line) for line in proc.stdout]
            assert proc.wait(60) == 0, proc.stderr.read()
        finally:
            gate.set()
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
            proc.stderr.close()
    assert held.gate_opened is True
    kinds = [e["type"] for e in seen]
    assert kinds[:5] == ["turn_start", "model_call", "tool_call", "tool_result", "model_call"]
    assert kinds[-1] == "final" and set(kinds[5:-1]) == {"text_delta"}
    assert "".join(e["text"] for e in seen if e["type"] == "text_delta") == "It is on Friday, as the notes say."
    assert seen[1] == {"type": "model_call", "target": "local/gpt-a", "attempt": 1, "step": 1}
    final = seen[-1]
    assert final["reply"] == "It is on Friday, as the notes say." and final["model"] == "local/gpt-a"
    assert [c["name"] for c in final["tool_calls"]] == ["read_file"]


def test_stream_json_and_json_exclude_each_other(ws_path):
    from conftest import run_kit

    done = run_kit("run", "--json", "--stream-json", "hi", cwd=ws_path)
    assert done.returncode == 2 and "--json and --stream-json exclude each other" in done.stderr
