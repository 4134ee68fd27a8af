"""Claude Code's names for Kit's events and tools, and the stdin payload Claude Code hooks read.

Pure functions over plain data (no workspace, no processes): `kit.hooks.claude` runs the hooks of
`.claude/settings*.json` with them, and every Kit command hook gets the same fields on its event
JSON (`HookEvent.to_json`), so one script serves Claude Code and Kit.

    claude_tool("exec", {"command": "ls"}, "/ws")  ->  ("Bash", {"command": "ls"})
    kit_arguments("Bash", {"command": "ls -a"}, "/ws")  ->  {"command": "ls -a"}
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Any

# Claude Code event -> the Kit event it fires on. PostToolUse and PostToolUseFailure share
# tool:after (ok or not); the others Claude Code fires (Notification, SubagentStop …) have no
# Kit counterpart and are listed as such, never run.
KIT_EVENT = {
    "PreToolUse": "tool:before",
    "PostToolUse": "tool:after",
    "PostToolUseFailure": "tool:after",
    "UserPromptSubmit": "message:received",
    "SessionStart": "session:start",
    "SessionEnd": "session:end",
    "Stop": "message:sent",
    "PreCompact": "compaction:before",
    "PostCompact": "compaction:after",
}
# Every event name of the current Claude Code hooks reference (an unknown name is likely a typo).
CLAUDE_EVENTS = frozenset({
    "SessionStart", "Setup", "UserPromptSubmit", "UserPromptExpansion", "PreToolUse", "PermissionRequest",
    "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "MessageDisplay",
    "SubagentStart", "SubagentStop", "TaskCreated", "TaskCompleted", "Stop", "StopFailure", "TeammateIdle",
    "InstructionsLoaded", "ConfigChange", "CwdChanged", "DirectoryAdded", "FileChanged", "WorktreeCreate",
    "WorktreeRemove", "PreCompact", "PostCompact", "PreModelSwitch", "PostModelSwitch", "Elicitation",
    "ElicitationResult", "SessionEnd",
})
# Events whose matcher Claude Code ignores (the hook always fires).
NO_MATCHER = frozenset({"UserPromptSubmit", "Stop"})
# Kit tool -> Claude Code built-in tool. Kit's other tools are what Claude Code sees when Kit is
# served over MCP as `kit` (mcp__kit__memory_search …); an MCP tool `<server>__<tool>` of Kit's
# MCP client is `mcp__<server>__<tool>`.
CLAUDE_TOOL = {"exec": "Bash", "read_file": "Read", "write_file": "Write", "edit_file": "Edit"}
KIT_TOOL = {v: k for k, v in CLAUDE_TOOL.items()}
KIT_SERVER = "kit"


class Unmappable(ValueError):
    """A payload (or a hook's rewrite of one) Kit cannot express in the other's terms."""


def claude_tool_name(name: str) -> str:
    if name in CLAUDE_TOOL:
        return CLAUDE_TOOL[name]
    if "__" in name:
        return f"mcp__{name}"
    return f"mcp__{KIT_SERVER}__{name}"


def _str(args: dict[str, Any], key: str, tool: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise Unmappable(f"{tool} call has no string {key!r} argument")
    return value


def _abs(root: str, path: str) -> str:
    # Claude Code hands hooks absolute paths (~ and relative paths expanded first)
    return os.path.normpath(os.path.join(root, os.path.expanduser(path)))


def claude_tool(name: str, args: Any, root: str) -> tuple[str, dict[str, Any]]:
    """(tool_name, tool_input) as Claude Code would send them for Kit's call `name(args)`."""
    tool_name = claude_tool_name(name)
    if not isinstance(args, dict):
        raise Unmappable(f"{name} arguments are {type(args).__name__}, not an object")
    if name == "exec":
        out: dict[str, Any] = {"command": _str(args, "command", name)}
        timeout = args.get("timeout_s")
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise Unmappable(f"exec timeout_s is {timeout!r}, not a number")
            out["timeout"] = int(timeout * 1000)  # Claude's Bash timeout is in milliseconds
        return tool_name, out
    if name == "read_file":
        out = {"file_path": _abs(root, _str(args, "path", name))}
        for kit_key, claude_key in (("start", "offset"), ("lines", "limit")):
            if args.get(kit_key) is not None:
                out[claude_key] = args[kit_key]
        return tool_name, out
    if name == "write_file":
        return tool_name, {"file_path": _abs(root, _str(args, "path", name)), "content": _str(args, "content", name)}
    if name == "edit_file":
        return tool_name, {"file_path": _abs(root, _str(args, "path", name)),
                           "old_string": _str(args, "old_text", name), "new_string": _str(args, "new_text", name),
                           "replace_all": bool(args.get("replace_all", False))}
    return tool_name, dict(args)


def _rel(root: str, file_path: Any, tool: str) -> str:
    if not isinstance(file_path, str) or not file_path:
        raise Unmappable(f"{tool} input has no string 'file_path'")
    full = _abs(root, file_path)
    base = os.path.normpath(root)
    if full != base and not full.startswith(base + os.sep):
        raise Unmappable(f"{tool} file_path {file_path!r} is outside the workspace")
    return os.path.relpath(full, base)


def kit_arguments(tool_name: str, tool_input: Any, root: str) -> dict[str, Any]:
    """Kit's arguments for a Claude-style `tool_input` (a hook's `updatedInput`)."""
    if not isinstance(tool_input, dict):
        raise Unmappable(f"updatedInput is {type(tool_input).__name__}, not an object")
    kit = KIT_TOOL.get(tool_name)
    if kit == "exec":
        out: dict[str, Any] = {"command": _str(tool_input, "command", tool_name)}
        if tool_input.get("timeout") is not None:
            timeout = tool_input["timeout"]
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise Unmappable(f"Bash timeout is {timeout!r}, not a number of milliseconds")
            out["timeout_s"] = max(1, round(timeout / 1000))
        return out
    if kit == "read_file":
        out = {"path": _rel(root, tool_input.get("file_path"), tool_name)}
        for claude_key, kit_key in (("offset", "start"), ("limit", "lines")):
            if tool_input.get(claude_key) is not None:
                out[kit_key] = tool_input[claude_key]
        return out
    if kit == "write_file":
        return {"path": _rel(root, tool_input.get("file_path"), tool_name),
                "content": _str(tool_input, "content", tool_name)}
    if kit == "edit_file":
        out = {"path": _rel(root, tool_input.get("file_path"), tool_name),
               "old_text": _str(tool_input, "old_string", tool_name),
               "new_text": _str(tool_input, "new_string", tool_name)}
        if tool_input.get("replace_all") is not None:
            out["replace_all"] = bool(tool_input["replace_all"])
        return out
    return dict(tool_input)


def claude_event(kit_event: str, data: dict[str, Any]) -> str | None:
    """The Claude Code event a Kit event is (tool:after splits on `ok`), or None."""
    if kit_event == "tool:after":
        return "PostToolUse" if data.get("ok", True) else "PostToolUseFailure"
    for claude, kit in KIT_EVENT.items():
        if kit == kit_event:
            return claude
    return None


def transcript_path(root: str, session_id: Any) -> str | None:
    # Kit's JSONL transcript; its format is Kit's, not Claude Code's (docs/hooks.md says so)
    return os.path.join(root, ".kit", "sessions", f"{session_id}.jsonl") if session_id else None


def session_end_reason(reason: Any) -> str:
    return {"new": "clear", "reset": "clear", "exit": "prompt_input_exit"}.get(str(reason), "other")


def payload(kit_event: str, data: dict[str, Any], root: str, session_key: str | None = None) -> dict[str, Any]:
    """The fields a Claude Code hook reads on stdin for this Kit event. Raises Unmappable when a
    tool call cannot be put in Claude's terms (a missing or mistyped argument)."""
    event = claude_event(kit_event, data)
    if event is None:
        return {}
    session_id = data.get("session_id") or session_key
    out: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": transcript_path(root, session_id),
        "cwd": root,
        "permission_mode": "default",
        "hook_event_name": event,
    }
    if kit_event in ("tool:before", "tool:after"):
        name = str(data.get("tool") or data.get("name") or "")
        out["tool_name"], out["tool_input"] = claude_tool(name, data.get("arguments"), root)
        if data.get("call_id"):
            out["tool_use_id"] = data["call_id"]
        if kit_event == "tool:after":
            result = str(data.get("result") or "")
            if event == "PostToolUseFailure":
                out["error"] = result
                out["is_interrupt"] = False
            elif out["tool_name"] == "Bash":
                out["tool_response"] = {"stdout": result, "stderr": "", "interrupted": False, "isImage": False}
            else:
                out["tool_response"] = {"result": result}
    elif kit_event == "message:received":
        out["prompt"] = str(data.get("text") or "")
    elif kit_event == "session:start":
        out["source"] = str(data.get("source") or ("resume" if data.get("resumed") else "startup"))
    elif kit_event == "session:end":
        out["reason"] = session_end_reason(data.get("reason"))
    elif kit_event == "message:sent":
        out["stop_hook_active"] = False
        out["last_assistant_message"] = str(data.get("text") or "")
    elif kit_event in ("compaction:before", "compaction:after"):
        out["trigger"] = "auto"  # Kit compacts when the context fills up
        if kit_event == "compaction:before":
            out["custom_instructions"] = None
        else:
            out["compact_summary"] = str(data.get("summary") or "")
    return out


