"""One declaration per tool: the JSON schema, the function table and the prompt line are views of
the same `Tool`, and a registry takes more tools at run time (what MCP servers will add)."""

from __future__ import annotations

import pytest

from helpers_agent import agent_for, recorded_calls, set_config, write_script
from kit.errors import KitError
from kit.prompt.builder import build_prompt
from kit.tools import (
    Tool,
    ToolContext,
    ToolError,
    ToolRegistry,
    builtin_registry,
    execute_tool,
    tool,
)
from kit.tools.registry import STR
from kit.workspace import Workspace


@tool("weather__forecast", summary="the forecast for a city: weather__forecast(city)",
      description="Tomorrow's forecast for a city.", params={"city": {**STR, "description": "a city"}},
      required=("city",))
def forecast(ctx, args):
    if args["city"] == "Atlantis":
        raise ToolError("no forecast for Atlantis")
    return f"sunny in {args['city']} (workspace {ctx.ws.root.name})"


def test_the_views_come_from_one_declaration():
    registry = builtin_registry()
    for item in registry:
        schema = item.schema()
        assert schema == {"type": "function",
                          "function": {"name": item.name, "description": item.description,
                                       "parameters": dict(item.parameters)}}
        assert {"name": item.name, "description": item.summary} in registry.summaries()
    assert [s["function"]["name"] for s in registry.schemas()] == list(registry.names)
    assert forecast.parameters == {"type": "object", "properties": {"city": {"type": "string",
                                                                             "description": "a city"}},
                                   "required": ["city"], "additionalProperties": False}
    # how each tool's calls may overlap when a reply's calls run together: alone, or per file
    assert {t.name: t.serial for t in registry if t.serial} == {
        "memory_write": True, "exec": True, "read_file": "path", "write_file": "path", "edit_file": "path"}


def test_names_are_checked_and_never_taken_twice():
    registry = builtin_registry()
    with pytest.raises(KitError, match="a tool named 'read_file' is already registered"):
        registry.add(Tool(name="read_file", description="x", summary="x", parameters={}, run=lambda c, a: ""))
    with pytest.raises(KitError, match="must be 1-64 characters"):
        registry.add(Tool(name="has space", description="x", summary="x", parameters={}, run=lambda c, a: ""))
    replacement = Tool(name="read_file", description="x", summary="reads", parameters={}, run=lambda c, a: "r")
    registry.add(replacement, replace=True)
    assert registry.get("read_file") is replacement and len(registry) == 10
    assert registry.remove("exec").name == "exec" and "exec" not in registry
    assert builtin_registry().names[-1] == "exec"  # every registry is its own: nothing global changed
    assert registry.subset(["memory_get", "nope"]).names == ("memory_get",)


def test_an_added_tool_runs_and_failures_reach_the_model(workspace):
    registry = builtin_registry()
    registry.add(forecast)
    ctx = ToolContext(workspace, tools=registry)
    assert execute_tool(ctx, "weather__forecast", {"city": "Lyon"}).result == "sunny in Lyon (workspace ws)"
    failed = execute_tool(ctx, "weather__forecast", {"city": "Atlantis"})
    assert (failed.ok, failed.result) == (False, "error: no forecast for Atlantis")
    unknown = execute_tool(ToolContext(workspace), "weather__forecast", {"city": "Lyon"})
    assert unknown.result == ("error: unknown tool `weather__forecast`; available: memory_search, memory_get, "
                              "memory_write, session_search, skills_list, skill_view, read_file, write_file, edit_file, "
                              "exec")


def test_the_agent_offers_lists_and_runs_its_registry(ws_path, tmp_path):
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    ws = Workspace.open(ws_path)
    registry = builtin_registry().subset(["read_file"])
    registry.add(forecast)
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "weather__forecast", "arguments": {"city": "Oslo"}}]},
        {"text": "Sunny."},
    ])
    result = agent_for(ws, script, tools=registry).turn("weather in Oslo tomorrow?")
    assert result.reply == "Sunny." and [t.result for t in result.tool_calls] == ["sunny in Oslo (workspace ws)"]
    first, second = recorded_calls(script)
    assert first["tools"] == ["read_file", "weather__forecast"]
    system = first["messages"][0]["content"]
    tools_section = system[system.index("## Tools"):system.index("\n\n", system.index("## Tools") + 10)]
    assert tools_section == ("## Tools\n\n- read_file: read a file in the workspace\n"
                             "- weather__forecast: the forecast for a city: weather__forecast(city)")
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1_1", "name": "weather__forecast",
                                      "content": "sunny in Oslo (workspace ws)"}
    # the prompt built for the same registry outside the agent says the same
    assert "- weather__forecast: the forecast" in build_prompt(ws, tools=registry).prompt
    assert "weather__forecast" not in build_prompt(ws).prompt  # the default is the built-in set


def test_a_fresh_registry_is_independent():
    one, two = ToolRegistry([forecast]), ToolRegistry()
    two.add(forecast)
    one.remove("weather__forecast")
    assert (len(one), two.names) == (0, ("weather__forecast",))
