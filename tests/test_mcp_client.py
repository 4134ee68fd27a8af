"""Kit as an MCP client: the agent (scripted model) against real MCP servers over stdio — one
written with the SDK in this suite (tests/data/mcp/sdk_server.py) and the third-party
`mcp-server-time` from PyPI. Policies, timeouts, crashes, hung servers, hooks, truncation, hot reload."""

from __future__ import annotations

import itertools
import os
import time

import pytest

from helpers_agent import add_hook, agent_for, recorded_calls, write_script
from helpers_mcp import call_log, sdk_server, time_server, write_servers

pytest.importorskip("mcp")
_RUNS = itertools.count()


@pytest.fixture
def ws(ws_path, tmp_path, monkeypatch):
    from kit.workspace import Workspace

    monkeypatch.setenv("KIT_TEST_CALL_LOG", str(tmp_path / "calls.jsonl"))
    return Workspace.open(ws_path)


@pytest.fixture
def calls(tmp_path):
    return lambda: call_log(tmp_path / "calls.jsonl")


def configure(ws, servers):
    write_servers(ws.root, servers)
    ws.reload()


def run(ws, tmp_path, turns, **options):
    """One agent turn over a script; the agent is closed (its servers stopped) afterwards."""
    script = write_script(tmp_path, turns, name=f"script-{next(_RUNS)}.yaml")  # each run from turn 1
    statuses: list[str] = []
    agent = agent_for(ws, script, status=statuses.append, **options)
    try:
        result = agent.turn("go")
        names = agent.tools.names
    finally:
        agent.close()
    return result, statuses, names, script