def matcher_value(event: str, fields: dict[str, Any]) -> str | None:
    """What a matcher is tested against for `event`; None: the matcher is ignored."""
    if event in NO_MATCHER:
        return None
    for key in ("tool_name", "source", "reason", "trigger"):
        if key in fields:
            return str(fields[key])
    return None


_EXACT = re.compile(r"^[A-Za-z0-9_\- ,|]*$")


def check_matcher(matcher: Any) -> str | None:
    """Why `matcher` cannot be used (not a string, a broken regular expression), or None."""
    if matcher is None:
        return None
    if not isinstance(matcher, str):
        return f"matcher must be a string, not {type(matcher).__name__}"
    if _EXACT.match(matcher):
        return None
    try:
        re.compile(matcher)
    except re.error as exc:
        return f"matcher {matcher!r} is not a valid regular expression: {exc}"
    return None


def matches(matcher: str | None, value: str | None) -> bool:
    """Claude Code's rule: empty, `*` or absent match all; only letters, digits, `_`, `-`, spaces,
    `,` and `|` is an exact name or a list of them; anything else is an unanchored regex."""
    if value is None or matcher in (None, "", "*"):
        return True
    if _EXACT.match(matcher):
        return value in {p.strip() for p in re.split(r"[|,]", matcher) if p.strip()}
    return re.search(matcher, value) is not None


