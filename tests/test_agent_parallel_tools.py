"""One reply's tool calls run at the same time (at most agent.parallel_tools), results go back in
the order the model asked; a tool declared `serial=True` (exec) runs alone, and calls on the same
path (`serial="path"`: write_file, edit_file, read_file) run one after another, in order. Overlap
is proven with a barrier the calls can only pass together, not with timings."""

from __future__ import annotations

import threading

import pytest

from helpers_agent import agent_for, recorded_calls, set_config, write_script
from kit.tools import Tool, builtin_registry
from kit.tools.registry import STR, object_schema
from kit.workspace import Workspace


@pytest.fixture
def ws(ws_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    return Workspace.open(ws_path)


def meeting_tool(barrier: threading.Barrier, *, serial: bool | str = False, log: list | None = None) -> Tool:
    """A tool whose calls return only once `barrier.parties` of them are running at once."""

    def run(ctx, args):
        if log is not None:
            log.append(("start", args["who"]))
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return f"{args['who']} waited alone"
        return f"{args['who']} met the others"

    return Tool("meet", "Meet the others.", "meet", object_schema({"who": STR}, ("who",)), run, serial=serial)


def calls(*whos: str) -> dict:
    return {"tool_calls": [{"name": "meet", "arguments": {"who": w}} for w in whos]}


def test_calls_of_one_reply_run_together_and_answer_in_order(ws, tmp_path):
    barrier = threading.Barrier(3, timeout=20)
    tools = builtin_registry()
    tools.add(meeting_tool(barrier))
    script = write_script(tmp_path, [calls("ann", "bob", "cy"), {"text": "all met"}])
    events = []
    agent = agent_for(ws, script, tools=tools, on_event=events.append)
    result = agent.turn("meet")
    assert [o.result for o in result.tool_calls] == ["ann met the others", "bob met the others", "cy met the others"]
    sent = recorded_calls(script)[1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == [
        "ann met the others", "bob met the others", "cy met the others"]
    kinds = [(e.type, getattr(e, "arguments", {}).get("who")) for e in events if e.type.startswith("tool")]
    assert kinds == [("tool_call", "ann"), ("tool_call", "bob"), ("tool_call", "cy"),
                     ("tool_result", "ann"), ("tool_result", "bob"), ("tool_result", "cy")]


def test_the_bound_is_agent_parallel_tools(ws, tmp_path):
    set_config(ws.root, "memory:\n  active_recall: {enabled: false}\nagent:\n  parallel_tools: 2\n")
    ws.reload(["kit.yaml"])
    barrier = threading.Barrier(3, timeout=1)  # three can never meet with two workers
    tools = builtin_registry()
    tools.add(meeting_tool(barrier))
    script = write_script(tmp_path, [calls("ann", "bob", "cy"), {"text": "done"}])
    result = agent_for(ws, script, tools=tools).turn("meet")
    assert "ann waited alone" in [o.result for o in result.tool_calls]


def test_a_serial_tool_runs_alone(ws, tmp_path):
    barrier = threading.Barrier(2, timeout=1)
    log: list = []
    tools = builtin_registry()
    tools.add(meeting_tool(barrier, serial=True, log=log))
    script = write_script(tmp_path, [calls("ann", "bob"), {"text": "done"}])
    result = agent_for(ws, script, tools=tools).turn("meet")
    assert [o.result for o in result.tool_calls] == ["ann waited alone", "bob waited alone"]
    assert log == [("start", "ann"), ("start", "bob")]


def test_writes_to_the_same_path_run_in_order(ws, tmp_path):
    writes = [{"name": "write_file", "arguments": {"path": "notes/a.md", "content": f"version {n}\n"}}
              for n in range(1, 6)]
    reads = [{"name": "read_file", "arguments": {"path": "./notes/a.md"}}]
    script = write_script(tmp_path, [{"tool_calls": writes + reads}, {"text": "done"}])
    result = agent_for(ws, script).turn("write")
    assert (ws.root / "notes" / "a.md").read_text() == "version 5\n"
    assert result.tool_calls[-1].result == "version 5\n"  # the read waited for the writes


def test_lock_keys_of_the_builtin_tools():
    tools = builtin_registry()
    assert tools.get("exec").lock_key({"command": "ls"}) == "*"
    assert tools.get("write_file").lock_key({"path": "./a/b.md"}) == "path=a/b.md"
    assert tools.get("edit_file").lock_key({"path": "a/b.md"}) == "path=a/b.md"
    assert tools.get("memory_search").lock_key({"query": "x"}) is None


def test_calls_on_the_same_path_never_overlap_and_other_paths_do(ws, tmp_path):
    barrier = threading.Barrier(2, timeout=1)

    def run(ctx, args):
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            barrier.reset()
            return f"{args['path']} alone"
        return f"{args['path']} together"

    tools = builtin_registry()
    tools.add(Tool("touch", "Touch a file.", "touch", object_schema({"path": STR}, ("path",)), run, serial="path"))
    same = {"tool_calls": [{"name": "touch", "arguments": {"path": p}} for p in ("a.md", "./a.md")]}
    other = {"tool_calls": [{"name": "touch", "arguments": {"path": p}} for p in ("a.md", "b.md")]}
    script = write_script(tmp_path, [same, other, {"text": "done"}])
    result = agent_for(ws, script, tools=tools).turn("touch")
    assert [o.result for o in result.tool_calls] == ["a.md alone", "./a.md alone", "a.md together", "b.md together"]
