"""The agent loop with the script provider: tools, iteration limit, repeated calls, usage,
a cache-stable system prompt, message hooks, transcripts."""

from __future__ import annotations

import json

import pytest

from helpers_agent import add_hook, agent_for, recorded_calls, set_config, write_script
from kit.agent.loop import REPEAT_STOP, Agent
from kit.providers.base import ProviderError
from kit.workspace import Workspace

QUIET = "memory:\n  active_recall: {enabled: false}\n"


@pytest.fixture
def ws(ws_path):
    set_config(ws_path, QUIET)
    return Workspace.open(ws_path)


def U(p, c):  # noqa: N802 - a short name keeps the scripts readable
    return {"prompt_tokens": p, "completion_tokens": c}


def test_tool_turn_reply_usage_and_transcript(ws, tmp_path):
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "todo.md", "content": "- ship it\n"}}],
         "usage": U(100, 10)},
        {"text": "Saved your todo.", "usage": U(150, 5)},
    ])
    agent = agent_for(ws, script)
    result = agent.turn("remember to ship it")
    assert result.reply == "Saved your todo."
    assert result.iterations == 2
    assert result.stopped is None
    assert [t.to_json() for t in result.tool_calls] == [{
        "name": "write_file", "arguments": {"path": "todo.md", "content": "- ship it\n"},
        "ok": True, "blocked": False, "result_preview": "created todo.md (10 chars)"}]
    usage = result.usage
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"], usage["model_calls"]) == (
        250, 15, 265, 2)
    assert (ws.root / "todo.md").read_text() == "- ship it\n"

    data = result.to_json()
    assert set(data) == {"session", "reply", "tool_calls", "iterations", "usage", "model", "finish_reason",
                         "attempts", "blocked", "stopped"}
    assert (data["blocked"], data["stopped"]) == (None, None)
    assert data["session"] == agent.session_id
    model = f"script:{script.name}"
    assert (data["model"], data["finish_reason"]) == (model, "stop")
    assert data["attempts"] == [{"target": f"script:{script}", "outcome": "ok"}] * 2  # one per model call

    lines = agent.store.transcript(agent.session_id)
    assert [(m["seq"], m["role"]) for m in lines] == [(1, "user"), (2, "assistant"), (3, "tool"), (4, "assistant")]
    assert lines[0]["content"] == "remember to ship it"
    assert lines[1]["tool_calls"][0]["function"]["name"] == "write_file"
    assert json.loads(lines[1]["tool_calls"][0]["function"]["arguments"]) == {"path": "todo.md",
                                                                            "content": "- ship it\n"}
    assert lines[1]["usage"] == {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
                                 "cache_read_tokens": 0, "cache_write_tokens": 0}
    assert (lines[1]["model"], lines[1]["finish_reason"]) == (model, "tool_calls")
    assert lines[1]["attempts"] == [{"target": f"script:{script}", "outcome": "ok"}]
    assert lines[2]["tool_call_id"] == lines[1]["tool_calls"][0]["id"]
    info = agent.store.get(agent.session_id)
    assert (info.messages, info.prompt_tokens, info.completion_tokens, info.title) == (
        4, 250, 15, "remember to ship it")

    # what the model saw: system prompt, user, then the tool exchange, with all ten tools offered
    calls = recorded_calls(script)
    assert len(calls) == 2
    assert calls[0]["tools"] == sorted(["memory_search", "memory_get", "memory_write", "session_search",
                                        "skills_list", "skill_view", "read_file", "write_file", "edit_file",
                                        "exec"])
    assert [m["role"] for m in calls[1]["messages"]] == ["system", "user", "assistant", "tool"]


