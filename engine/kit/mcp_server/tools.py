"""The tools `kit mcp serve` offers: Kit's own declarations (kit.tools.builtin), a subset.

One definition per tool: these are the agent's `Tool` objects themselves, so their schema,
description and behaviour (threat scan, dedupe, recall recording, session search) cannot drift
from what the agent has. The server hands session_search the workspace's session store.
"""

from __future__ import annotations

from kit.tools.builtin import (
    memory_get,
    memory_search,
    memory_write,
    session_search,
    skill_view,
    skills_list,
)
from kit.tools.registry import ToolRegistry

SERVED = (memory_search, memory_get, memory_write, skills_list, skill_view, session_search)


def served_tools() -> ToolRegistry:
    """A fresh registry of what `kit mcp serve` offers."""
    return ToolRegistry(SERVED)
