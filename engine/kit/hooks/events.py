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
# Where a hook may stop Kit (a tool call, a message): a hook answer Kit cannot read blocks here
# (fails closed) instead of letting the call through. agent:bootstrap is not one: the prompt
# always builds, so a hook Kit cannot read there leaves the files as they were.
FAIL_CLOSED_EVENTS = frozenset({"tool:before", "message:received"})
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


def blocked_what(event_type: str) -> str:
    """What a fail-closed block stops, in the reason's words: the call, or the message."""
    return "the message is blocked" if event_type == "message:received" else "the call is blocked"


def looks_like_json(text: str) -> bool:
    """A hook's stdout is meant as JSON when it starts with `{` and ends with `}` (Claude Code's
    rule, and Kit's for command hooks); anything else is plain text."""
    text = text.strip()
    return text.startswith("{") and text.endswith("}")


def json_problem(exc: ValueError) -> str:
    """`stdout is not valid JSON: Expecting value: line 1 column 26 (char 25)`."""
    return f"stdout is not valid JSON: {exc}"


def documented_data(event_type: str, data: dict[str, Any], *, session_key: str | None = None,
                    ws: Any = None) -> dict[str, Any]:
    """`data` with every field docs/hooks.md documents for `event_type` that it lacks, at a
    default such as Kit would send it (`kit hooks fire`: a handler written against the documented
    payload must not crash on a missing key). What `data` has wins. `session_key` fills `key`;
    `ws` (a workspace) fills `version`, `documents` and `problems` from its snapshot."""
    from kit import clock

    family, _, action = event_type.partition(":")
    session = {"session_id": None, "key": session_key}
    day = clock.today().isoformat()
    snapshot = getattr(ws, "snapshot", None)
    version = getattr(snapshot, "version", None)
    window = getattr(getattr(getattr(ws, "config", None), "agent", None), "context_window", 0)
    phases = ["light", "rem", "deep"]
    name = data.get("name") if isinstance(data.get("name"), str) else data.get("tool")
    tool = {"name": name or "", "tool": name or "", "arguments": {}, "session_id": None}
    defaults: dict[str, dict[str, Any]] = {
        "session:start": {**session, "resumed": False, "source": "startup"},
        "session:end": {**session, "messages": [], "reason": "end"},
        "message:received": {"text": "", "session_id": None},
        "message:sent": {"text": "", "session_id": None, "stopped": None},
        "tool:before": tool,
        "tool:after": {**tool, "ok": True, "blocked": False, "result": "", "truncated": False},
        "agent:bootstrap": {"kind": "default", "files": []},
        "compaction:before": {"session_id": None, "tokens": 0, "context_window": window, "messages": 0,
                              "compacting": 0},
        "compaction:after": {"session_id": None, "mode": "none", "before_tokens": 0, "after_tokens": 0,
                             "dropped": 0, "placeholders": 0, "error": None},
        "memory:write": {"source": "cli", "path": "", "line": None, "end_line": None, "text": "",
                         "topic": None, "created": False, "duplicate": False},
        "workspace:loaded": {"by": "agent", "version": version,
                             "documents": sorted(getattr(snapshot, "documents", None) or ()),
                             "problems": [str(p) for p in getattr(snapshot, "issues", None) or ()]},
        "workspace:changed": {"version": version, "changed": [], "problems": []},
        "config:reloaded": {"version": version, "ok": True, "changed_keys": [], "problems": []},
        "dream:start": {"phases": phases, "day": day},
        "memory:promoted": {"key": "", "text": "", "score": 0.0, "path": "", "start_line": None,
                            "end_line": None, "day": day},
        "dream:end": {"phases": phases, "day": day, "ok": True, "error": None, "promoted": [], "retired": [],
                      "demoted": [], "changed": [], "light": None, "rem": None, "deep": None, "notes": [],
                      "git": None},
        "heartbeat": {"session_id": None, "skipped": False, "reply": "", "stopped": None,
                      "ok": str(data.get("reply") or "").strip() == "HEARTBEAT_OK", "tool_calls": []},
    }
    if family == "command" and action:
        base = {**session, "messages": [], "command": action, "args": ""}
    else:
        base = defaults.get(event_type, {})
    return {**base, **data}
