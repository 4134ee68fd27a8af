"""Firing events: isolation (raise, timeout, exit 1), decision events, async, ordering."""

from __future__ import annotations

import json

import pytest

from helpers_hooks import hooks_log, write_hook
from kit.hooks.registry import registry_for
from kit.workspace import Workspace


@pytest.fixture
def user_hooks(tmp_path, monkeypatch):
    """The user hooks root ($XDG_CONFIG_HOME/kit/hooks): trusted, so tests need no trust step."""
    from kit.paths import user_hooks_dir

    root = user_hooks_dir()
    root.mkdir(parents=True, exist_ok=True)
    return root


def fire(ws_path, event, data=None, **kw):
    ws = Workspace.open(ws_path)
    return registry_for(ws).fire(event, data or {}, **kw)


def test_raising_sleeping_and_failing_hooks_are_logged_and_the_pipeline_goes_on(ws_path, user_hooks):
    write_hook(user_hooks, "a-raises", ["message:sent"], "def handle(event):\n    raise RuntimeError('boom in a')\n")
    write_hook(user_hooks, "b-sleeps", ["message:sent"], "import time\ndef handle(event):\n    time.sleep(30)\n",
               timeout_s=0.5)
    write_hook(user_hooks, "c-exits", ["message:sent"], command="echo 'broken pipe dream' >&2; exit 1")
    write_hook(user_hooks, "d-works", ["message:sent"],
               "from pathlib import Path\ndef handle(event):\n"
               "    Path(event.workspace, 'ran.txt').write_text(event.data['text'])\n")

    outcome = fire(ws_path, "message:sent", {"text": "hello"})

    assert outcome.blocked is False
    assert outcome.ran == ["a-raises", "b-sleeps", "c-exits", "d-works"]
    assert (ws_path / "ran.txt").read_text() == "hello"  # the pipeline went on after three failures
    assert outcome.errors == [
        "a-raises: RuntimeError: boom in a",
        "b-sleeps: timed out after 0.5s (handler abandoned)",
        "c-exits: command exited 1: broken pipe dream",
    ]
    log = hooks_log(ws_path)
    assert "ERROR message:sent hook=a-raises: RuntimeError: boom in a" in log
    assert "ERROR message:sent hook=b-sleeps: timed out after 0.5s" in log
    assert "ERROR message:sent hook=c-exits: command exited 1: broken pipe dream" in log
    assert "d-works" not in log


def test_command_timeout_kills_the_command(ws_path, user_hooks):
    write_hook(user_hooks, "slow-cmd", ["heartbeat"], command="sleep 30; touch never.txt", timeout_s=0.5)
    outcome = fire(ws_path, "heartbeat")
    assert outcome.errors == ["slow-cmd: timed out after 0.5s (command killed)"]
    assert not (user_hooks / "slow-cmd" / "never.txt").exists()


def test_async_handler_runs_and_times_out(ws_path, user_hooks):
    write_hook(user_hooks, "async-ok", ["tool:before"],
               "import asyncio\nasync def handle(event):\n    await asyncio.sleep(0)\n"
               "    return {'arguments': {**event.data['arguments'], 'checked': True}}\n")
    write_hook(user_hooks, "async-slow", ["tool:after"],
               "import asyncio\nasync def handle(event):\n    await asyncio.sleep(30)\n", timeout_s=0.5)
    assert fire(ws_path, "tool:before", {"name": "x", "arguments": {"a": 1}}).data["arguments"] == {"a": 1, "checked": True}
    # cancelled on its own loop, not abandoned: the next event runs it again
    assert fire(ws_path, "tool:after", {"name": "x"}).errors == ["async-slow: timed out after 0.5s"]
    assert fire(ws_path, "tool:after", {"name": "x"}).errors == ["async-slow: timed out after 0.5s"]


def test_tool_before_handler_blocks_with_reason(ws_path, user_hooks):
    write_hook(user_hooks, "no-writes", ["tool:before"], """\
        def handle(event):
            if event.data["name"] == "write_file":
                return {"block": True, "reason": "writes are frozen during the release"}
        """)
    write_hook(user_hooks, "zz-after", ["tool:before"], "def handle(event):\n    raise SystemExit('must not run')\n")
    outcome = fire(ws_path, "tool:before", {"name": "write_file", "arguments": {"path": "x.md", "content": "x"}})
    assert outcome.blocked is True
    assert outcome.reason == "writes are frozen during the release"
    assert outcome.blocked_by == "no-writes"
    assert outcome.ran == ["no-writes"]  # the first block ends the pipeline
    assert "BLOCK tool:before hook=no-writes: writes are frozen during the release" in hooks_log(ws_path)
    # a different tool passes through both (zz-after's SystemExit is caught and logged)
    other = fire(ws_path, "tool:before", {"name": "read_file", "arguments": {"path": "x.md"}})
    assert other.blocked is False
    assert other.errors == ["zz-after: SystemExit: must not run"]


def test_tool_before_command_blocks_with_exit_2_and_stderr(ws_path, user_hooks):
    write_hook(user_hooks, "guard-cmd", ["tool:before"], command='sh "$KIT_HOOK_DIR/guard.sh"', files={"guard.sh": """\
        #!/bin/sh
        payload=$(cat)
        case "$payload" in
          *'"name": "write_file"'*) echo "no writing to $KIT_HOOK_EVENT targets" >&2; exit 2 ;;
        esac
        echo '{"arguments": {"path": "rewritten.md"}}'
        """})
    blocked = fire(ws_path, "tool:before", {"name": "write_file", "arguments": {"path": "x.md"}})
    assert blocked.blocked is True
    assert blocked.reason == "no writing to tool:before targets"
    rewritten = fire(ws_path, "tool:before", {"name": "read_file", "arguments": {"path": "x.md"}})
    assert rewritten.blocked is False
    assert rewritten.data == {"name": "read_file", "arguments": {"path": "rewritten.md"}}