# ------------------------------------------------------------------ permission rules
# `Bash(git add *)`, `Read`, `mcp__srv__tool`: what `allowed-tools` lists and a hook's `if` filters on
_RULE_RE = re.compile(r"[^\s,()]+(?:\([^)]*\))?")
EXTRA_CLAUDE = {"MultiEdit": "edit_file"}


@dataclass(frozen=True)
class Grant:
    """One permission rule in Kit's terms: a tool (a Kit name or a glob over them) and an
    optional glob over the command (exec) or the path (file tools)."""

    tool: str
    pattern: str | None = None
    text: str = ""

    def allows(self, name: str, args: Any) -> bool:
        if not fnmatch.fnmatchcase(name, self.tool):
            return False
        if self.pattern is None or self.pattern in ("", "*"):
            return True
        if not isinstance(args, dict):
            return False
        subject = args.get("command") if name == "exec" else args.get("path")
        if not isinstance(subject, str):
            return False
        return fnmatch.fnmatchcase(subject.strip().removeprefix("./"), self.pattern.removeprefix("./"))


def kit_tool_name(name: str) -> str:
    """Kit's name for a tool named the Claude Code way (Bash -> exec, mcp__kit__x -> x, mcp__s__t -> s__t)."""
    if name in KIT_TOOL:
        return KIT_TOOL[name]
    if name in EXTRA_CLAUDE:
        return EXTRA_CLAUDE[name]
    if name.startswith(f"mcp__{KIT_SERVER}__"):
        return name[len(f"mcp__{KIT_SERVER}__"):]
    if name.startswith("mcp__"):
        return name[len("mcp__"):]
    return name


def parse_rules(value: Any) -> tuple[Grant, ...]:
    """Permission rules from a string (space- or comma-separated) or a list of strings."""
    items = [value] if isinstance(value, str) else [v for v in value or () if isinstance(v, str)]
    out = []
    for item in items:
        for entry in _RULE_RE.findall(item):
            name, _, rest = entry.partition("(")
            pattern = rest[:-1].strip() if rest.endswith(")") else None
            out.append(Grant(kit_tool_name(name), pattern, entry))
    return tuple(out)
