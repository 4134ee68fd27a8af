"""The tools the model may call: declarations (`Tool`), the registry, running a call.

    from kit.tools import ToolContext, builtin_registry, execute_tool

    tools = builtin_registry()                       # a ToolRegistry; tools.add(Tool(...)) for more
    outcome = execute_tool(ToolContext(ws, tools=tools), "read_file", {"path": "SOUL.md"})

Below the agent (which drives it) and the prompt (which lists `tools.summaries()`). Names load on
first use (PEP 562): the prompt lists the tools without importing how a call runs (execute,
truncate: a tenth of a cold `kit prompt`'s template step).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "builtin_registry": "kit.tools.builtin",
    "ToolOutcome": "kit.tools.execute",
    "execute_tool": "kit.tools.execute",
    "Blocked": "kit.tools.registry",
    "Tool": "kit.tools.registry",
    "ToolContext": "kit.tools.registry",
    "ToolError": "kit.tools.registry",
    "ToolRegistry": "kit.tools.registry",
    "tool": "kit.tools.registry",
}

__all__ = ["Blocked", "Tool", "ToolContext", "ToolError", "ToolOutcome", "ToolRegistry", "builtin_registry",
           "execute_tool", "tool"]

if TYPE_CHECKING:
    from kit.tools.builtin import builtin_registry
    from kit.tools.execute import ToolOutcome, execute_tool
    from kit.tools.registry import Blocked, Tool, ToolContext, ToolError, ToolRegistry, tool


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kit.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