def test_command_receives_the_event_json_on_stdin(ws_path, user_hooks):
    write_hook(user_hooks, "dump", ["memory:write"], command="cat > \"$KIT_WORKSPACE/event.json\"")
    fire(ws_path, "memory:write", {"text": "likes tea"}, session_key="main")
    event = json.loads((ws_path / "event.json").read_text())
    assert event["type"] == "memory:write"
    assert event["session_key"] == "main"
    assert event["data"] == {"text": "likes tea"}
    assert event["workspace"] == str(ws_path.resolve())


def test_block_on_a_non_decision_event_is_ignored(ws_path, user_hooks):
    write_hook(user_hooks, "blocker", ["message:sent"], command="echo nope >&2; exit 2")
    outcome = fire(ws_path, "message:sent", {"text": "x"})
    assert outcome.blocked is False
    assert "block ignored: message:sent is not a decision event" in hooks_log(ws_path)


def test_message_received_rewrites_text_in_order(ws_path, user_hooks):
    write_hook(user_hooks, "a-upper", ["message:received"], "def handle(e):\n    return {'text': e.data['text'].upper()}\n")
    write_hook(user_hooks, "b-suffix", ["message:received"], "def handle(e):\n    return {'text': e.data['text'] + '!'}\n")
    write_hook(user_hooks, "c-bad", ["message:received"], "def handle(e):\n    return {'text': 42}\n")
    outcome = fire(ws_path, "message:received", {"text": "hi", "session_id": "s"})
    assert outcome.data == {"text": "HI!", "session_id": "s"}
    assert outcome.errors == ["c-bad: 'text' must be a str; ignored"]


def test_return_values_of_non_decision_events_change_nothing(ws_path, user_hooks):
    write_hook(user_hooks, "meddler", ["tool:after"],
               "def handle(e):\n    e.data['result'] = 'tampered'\n    return {'result': 'tampered'}\n")
    assert fire(ws_path, "tool:after", {"result": "ok"}).data == {"result": "ok"}


def test_event_patterns_disabled_hooks_and_hooks_enabled_false(ws_path, user_hooks):
    write_hook(user_hooks, "all-commands", ["command"], "def handle(e):\n    return None\n")
    write_hook(user_hooks, "tools-glob", ["tool:*"], "def handle(e):\n    return None\n")
    write_hook(user_hooks, "off", ["command:new"], "def handle(e):\n    raise RuntimeError\n", enabled=False)
    ws = Workspace.open(ws_path)
    registry = registry_for(ws)
    assert [h.name for h in registry.for_event("command:skill")] == ["command-logger", "all-commands"]
    assert [h.name for h in registry.for_event("tool:after")] == ["tools-glob"]
    outcome = registry.fire("command:new", {"command": "new", "messages": []})
    assert "off: disabled" in outcome.skipped
    assert outcome.errors == []
    (ws_path / "kit.yaml").write_text("hooks: {enabled: false}\n")
    ws.reload(["kit.yaml"])
    assert registry_for(ws).fire("command:new", {}).ran == []


def test_same_name_in_a_later_root_overrides(ws_path, user_hooks):
    write_hook(user_hooks, "command-logger", ["command"], "def handle(e):\n    return None\n", description="mine")
    registry = registry_for(Workspace.open(ws_path))
    [hook] = [h for h in registry.hooks if h.name == "command-logger"]
    assert (hook.root, hook.description) == ("user", "mine")


def test_handlers_are_isolated_modules(ws_path, user_hooks):
    body = "COUNT = []\ndef handle(e):\n    COUNT.append(1)\n    return {'text': e.data['text'] + str(len(COUNT))}\n"
    write_hook(user_hooks, "one", ["message:received"], body)
    write_hook(user_hooks, "two", ["message:received"], body)
    assert fire(ws_path, "message:received", {"text": ""}).data["text"] == "11"


def test_handler_dict_style_event_access(ws_path, user_hooks):
    write_hook(user_hooks, "dicty", ["message:received"],
               "def handle(event):\n    return {'text': event['type'] + ' ' + event['data']['text']}\n")
    assert fire(ws_path, "message:received", {"text": "x"}).data["text"] == "message:received x"


def test_a_handler_stuck_past_its_timeout_is_not_started_again_until_it_returns(ws_path, user_hooks, tmp_path):
    """Python cannot kill the abandoned thread; firing again must not pile up one per event."""
    import time

    gate = tmp_path / "release"
    write_hook(user_hooks, "stuck", ["tool:after"],
               "import time\nfrom pathlib import Path\ndef handle(event):\n"
               f"    while not Path({str(gate)!r}).exists():\n        time.sleep(0.02)\n"
               "    Path(event.workspace, 'runs.txt').open('a').write('x')\n",
               timeout_s=0.2)
    assert fire(ws_path, "tool:after").errors == ["stuck: timed out after 0.2s (handler abandoned)"]
    assert fire(ws_path, "tool:after").errors == ["stuck: still running after an earlier timeout (not started again)"]
    assert "ERROR tool:after hook=stuck: still running after an earlier timeout (not started again)" in hooks_log(ws_path)
    gate.touch()  # the first call finishes; the hook runs normally again
    deadline = time.monotonic() + 10
    while not (ws_path / "runs.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)  # from its write to its return
    outcome = fire(ws_path, "tool:after")
    assert outcome.errors == [] and outcome.ran == ["stuck"]
    assert (ws_path / "runs.txt").read_text() == "xx"
