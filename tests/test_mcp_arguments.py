"""`kit mcp serve` holds a client to the schema it published: a call outside it is refused with
every reason (found by a new user: an unknown key was dropped, `{"query": 123}` searched for
"123", `"start": 2.5` read line 2). A blank query is a mistake for both search tools."""

from __future__ import annotations

import json
import sqlite3

import pytest

pytest.importorskip("mcp")

from kit.mcp_server.arguments import argument_problems  # noqa: E402
from kit.mcp_server.server import KitMcpServer  # noqa: E402
from kit.mcp_server.tools import served_tools  # noqa: E402
from kit.tools import ToolContext, execute_tool  # noqa: E402
from kit.workspace import Workspace  # noqa: E402


@pytest.mark.parametrize(("name", "arguments", "problems"), [
    ("memory_search", {"query": "deploy"}, []),
    ("memory_search", {"query": "deploy", "limit": 3}, []),
    ("memory_search", {"query": "deploy", "bogus": 1},
     ["unknown argument `bogus` (memory_search takes `query`, `limit`)"]),
    ("memory_search", {"query": 123}, ["`query` must be a string, not 123"]),
    ("memory_search", {"query": "x", "limit": True}, ["`limit` must be an integer, not true"]),
    ("memory_search", {"query": "x", "limit": "5"}, ['`limit` must be an integer, not "5"']),
    ("memory_get", {"path": "MEMORY.md", "start": 2.5}, ["`start` must be an integer, not 2.5"]),
    ("memory_get", {"start": 0}, ["missing required argument `path`", "`start` must be at least 1, not 0"]),
    ("skills_list", {"a": 1, "b": 2}, ["unknown arguments `a`, `b` (skills_list takes no arguments)"]),
    ("memory_write", {"text": "x" * 60, "topic": None}, ["`topic` must be a string, not null"]),
])
def test_argument_problems(name, arguments, problems):
    tool = served_tools().get(name)
    assert argument_problems(name, tool.parameters, arguments) == problems


def _files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".kit" not in p.parts}


def _recalls(root) -> int:
    state = root / ".kit" / "state.db"
    if not state.exists():
        return 0
    with sqlite3.connect(state) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return db.execute("SELECT COUNT(*) FROM recall_events").fetchone()[0] if "recall_events" in tables else 0


def test_a_call_outside_the_schema_is_refused_and_does_nothing(ws_path):
    ws = Workspace.open(ws_path)
    server = KitMcpServer(ws, watch=False, warm=False)
    before = _files(ws_path)
    search = server.call_tool("memory_search", {"query": 123, "bogus": 1})
    assert (search.ok, search.result) == (False, (
        "error: invalid arguments for `memory_search`: unknown argument `bogus` (memory_search takes "
        "`query`, `limit`); `query` must be a string, not 123"))
    write = server.call_tool("memory_write", {"text": "The deploy is on Thursdays", "when": "today"})
    assert (write.ok, write.result) == (False, (
        "error: invalid arguments for `memory_write`: unknown argument `when` (memory_write takes `text`, `topic`)"))
    assert _files(ws_path) == before  # nothing written
    assert _recalls(ws_path) == 0  # nothing searched, so nothing recorded
    # the call that fits runs as before
    ok = server.call_tool("memory_write", {"text": "The deploy is on Thursdays"})
    assert ok.ok and json.loads(ok.result)["duplicate"] is False
    assert _files(ws_path) != before


@pytest.mark.parametrize("tool", ["memory_search", "session_search"])
def test_a_blank_query_is_a_mistake_for_both_search_tools(ws_path, tool):
    """memory_search used to answer `results: []`, session_search "missing required argument" (it was given)."""
    from kit.agent.sessions import SessionStore

    ws = Workspace.open(ws_path)
    outcome = execute_tool(ToolContext(ws, sessions=SessionStore(ws)), tool, {"query": "  "})
    assert (outcome.ok, outcome.result) == (False, "error: `query` is empty: say what to look for")
    served = KitMcpServer(ws, watch=False, warm=False).call_tool(tool, {"query": ""})
    assert (served.ok, served.result) == (False, "error: `query` is empty: say what to look for")