def call(name, /, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def with_env_passthrough(entry):
    # the SDK gives a stdio child only HOME, PATH, … : the call log's location is passed on explicitly
    return {**entry, "env": {"KIT_TEST_CALL_LOG": "${KIT_TEST_CALL_LOG}", **entry.get("env", {})}}


# --------------------------------------------------------------------------- end to end


def test_agent_calls_a_tool_of_an_sdk_server_end_to_end(ws, tmp_path, calls):
    configure(ws, {"t": with_env_passthrough(sdk_server(policy="allow"))})
    result, statuses, names, script = run(ws, tmp_path, [call("t__add", a=2, b=40), {"text": "42 it is"}])
    assert statuses == []
    assert result.reply == "42 it is"
    [outcome] = result.tool_calls
    assert (outcome.name, outcome.ok, outcome.blocked, outcome.result) == ("t__add", True, False, "42")
    assert [c["tool"] for c in calls()] == ["add"] and calls()[0]["arguments"] == {"a": 2, "b": 40}
    assert "t__add" in names and "t__crash" in names
    # the model received the server's tools with their schemas, and the prompt lists them
    first = recorded_calls(script)[0]
    assert "t__add" in first["tools"]
    system = first["messages"][0]["content"]
    assert "t__add" in system and "[t] Add two integers." in system


def test_agent_calls_the_third_party_mcp_server_time(ws, tmp_path):
    import json

    configure(ws, {"time": time_server(policy="allow")})
    result, statuses, names, _ = run(ws, tmp_path, [
        call("time__convert_time", source_timezone="Asia/Tokyo", time="12:00", target_timezone="Asia/Kolkata"),
        call("time__get_current_time", timezone="Mars/Olympus"),
        {"text": "done"}])
    assert statuses == []
    assert set(names) >= {"time__get_current_time", "time__convert_time"}
    converted, mars = result.tool_calls
    assert converted.ok, converted.result
    data = json.loads(converted.result)
    assert data["time_difference"] == "-3.5h"
    assert data["target"]["datetime"][11:16] == "08:30"
    # a bad argument is the server's tool error, which the model reads
    assert not mars.ok and "Invalid timezone" in mars.result and "Mars/Olympus" in mars.result


# --------------------------------------------------------------------------- policy


def test_default_policy_is_ask_and_ask_is_deny_when_not_interactive(ws, tmp_path, calls):
    configure(ws, {"t": with_env_passthrough(sdk_server())})
    result, _, names, _ = run(ws, tmp_path, [call("t__echo", text="hi"), {"text": "x"}])
    [outcome] = result.tool_calls
    assert outcome.blocked and not outcome.ok
    assert outcome.result == ("t__echo refused: mcp.servers.t asks before each call (policy ask) and this "
                              "run is not interactive; set its policy (or tools.echo) to allow in kit.yaml "
                              "to let it run unattended")
    assert "t__echo" in names  # offered, but it never reached the server
    assert [c for c in calls() if c["tool"] == "echo"] == []


def test_ask_runs_after_the_user_approves_and_not_after_a_no(ws, tmp_path, calls):
    configure(ws, {"t": with_env_passthrough(sdk_server(policy="ask"))})
    asked = []

    def approve(command, reason):
        asked.append((command, reason))
        return len(asked) == 1  # yes, then no

    result, _, _, _ = run(ws, tmp_path, [call("t__echo", text="one"), call("t__echo", text="two"), {"text": "x"}],
                          interactive=True, approve=approve)
    first, second = result.tool_calls
    assert (first.ok, first.result) == (True, "one")
    assert second.blocked and second.result == "t__echo refused: the user declined this call"
    assert asked[0] == ('t__echo {"text": "one"}', "MCP server 't' asks before each call")
    assert [c["arguments"]["text"] for c in calls()] == ["one"]


def test_deny_wins_and_denied_tools_are_not_offered(ws, tmp_path, calls):
    configure(ws, {
        "t": with_env_passthrough(sdk_server(policy="allow", tools={"shout": "deny", "echo": "allow"})),
        "u": with_env_passthrough(sdk_server(policy="deny", tools={"echo": "allow"})),
    })
    result, _, names, _ = run(ws, tmp_path, [call("t__shout", text="no"), call("u__echo", text="no"),
                                             call("t__echo", text="yes"), {"text": "x"}])
    assert "t__shout" not in names and "t__echo" in names and "t__add" in names
    assert not [n for n in names if n.startswith("u__")]  # a denied server offers nothing, overrides or not
    shout, u_echo, echo = result.tool_calls
    assert not shout.ok and shout.result.startswith("error: unknown tool `t__shout`")
    assert not u_echo.ok and u_echo.result.startswith("error: unknown tool `u__echo`")
    assert echo.ok and echo.result == "yes"
    assert [c["tool"] for c in calls()] == ["echo"]


def test_policy_is_read_at_each_call(ws, tmp_path, calls):
    """An edit of the policy applies to the next call, without a restart."""
    from kit.mcp_client.manager import McpClients
    from kit.tools import ToolContext, builtin_registry, execute_tool

    configure(ws, {"t": with_env_passthrough(sdk_server(policy="allow"))})
    registry = builtin_registry()
    clients = McpClients(ws)
    try:
        clients.sync(registry)
        ctx = ToolContext(ws, tools=registry)
        assert execute_tool(ctx, "t__echo", {"text": "a"}).ok
        configure(ws, {"t": with_env_passthrough(sdk_server(policy="allow", tools={"echo": "ask"}))})
        refused = execute_tool(ctx, "t__echo", {"text": "b"})
        assert refused.blocked and "policy ask" in refused.result
    finally:
        clients.close()
    assert [c["arguments"]["text"] for c in calls() if c["tool"] == "echo"] == ["a"]


# --------------------------------------------------------------------------- failures


def test_a_call_that_times_out_or_crashes_is_an_error_and_the_server_restarts(ws, tmp_path):
    configure(ws, {"t": sdk_server(policy="allow", timeout_s=1)})
    started = time.monotonic()
    result, _, _, _ = run(ws, tmp_path, [call("t__pid"), call("t__slow", seconds=60), call("t__pid"),
                                         call("t__crash"), call("t__pid"), {"text": "x"}])
    assert time.monotonic() - started < 40  # not the 60 s the tool sleeps
    first, slow, second, crash, third = result.tool_calls
    assert not slow.ok and slow.result == ("error: MCP server 't' did not answer slow within 1 s (timeout_s); "
                                           "Kit restarts it on the next call")
    assert not crash.ok
    assert crash.result == ("error: MCP server 't' exited during crash (its stderr said: the test server "
                            "crashes now); Kit restarts it on the next call")
    pids = [first.result, second.result, third.result]
    assert all(o.ok for o in (first, second, third)) and len(set(pids)) == 3  # a new process each time
    log = (ws.root / ".kit" / "logs" / "mcp-t.log").read_text(encoding="utf-8")
    assert "the test server crashes now" in log


def test_a_server_that_fails_to_start_is_one_line_and_the_agent_runs_without_it(ws, tmp_path):
    configure(ws, {"bad": sdk_server("--exit-on-start", policy="allow"),
                   "t": sdk_server(policy="allow")})
    result, statuses, names, _ = run(ws, tmp_path, [call("t__add", a=1, b=1), {"text": "fine"}])
    assert statuses == ["MCP server 'bad' failed to start: it exited before answering initialize; its stderr "
                        "said: fatal: the test server was told to exit before serving; the agent runs "
                        "without its tools"]
    assert result.reply == "fine" and result.tool_calls[0].result == "2"
    assert not [n for n in names if n.startswith("bad__")]


def test_a_hung_server_is_given_up_after_its_startup_timeout(ws, tmp_path):
    configure(ws, {"hung": sdk_server("--hang-on-start", startup_timeout_s=1)})
    started = time.monotonic()
    result, statuses, names, _ = run(ws, tmp_path, [{"text": "still here"}])
    assert time.monotonic() - started < 30
    assert statuses == ["MCP server 'hung' failed to start: no answer to initialize within 1 s "
                        "(startup_timeout_s); the agent runs without its tools"]
    assert result.reply == "still here"
    assert not [n for n in names if n.startswith("hung__")]


def test_a_missing_command_is_named(ws, tmp_path):
    configure(ws, {"gone": {"command": str(tmp_path / "no-such-server")}})
    _, statuses, _, _ = run(ws, tmp_path, [{"text": "x"}])
    assert statuses == [f"MCP server 'gone' failed to start: command not found: {tmp_path / 'no-such-server'}; "
                        "the agent runs without its tools"]


# --------------------------------------------------------------------------- like every other tool


def test_results_errors_truncation_and_env(ws, tmp_path, monkeypatch):
    """A tool error reaches the model; a long result is cut like any tool's; env references are
    expanded from Kit's environment and nothing else of it leaks into the server."""
    monkeypatch.setenv("KIT_TEST_API_TOKEN", "s3cret")
    configure(ws, {"t": sdk_server(policy="allow", env={"API_TOKEN": "${KIT_TEST_API_TOKEN}", "MODE": "test"})})
    result, _, _, _ = run(ws, tmp_path, [call("t__fail", message="the disk is full"), call("t__big", chars=60000),
                                         call("t__env", name="API_TOKEN"), call("t__env", name="MODE"),
                                         call("t__env", name="KIT_TEST_API_TOKEN"), {"text": "x"}])
    fail, big, *env = result.tool_calls
    assert not fail.ok and not fail.blocked
    assert fail.result.startswith("error: ") and "the disk is full" in fail.result
    assert big.ok and big.truncated
    assert big.result.startswith("line 000000 of a long result")
    assert "chars cut by Kit: the result had 60000 chars, over the 16000-char limit" in big.result
    assert [o.result for o in env] == ["s3cret", "test", "<unset>"]


def test_tool_hooks_see_and_may_block_mcp_calls(ws, tmp_path, calls):
    configure(ws, {"t": with_env_passthrough(sdk_server(policy="allow"))})
    seen = ws.root / "after.txt"
    add_hook(ws, "guard", ["tool:before"], handler="""
def handle(event):
    if event.data["tool"] == "t__shout":
        return {"block": True, "reason": "no shouting"}
""")
    add_hook(ws, "audit", ["tool:after"], handler=f"""
def handle(event):
    with open({str(seen)!r}, "a") as fh:
        fh.write(event.data["tool"] + " " + str(event.data["ok"]) + " " + event.data["result"] + "\\n")
""")
    result, _, _, _ = run(ws, tmp_path, [call("t__shout", text="a"), call("t__echo", text="b"), {"text": "x"}])
    shout, echo = result.tool_calls
    assert shout.blocked and shout.result == "blocked by a hook: no shouting"
    assert echo.ok
    assert seen.read_text().splitlines() == ["t__shout False blocked by a hook: no shouting", "t__echo True b"]
    assert [c["tool"] for c in calls()] == ["echo"]


# --------------------------------------------------------------------------- lazy start and hot reload


def test_tools_are_cached_so_a_turn_that_calls_none_starts_no_server(ws, tmp_path, calls):
    from kit.mcp_client.manager import McpClients
    from kit.tools import builtin_registry

    configure(ws, {"t": with_env_passthrough(sdk_server(policy="allow"))})
    run(ws, tmp_path, [{"text": "first run discovers the tools"}])
    clients = McpClients(ws)
    registry = builtin_registry()
    try:
        clients.sync(registry)
        assert "t__add" in registry
        [status] = clients.statuses(probe=False)
        assert status.state == "ready"  # known from the cache, not running
        assert clients.call("t", "add", {"a": 1, "b": 2}) == "3"  # started on first use
        assert clients.statuses(probe=False)[0].state == "running"
    finally:
        clients.close()
    # changing what runs the server invalidates its cached tools
    configure(ws, {"t": with_env_passthrough(sdk_server("--name", "other", policy="allow"))})
    clients = McpClients(ws)
    try:
        assert clients.statuses(probe=False)[0].state == "unknown"
    finally:
        clients.close()


def test_a_skipped_heartbeat_starts_no_mcp_server(ws, tmp_path):
    # a heartbeat with nothing to do (HEARTBEAT.md has no tasks) spawned every configured server
    # (9.5 s on a fleet worker) before it found out it had nothing to do
    started = tmp_path / "started.log"
    entry = sdk_server(policy="allow", env={"KIT_TEST_START_LOG": str(started)})
    configure(ws, {"t": entry})
    (ws.root / "HEARTBEAT.md").write_text("# Heartbeat\n\n<!-- nothing to check -->\n")
    ws.reload()
    result, statuses, names, _ = run(ws, tmp_path, [{"text": "HEARTBEAT_OK"}], kind="heartbeat")
    assert (result.stopped, result.skip_reason) == ("skipped", "HEARTBEAT.md has no tasks")
    assert not started.exists() and not [n for n in names if n.startswith("t__")]
    # with a task, the same run starts it (the check above is not blind)
    (ws.root / "HEARTBEAT.md").write_text("# Heartbeat\n\n- Check the inbox.\n")
    ws.reload()
    result, statuses, names, _ = run(ws, tmp_path, [{"text": "HEARTBEAT_OK"}], kind="heartbeat")
    assert result.reply == "HEARTBEAT_OK" and len(started.read_text().split()) == 1 and "t__add" in names


def test_the_server_list_hot_reloads_between_turns(ws, tmp_path):
    configure(ws, {"t": sdk_server(policy="allow")})
    script = write_script(tmp_path, [call("t__pid"), {"text": "one"}, {"text": "two"}, call("u__add", a=1, b=2),
                                     {"text": "three"}])
    agent = agent_for(ws, script)
    try:
        first = agent.turn("go")
        pid = int(first.tool_calls[0].result)
        assert "t__pid" in agent.tools
        configure(ws, {"u": sdk_server(policy="allow")})  # t removed, u added
        agent.turn("again")
        assert "t__pid" not in agent.tools and "u__add" in agent.tools
        third = agent.turn("and again")
        assert third.tool_calls[0].result == "3"
        deadline = time.monotonic() + 15
        while _alive(pid) and time.monotonic() < deadline:  # t's process was stopped
            time.sleep(0.1)
        assert not _alive(pid)
    finally:
        agent.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False
