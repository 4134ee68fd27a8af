"""Hook events: the object handlers receive, the known event names, and matching."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

KNOWN_EVENTS = (
    "workspace:loaded", "workspace:changed", "config:reloaded", "agent:bootstrap",
    "session:start", "session:end", "command:new", "command:reset", "message:received",
    "message:sent", "tool:before", "tool:after", "memory:write", "compaction:before",
    "compaction:after", "dream:start", "dream:end", "memory:promoted", "heartbeat",
)
# Only these act on what a hook returns (block, rewrite); other events ignore return values.
DECISION_EVENTS = frozenset({"tool:before", "agent:bootstrap", "message:received"})
# The keys of `data` a decision hook may rewrite, per event.
REWRITABLE = {"tool:before": "arguments", "agent:bootstrap": "files", "message:received": "text"}
KNOWN_FAMILIES = frozenset(e.split(":")[0] for e in KNOWN_EVENTS)


@dataclass
class HookEvent:
    """What `handle(event)` receives (commands get `to_json()` on stdin).

    `data` is the hook's own copy: changing it in place changes nothing; return a dict instead.
    """

    type: str
    timestamp: str  # ISO 8601 from kit.clock
    workspace: str  # absolute path of the workspace
    session_key: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.type.split(":", 1)[0]

    @property
    def action(self) -> str:
        return self.type.split(":", 1)[1] if ":" in self.type else ""

    def __getitem__(self, key: str) -> Any:  # event["data"] works as well as event.data
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def to_json(self) -> dict[str, Any]:
        """Kit's fields, plus Claude Code's (hook_event_name, tool_name, tool_input, prompt …) on
        the events Claude Code also has, so one command script serves both."""
        out: dict[str, Any] = {}
        from kit.hooks.claude_map import Unmappable, payload

        try:
            out.update(payload(self.type, self.data, self.workspace, self.session_key))
        except Unmappable:
            pass  # a Kit hook reads Kit's fields; Claude's are left out for a call they cannot express
        out.update({"type": self.type, "timestamp": self.timestamp, "workspace": self.workspace,
                    "session_key": self.session_key, "data": self.data})
        return out


def event_matches(pattern: str, event_type: str) -> bool:
    """`tool:before` exact; `command` = every `command:*`; globs such as `tool:*` or `*`."""
    if pattern == event_type or pattern == "*":
        return True
    if ":" not in pattern and event_type.startswith(pattern + ":"):
        return True
    return any(ch in pattern for ch in "*?[") and fnmatch.fnmatchcase(event_type, pattern)


def unknown_event(name: str) -> str | None:
    """Why hooks on `name` would never run ("event 'memory:wrte' is not one Kit fires; did you
    mean 'memory:write'?"), or None for a name Kit fires: a known event, a family (`tool`), `*`,
    a glob matching a known event, or a custom slash command `command:<name>`."""
    import difflib

    if name == "*" or name in KNOWN_EVENTS:
        return None
    family = name.split(":", 1)[0]
    if ":" not in name:
        if name in KNOWN_FAMILIES:
            return None
    elif family == "command" and name != "command:":
        return None  # command:<name> fires for any slash command, and a glob over them
    elif any(ch in name for ch in "*?[") and any(fnmatch.fnmatchcase(e, name) for e in KNOWN_EVENTS):
        return None
    candidates = list(KNOWN_EVENTS) if ":" in name else sorted(KNOWN_FAMILIES)
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"event {name!r} is not one Kit fires{hint}"


def is_decision(event_type: str) -> bool:
    return event_type in DECISION_EVENTS