def test_iteration_limit_stops_the_run(ws_path, tmp_path):
    set_config(ws_path, QUIET + "agent:\n  max_iterations: 3\n")
    ws = Workspace.open(ws_path)
    turns = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "SOUL.md", "start": i}}]}
             for i in range(1, 5)] + [{"text": "never reached"}]
    script = write_script(tmp_path, turns)
    result = agent_for(ws, script).turn("loop forever")
    assert result.stopped == "max_iterations"
    assert result.iterations == 3
    assert len(result.tool_calls) == 3
    assert result.reply.startswith("Stopped: reached agent.max_iterations (3)")
    assert len(recorded_calls(script)) == 3


def test_repeated_call_gets_a_note_then_stops(ws, tmp_path):
    same = {"tool_calls": [{"name": "read_file", "arguments": {"path": "USER.md"}}]}
    script = write_script(tmp_path, [same] * 6 + [{"text": "unused"}])
    agent = agent_for(ws, script)
    result = agent.turn("what do you know about me?")
    assert result.stopped == "repeated_tool_call"
    assert result.iterations == REPEAT_STOP == 5
    assert len(result.tool_calls) == 4  # the fifth identical call is not run
    assert result.reply == ("Stopped: the same tool call (read_file) was repeated 5 times in a row "
                            "without progress.")
    tool_messages = [m for m in agent.history if m["role"] == "tool"]
    assert len(tool_messages) == 5
    notes = ["[kit note] You have made this exact call" in m["content"] for m in tool_messages]
    assert notes == [False, False, True, True, False]
    assert "made this exact call (read_file with the same arguments) 3 times" in tool_messages[2]["content"]
    assert tool_messages[4]["content"].startswith("[kit] not run: the run was stopped")


def test_different_arguments_reset_the_repeat_count(ws, tmp_path):
    a = {"tool_calls": [{"name": "read_file", "arguments": {"path": "USER.md"}}]}
    b = {"tool_calls": [{"name": "read_file", "arguments": {"path": "SOUL.md"}}]}
    script = write_script(tmp_path, [a, a, b, a, a, {"text": "done"}])
    result = agent_for(ws, script).turn("read")
    assert result.stopped is None and result.reply == "done"
    assert all("[kit note]" not in m.get("content", "") for m in recorded_calls(script)[-1]["messages"])


def test_script_runs_out_of_turns_with_a_clear_error(ws, tmp_path):
    script = write_script(tmp_path, [{"tool_calls": [{"name": "skills_list", "arguments": {}}]}])
    agent = agent_for(ws, script)
    with pytest.raises(ProviderError) as err:
        agent.turn("hi")
    assert f"script {script} has only 1 turn but the run asked for turn 2" in str(err.value)


def test_system_prompt_is_stable_and_follows_edits(ws, tmp_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")  # the prompt is rebuilt when the day turns between the turns
    script = write_script(tmp_path, [{"text": "one"}, {"text": "two"}, {"text": "three"}])
    agent = agent_for(ws, script)
    agent.turn("first")
    agent.turn("second")
    (ws.root / "SOUL.md").write_text("# Soul\n\nYou speak like a pirate captain named Quillbeard.\n")
    ws.reload(["SOUL.md"])
    agent.turn("third")
    calls = recorded_calls(script)
    systems = [c["messages"][0]["content"] for c in calls]
    assert systems[0] == systems[1]  # byte-identical while the workspace is unchanged
    assert "Quillbeard" not in systems[1]
    assert "Quillbeard" in systems[2]
    # the whole conversation is replayed in order
    assert [m["content"] for m in calls[2]["messages"][1:]] == ["first", "one", "second", "two", "third"]


def test_message_hooks_rewrite_block_and_see_replies(ws, tmp_path):
    sent_log = tmp_path / "sent.jsonl"
    add_hook(ws, "filter", ["message:received"], handler="""
def handle(event):
    text = event.data["text"]
    if "password" in text:
        return {"block": True, "reason": "no secrets in chat"}
    return {"text": text.replace("colour", "color")}
""")
    add_hook(ws, "sent", ["message:sent"], handler=f"""
import json
def handle(event):
    with open({str(sent_log)!r}, "a") as fh:
        fh.write(json.dumps(event.data["text"]) + "\\n")
""")
    script = write_script(tmp_path, [{"text": "Blue."}])
    agent = agent_for(ws, script)
    blocked = agent.turn("my password is hunter2")
    assert blocked.stopped == "blocked"
    assert blocked.reply == "Message blocked by a hook: no secrets in chat"
    assert agent.history == [] and recorded_calls(script) == []

    result = agent.turn("favourite colour?")
    assert result.reply == "Blue."
    assert recorded_calls(script)[0]["messages"][-1] == {"role": "user", "content": "favourite color?"}
    assert sent_log.read_text().splitlines() == ['"Blue."']


def test_session_key_resumes_the_conversation(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "Noted: Oslo."}, {"text": "You said Oslo."}])
    first = agent_for(ws, script, session_key="chat-42")
    first.turn("I live in Oslo")
    again = Agent(Workspace.open(ws.root), model=f"script:{script}", session_key="chat-42")
    assert again.session_id == first.session_id
    again.turn("where do I live?")
    assert [m["content"] for m in recorded_calls(script)[1]["messages"][1:]] == [
        "I live in Oslo", "Noted: Oslo.", "where do I live?"]
    other = agent_for(ws, script, session_key="chat-43")
    assert other.session_id != first.session_id


