"""The tools `kit mcp serve` offers: Kit's own declarations (kit.tools.builtin), plus session_search.

One definition per tool: the memory and skill tools are the agent's `Tool` objects themselves, so
their schema, description and behaviour (threat scan, dedupe, recall recording) cannot drift from
what the agent has. session_search is declared here because past sessions belong to the agent's
session store, which the built-in tools (below the agent) may not import.
"""

from __future__ import annotations

from typing import Any

from kit.tools.builtin import (
    memory_get,
    memory_search,
    memory_write,
    skill_view,
    skills_list,
    to_json_text,
)
from kit.tools.registry import INT, STR, ToolError, ToolRegistry, tool

SESSION_LIMIT = 10


@tool("session_search",
      summary="search past conversations with the agent: session_search(query, limit?)",
      description="Search the transcripts of past conversations with this Kit agent (keywords; CJK too). "
                  "Returns the session, its title, the message number, role and a snippet.",
      params={"query": {**STR, "description": "words to find"},
              "limit": {**INT, "description": f"maximum hits (default {SESSION_LIMIT})"}},
      required=("query",))
def session_search(ctx: Any, args: dict[str, Any]) -> str:
    from kit.agent.sessions import SessionStore

    query = str(args.get("query") or "").strip()
    if not query:
        raise ToolError("missing required argument `query`")
    try:
        limit = int(args.get("limit") or SESSION_LIMIT)
    except (TypeError, ValueError):
        raise ToolError(f"`limit` must be an integer, got {args.get('limit')!r}") from None
    store = ctx.ws.owned("sessions", lambda: SessionStore(ctx.ws))  # the workspace's one store
    hits = store.search(query, limit=max(1, min(limit, 100)))
    return to_json_text({"query": query, "results": [h.to_json() for h in hits]})


SERVED = (memory_search, memory_get, memory_write, skills_list, skill_view, session_search)


def served_tools() -> ToolRegistry:
    """A fresh registry of what `kit mcp serve` offers."""
    return ToolRegistry(SERVED)
