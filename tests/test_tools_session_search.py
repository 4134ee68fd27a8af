"""session_search: the agent searches its past sessions (FTS, the current one excluded), so it can
answer "what did we decide last week" without a memory write."""

from __future__ import annotations

import json

from helpers_agent import agent_for, recorded_calls, set_config, write_script
from kit.tools import ToolContext, execute_tool
from kit.workspace import Workspace


def test_the_agent_finds_what_was_decided_in_an_earlier_session(ws_path, tmp_path, kit_now):
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    kit_now("2026-04-28T10:00:00+00:00")
    ws = Workspace.open(ws_path)
    earlier = write_script(tmp_path, [{"text": "Agreed: the deploy moves to Thursdays, canary first."}],
                           name="earlier.yaml")
    first = agent_for(ws, earlier, session_key="work")
    first.turn("We decided the deploy happens on Thursdays with a canary.")
    first.end_session()
    first.close()

    kit_now("2026-05-07T09:00:00+00:00")
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "session_search", "arguments": {"query": "deploy Thursdays"}}]},
        {"text": "Last week we decided: Thursdays, canary first."},
    ])
    agent = agent_for(ws, script, session_key="work")
    result = agent.turn("what did we decide about the deploy day? (deploy Thursdays)")
    [call] = result.tool_calls
    found = json.loads(call.result)
    # both messages of the earlier session, with the day it started; none of the current one
    # (which also says it)
    assert found["query"] == "deploy Thursdays"
    assert sorted((r["session"], r["key"], r["started"][:10], r["seq"], r["role"]) for r in found["results"]) == [
        (first.session_id, "work", "2026-04-28", 1, "user"), (first.session_id, "work", "2026-04-28", 2, "assistant")]
    said = {r["seq"]: r["snippet"] for r in found["results"]}
    assert said[1] == "We decided the [deploy] happens on [Thursdays] with a canary."
    assert agent.session_id not in call.result
    assert "session_search" in recorded_calls(script)[0]["tools"]

    # the same Tool served over MCP: the same result shape, every session (no current one there)
    from kit.mcp_server.server import KitMcpServer

    served = KitMcpServer(ws, watch=False, warm=False).call_tool("session_search", {"query": "deploy Thursdays"})
    results = json.loads(served.result)["results"]
    assert [r for r in results if r["session"] == first.session_id] == found["results"]
    assert {r["session"] for r in results} == {first.session_id, agent.session_id}


def test_one_declaration_for_the_agent_and_mcp():
    from kit.mcp_server.tools import served_tools
    from kit.tools import builtin_registry

    assert served_tools().get("session_search") is builtin_registry().get("session_search")


def test_nothing_found_and_outside_an_agent_run(ws_path):
    ws = Workspace.open(ws_path)
    outcome = execute_tool(ToolContext(ws), "session_search", {"query": "anything"})
    assert (outcome.ok, outcome.result) == (
        False, "error: session_search needs the workspace's session store (an agent run or kit mcp serve)")
    from kit.agent.sessions import SessionStore

    store = SessionStore(ws)
    found = execute_tool(ToolContext(ws, sessions=store, session_id="x"), "session_search", {"query": "zebra"})
    assert json.loads(found.result) == {"query": "zebra", "results": []}