def test_session_hooks_and_new_session(ws, tmp_path):
    log = tmp_path / "events.jsonl"
    add_hook(ws, "spy", ["session:start", "session:end"], handler=f"""
import json
def handle(event):
    with open({str(log)!r}, "a") as fh:
        fh.write(json.dumps([event.type, event.session_key, len(event.data.get("messages") or []),
                             event.data.get("reason")]) + "\\n")
""")
    script = write_script(tmp_path, [{"text": "hello"}])
    agent = agent_for(ws, script, session_key="main")
    agent.turn("hi")
    old = agent.session_id
    agent.new_session("new", archived=False)
    assert agent.session_id != old and agent.history == []
    assert agent.store.get(old).ended is not None
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events == [["session:start", "main", 0, None], ["session:end", "main", 2, "new"],
                      ["session:start", "main", 0, None]]


def test_an_unnamed_session_has_no_key_in_its_hook_events(ws, tmp_path):
    """Regression (docs pass): hooks of an unnamed session (one-shot run, REPL without --session)
    got the session id as `session_key` and `key`; the docs and `kit sessions --json` say null."""
    log = tmp_path / "events.jsonl"
    add_hook(ws, "spy", ["session:start", "message:received", "tool:before", "session:end"], handler=f"""
import json
def handle(event):
    with open({str(log)!r}, "a") as fh:
        fh.write(json.dumps([event.type, event.session_key, event.data.get("key", "-")]) + "\\n")
""")
    script = write_script(tmp_path, [{"tool_calls": [{"name": "skills_list", "arguments": {}}]}, {"text": "ok"}])
    agent = agent_for(ws, script)
    agent.turn("hi")
    agent.end_session("exit")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events == [["session:start", None, None], ["message:received", None, "-"],
                      ["tool:before", None, "-"], ["session:end", None, None]]


def test_prompt_stays_identical_across_memory_writes_and_minutes(ws, tmp_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "memory_write", "arguments": {"text": "Prefers tea over coffee"}}]},
        {"text": "noted"},
        {"text": "tea"},
        {"text": "new day"},
    ])
    agent = agent_for(ws, script)
    version_before = ws.version
    agent.turn("I prefer tea")
    version_after_write = ws.version
    kit_now("2026-05-07T09:47:00+00:00")
    agent.turn("what do I drink?")
    kit_now("2026-05-08T08:00:00+00:00")
    agent.turn("good morning")
    systems = [c["messages"][0]["content"] for c in recorded_calls(script)]
    assert version_after_write > version_before  # the note write did publish a new snapshot version
    assert systems[0] == systems[1] == systems[2]  # same day, no prompt-relevant change
    assert "2026-05-07" in systems[2]
    assert systems[3] != systems[2] and "2026-05-08" in systems[3]


