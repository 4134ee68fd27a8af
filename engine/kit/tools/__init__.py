"""The tools the model may call: declarations (`Tool`), the registry, running a call.

    from kit.tools import ToolContext, builtin_registry, execute_tool

    tools = builtin_registry()                       # a ToolRegistry; tools.add(Tool(...)) for more
    outcome = execute_tool(ToolContext(ws, tools=tools), "read_file", {"path": "SOUL.md"})

Below the agent (which drives it) and the prompt (which lists `tools.summaries()`).
"""

from kit.tools.builtin import builtin_registry
from kit.tools.execute import ToolOutcome, execute_tool
from kit.tools.registry import Blocked, Tool, ToolContext, ToolError, ToolRegistry, tool

__all__ = ["Blocked", "Tool", "ToolContext", "ToolError", "ToolOutcome", "ToolRegistry", "builtin_registry",
           "execute_tool", "tool"]