def test_agent_bootstrap_hooks_shape_the_system_prompt(ws, tmp_path):
    add_hook(ws, "team", ["agent:bootstrap"], handler="""
def handle(event):
    return {"add": [{"name": "TEAM.md", "content": "# Team\\n\\nThe on-call engineer this week is Rosalind."}],
            "remove": ["USER.md"]}
""")
    script = write_script(tmp_path, [{"text": "ok"}])
    agent_for(ws, script, session_key="main").turn("who is on call?")
    system = recorded_calls(script)[0]["messages"][0]["content"]
    assert "The on-call engineer this week is Rosalind." in system
    user_md = (ws.root / "USER.md").read_text().strip().splitlines()[-1]
    assert user_md and user_md not in system


def test_failing_hooks_never_stop_a_turn_and_the_log_says_why(ws, tmp_path):
    """A hook that raises, one that sleeps past its timeout and one that exits 1, on the events of
    a real tool-using turn: the turn completes (the sleeper is not waited for beyond its timeout,
    and its late return value — a block — is ignored) and hooks.log names each failure. (A hook
    that never answers where it may say no — a timeout on tool:before or message:received — blocks
    instead: test_hooks_reports.)"""
    import time

    add_hook(ws, "raises", ["tool:before"], handler="def handle(event):\n    raise RuntimeError('boom')\n")
    add_hook(ws, "sleeps", ["message:sent"], timeout_s=0.5, handler=(
        "import time\ndef handle(event):\n    time.sleep(30)\n    return {'block': True, 'reason': 'late'}\n"))
    add_hook(ws, "exits", ["tool:after"], command="echo 'disk on fire' >&2; exit 1")
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "done.md", "content": "yes\n"}}]},
        {"text": "Written."},
    ])
    started = time.monotonic()
    result = agent_for(ws, script).turn("write it")
    assert time.monotonic() - started < 15  # far below the sleeper's 30 s
    assert (result.reply, result.stopped) == ("Written.", None)
    assert [(t.name, t.ok, t.blocked) for t in result.tool_calls] == [("write_file", True, False)]
    assert (ws.root / "done.md").read_text() == "yes\n"
    log = (ws.kit_dir / "logs" / "hooks.log").read_text()
    assert "ERROR tool:before hook=raises: RuntimeError: boom" in log
    assert "ERROR message:sent hook=sleeps: timed out after 0.5s (handler abandoned)" in log
    assert "ERROR tool:after hook=exits: command exited 1: disk on fire" in log


def test_an_interrupted_turn_leaves_no_unanswered_tool_calls(ws, tmp_path, monkeypatch):
    """Ctrl-C during a tool left an assistant message whose calls had no results: every later
    request (OpenAI, Anthropic) would be refused as malformed, in this process and on resume."""
    import kit.agent.loop as loop

    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "SOUL.md"}},
                        {"name": "read_file", "arguments": {"path": "USER.md"}}]},
        {"text": "Back again."},
    ])
    agent = agent_for(ws, script, session_key="main")
    real = loop.execute_tool
    calls = []

    def interrupted_on_the_second(ctx, name, arguments, **kw):
        calls.append(arguments["path"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(ctx, name, arguments, **kw)

    monkeypatch.setattr(loop, "execute_tool", interrupted_on_the_second)
    # the turn stops cleanly (stopped: cancelled) instead of raising out of the library
    assert agent.turn("read both").stopped == "cancelled"
    monkeypatch.setattr(loop, "execute_tool", real)

    resumed = agent_for(ws, script, session_key="main")  # a new process resuming the session
    assert resumed.turn("hello?").reply == "Back again."
    sent = recorded_calls(script)[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    ids = [c["id"] for c in sent[2]["tool_calls"]]
    assert [m["tool_call_id"] for m in sent[3:5]] == ids
    assert sent[4]["content"] == "[kit] not run: the turn was interrupted before this call"
