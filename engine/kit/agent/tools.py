"""The agent's tools (§9): JSON schemas, workspace-confined execution, hooks and result truncation.

Every call goes through `execute_tool`, which fires `tool:before` (a hook may block the call with a
reason or rewrite its arguments), runs the tool, cuts an oversized result and fires `tool:after`.
Tools never raise into the loop: a failure becomes an `ok=False` outcome whose text the model sees.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kit.errors import KitError, PathEscapeError

if TYPE_CHECKING:
    from kit.hooks.registry import HookOutcome

MIN_HEAD_CHARS = 2000  # a cut result always keeps at least this much of its beginning
WINDOW_SHARE = 0.3  # a single result may use at most 30% of the context window
PREVIEW_CHARS = 200
PROTECTED_DIRS = (".kit", ".git")  # machine state: the model may read, never write
# kit.yaml holds the exec policy and hooks.enabled: a model (or text injected into it) that could
# write it would grant itself `exec: {mode: allow}` on the next call
PROTECTED_FILES = ("kit.yaml",)

# An error or traceback near the end of an output is the part worth keeping.
ERROR_TAIL_RE = re.compile(
    r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b|\berror\b|\bfatal\b"
    r"|\bFAILED\b|\bpanic(?:ked)?\b|exit code [1-9]|exit_code: [1-9]",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------- hooks


def fire_hook(ws, event: str, data: dict[str, Any], *, session_key: str | None = None) -> HookOutcome:
    """Fire a hook event (the one place the agent talks to the hook registry)."""
    from kit.hooks.registry import registry_for  # on first use: loading tools stays cheap

    return registry_for(ws).fire(event, data, session_key=session_key)


# --------------------------------------------------------------------------- truncation


@dataclass(frozen=True)
class Truncation:
    text: str
    cut: bool
    original_chars: int
    kept_tail: bool = False


def result_limit(text: str, max_result_chars: int, context_window: int) -> int:
    """The char budget for one tool result: tools.max_result_chars and 30% of the context window.

    The window share is measured in estimated tokens (CJK counts one token per character), then
    turned back into characters for this text, so a CJK result gets proportionally fewer chars.
    """
    from kit.prompt.tokens import estimate_tokens

    limit = max_result_chars
    tokens = estimate_tokens(text)
    allowed_tokens = WINDOW_SHARE * context_window
    if tokens > allowed_tokens and tokens > 0:
        limit = min(limit, int(len(text) * allowed_tokens / tokens))
    return max(MIN_HEAD_CHARS, limit)


def truncate_result(text: str, limit: int) -> Truncation:
    """Cut `text` to about `limit` chars: keep the head, or head + tail when the tail holds an error."""
    total = len(text)
    if total <= limit:
        return Truncation(text, False, total)
    head_only = max(MIN_HEAD_CHARS, limit)
    tail_len = max(1000, limit - MIN_HEAD_CHARS)
    tail = text[-tail_len:]
    if ERROR_TAIL_RE.search(tail):
        cut = total - MIN_HEAD_CHARS - tail_len
        marker = (
            f"\n[… {cut} chars cut by Kit: the result had {total} chars, over the {limit}-char limit; "
            "the beginning and the end (which holds an error) are kept …]\n"
        )
        return Truncation(text[:MIN_HEAD_CHARS] + marker + tail, True, total, kept_tail=True)
    cut = total - head_only
    marker = (
        f"\n[… {cut} chars cut by Kit: the result had {total} chars, over the {limit}-char limit; "
        "ask for a narrower range (e.g. read_file with start/lines) to see the rest …]"
    )
    return Truncation(text[:head_only] + marker, True, total)


# --------------------------------------------------------------------------- schemas


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 1}

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "memory_search": _schema(
        "memory_search",
        "Search long-term memory (MEMORY.md and daily notes) by meaning and keywords.",
        {"query": {**_STR, "description": "what to look for"},
         "limit": {**_INT, "description": "maximum results (default from config)"}},
        ["query"],
    ),
    "memory_get": _schema(
        "memory_get",
        "Read lines of a memory file (MEMORY.md or memory/...), e.g. around a search hit.",
        {"path": _STR, "start": {**_INT, "description": "first line, 1-based"},
         "lines": {**_INT, "description": "how many lines (default: to the end)"}},
        ["path"],
    ),
    "memory_write": _schema(
        "memory_write",
        "Append one fact to today's daily note (memory/YYYY-MM-DD.md), optionally under a topic.",
        {"text": _STR, "topic": _STR},
        ["text"],
    ),
    "skills_list": _schema("skills_list", "List available skills: name, description, readiness.", {}, []),
    "skill_view": _schema(
        "skill_view",
        "Read a skill's SKILL.md (instructions and linked files), or one file inside the skill.",
        {"name": _STR, "path": {**_STR, "description": "a file inside the skill folder"}},
        ["name"],
    ),
    "read_file": _schema(
        "read_file",
        "Read a text file in the workspace (paths relative to the workspace).",
        {"path": _STR, "start": {**_INT, "description": "first line, 1-based"},
         "lines": {**_INT, "description": "how many lines"}},
        ["path"],
    ),
    "write_file": _schema(
        "write_file",
        "Create or overwrite a text file in the workspace.",
        {"path": _STR, "content": _STR},
        ["path", "content"],
    ),
    "edit_file": _schema(
        "edit_file",
        "Replace exact text in a workspace file. old_text must occur exactly once unless replace_all.",
        {"path": _STR, "old_text": _STR, "new_text": _STR, "replace_all": {"type": "boolean"}},
        ["path", "old_text", "new_text"],
    ),
    "exec": _schema(
        "exec",
        "Run a shell command in the workspace folder, subject to the exec policy in kit.yaml.",
        {"command": _STR, "timeout_s": {"type": "number", "minimum": 1}},
        ["command"],
    ),
}

TOOL_NAMES = tuple(TOOL_SCHEMAS)


def tool_schemas(names: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    return [TOOL_SCHEMAS[n] for n in (names or TOOL_NAMES)]


# --------------------------------------------------------------------------- context and results


Approver = Callable[[str, str], bool]  # (command, reason) -> approved?


@dataclass
class ToolContext:
    ws: Any
    session_id: str | None = None
    session_key: str | None = None
    interactive: bool = False
    approve: Approver | None = None  # asked for `ask`-mode exec in interactive runs


@dataclass(frozen=True)
class ToolOutcome:
    name: str
    arguments: dict[str, Any]
    ok: bool
    blocked: bool
    result: str  # what the model sees (after truncation)
    truncated: bool = False
    call_id: str = ""

    @property
    def preview(self) -> str:
        text = self.result.strip()
        return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "ok": self.ok,
            "blocked": self.blocked,
            "result_preview": self.preview,
        }


class ToolError(KitError):
    """A tool could not do what was asked; the message goes back to the model."""


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, default=_default)


def _default(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "__fspath__"):
        return str(value)
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def _require(args: dict[str, Any], key: str) -> Any:
    if key not in args or args[key] is None:
        raise ToolError(f"missing required argument `{key}`")
    return args[key]


def _int_arg(args: dict[str, Any], key: str, default: int | None) -> int | None:
    value = args.get(key, default)
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ToolError(f"`{key}` must be an integer, got {value!r}") from None
    if number < 1:
        raise ToolError(f"`{key}` must be at least 1")
    return number


# --------------------------------------------------------------------------- memory tools


def _memory(ws):
    from kit.memory.service import memory_for

    return memory_for(ws)


def tool_memory_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    query = str(_require(args, "query"))
    limit = _int_arg(args, "limit", None)
    # the agent's searches are recalls: dreaming learns from them (source `tool`)
    result = _memory(ctx.ws).search(query, limit=limit, record=True, source="tool")
    return _json(result.to_json() if hasattr(result, "to_json") else result)


def tool_memory_get(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = str(_require(args, "path"))
    start = _int_arg(args, "start", 1) or 1
    lines = _int_arg(args, "lines", None)
    return _memory(ctx.ws).get(path, start=start, lines=lines)


def tool_memory_write(ctx: ToolContext, args: dict[str, Any]) -> str:
    text = str(_require(args, "text"))
    topic = args.get("topic")
    result = _memory(ctx.ws).write(text, topic=str(topic) if topic else None)
    data = result.to_json()
    if not data.get("duplicate"):  # nothing was written: no memory:write event (as in the CLI)
        fire_hook(ctx.ws, "memory:write", {"source": "tool", "session_id": ctx.session_id, **data},
                  session_key=ctx.session_key)
    return _json(data)


# --------------------------------------------------------------------------- skills tools


def skills_list(ws) -> Any:
    """Progressive disclosure level 1 (kit.skills owns the logic; this adapts its call shape)."""
    from kit.skills.disclosure import skills_list as list_skills

    return list_skills(ws)


def skill_view(ws, name: str, path: str | None = None) -> Any:
    from kit.skills.disclosure import skill_view as view_skill

    return view_skill(ws, name, path)


def tool_skills_list(ctx: ToolContext, args: dict[str, Any]) -> str:
    return _json(skills_list(ctx.ws))


def tool_skill_view(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Metadata as JSON, then the Markdown itself unescaped: models follow prose better than
    a JSON string full of \\n."""
    name = str(_require(args, "name"))
    path = args.get("path")
    view = skill_view(ctx.ws, name, str(path) if path else None)
    data = view.to_json() if hasattr(view, "to_json") else dict(view)
    if data.get("ok") is False:
        raise ToolError(_json(data))
    key = "body" if "body" in data else "content"
    text = data.pop(key, None)
    if not isinstance(text, str):
        return _json(data)
    label = "SKILL.md" if key == "body" else str(data.get("path") or "file")
    return f"{_json(data)}\n--- {label} ---\n{text}"


# --------------------------------------------------------------------------- file tools


def _confined(ctx: ToolContext, rel: str, *, for_write: bool = False):
    rel = str(rel).strip()
    path = ctx.ws.path(rel)  # refuses absolute paths, `..` and symlinks leading out
    if for_write:
        first = path.relative_to(ctx.ws.root).parts[:1]
        if first and first[0] in PROTECTED_DIRS:
            raise PathEscapeError(f"{rel}: {first[0]}/ holds machine state and is not writable by tools")
        if _rel(ctx, path) in PROTECTED_FILES:
            raise PathEscapeError(f"{rel}: kit.yaml holds the agent's own permissions (exec policy, hooks) "
                                  "and is not writable by tools; ask the user to edit it")
    return path


def _rel(ctx: ToolContext, path) -> str:
    return path.relative_to(ctx.ws.root).as_posix()


def tool_read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    from kit.fsutil import read_text

    path = _confined(ctx, _require(args, "path"))
    text = read_text(path, display=_rel(ctx, path))
    start = _int_arg(args, "start", None)
    lines = _int_arg(args, "lines", None)
    if start is None and lines is None:
        return text
    all_lines = text.splitlines(keepends=True)
    first = (start or 1) - 1
    if first >= len(all_lines) and all_lines:
        raise ToolError(f"{_rel(ctx, path)} has only {len(all_lines)} lines")
    chosen = all_lines[first : first + lines] if lines else all_lines[first:]
    return "".join(chosen)


def tool_write_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = _confined(ctx, _require(args, "path"), for_write=True)
    content = str(_require(args, "content"))
    if path.is_dir():
        raise ToolError(f"{_rel(ctx, path)} is a directory")
    existed = path.exists()
    rel = _rel(ctx, path)
    ctx.ws.write_text(rel, content)  # atomic; the watcher recognises the echo by hash
    return f"{'overwrote' if existed else 'created'} {rel} ({len(content)} chars)"


def tool_edit_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    from kit.fsutil import read_text

    path = _confined(ctx, _require(args, "path"), for_write=True)
    rel = _rel(ctx, path)
    old = str(_require(args, "old_text"))
    new = str(_require(args, "new_text"))
    if not old:
        raise ToolError("old_text must not be empty")
    text = read_text(path, display=rel)
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_text was not found in {rel}; read the file and copy the text exactly")
    if count > 1 and not args.get("replace_all"):
        raise ToolError(f"old_text occurs {count} times in {rel}; add context or set replace_all")
    updated = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
    ctx.ws.write_text(rel, updated)
    return f"edited {rel}: {count if args.get('replace_all') else 1} replacement(s)"


# --------------------------------------------------------------------------- exec


def tool_exec(ctx: ToolContext, args: dict[str, Any]) -> str:
    from kit.agent import exec_policy

    command = str(_require(args, "command")).strip()
    if not command:
        raise ToolError("empty command")
    config = ctx.ws.config
    decision = exec_policy.check(command, config, interactive=ctx.interactive)
    if not decision.allowed:
        if decision.needs_approval and ctx.interactive and ctx.approve is not None:
            if not ctx.approve(command, decision.reason):
                raise _Blocked("exec refused: the user declined to run this command")
        else:
            raise _Blocked(f"exec refused: {decision.reason}")
    timeout = float(args.get("timeout_s") or config.get("tools.exec.timeout_s", 60.0))
    timeout = min(timeout, float(config.get("tools.exec.timeout_s", 60.0)))
    result = exec_policy.run(command, cwd=ctx.ws.root, timeout_s=timeout)
    parts = [f"exit_code: {result.exit_code}" + (" (timed out)" if result.timed_out else "")]
    if result.stdout:
        parts.append("--- stdout ---\n" + result.stdout.rstrip("\n"))
    if result.stderr:
        # stderr last: when the output is cut, the error at the end is what survives
        parts.append("--- stderr ---\n" + result.stderr.rstrip("\n"))
    return "\n".join(parts)


class _Blocked(KitError):
    """A policy (not a hook) refused the call."""


TOOL_FUNCTIONS: dict[str, Callable[[ToolContext, dict[str, Any]], str]] = {
    "memory_search": tool_memory_search,
    "memory_get": tool_memory_get,
    "memory_write": tool_memory_write,
    "skills_list": tool_skills_list,
    "skill_view": tool_skill_view,
    "read_file": tool_read_file,
    "write_file": tool_write_file,
    "edit_file": tool_edit_file,
    "exec": tool_exec,
}


# --------------------------------------------------------------------------- the pipeline


def execute_tool(ctx: ToolContext, name: str, arguments: dict[str, Any], *, call_id: str = "") -> ToolOutcome:
    """Run one tool call with hooks and truncation; never raises for tool-level failures."""
    ws = ctx.ws
    if not isinstance(arguments, dict):
        outcome = ToolOutcome(name, {}, False, False,
                              f"error: arguments for `{name}` must be a JSON object, got {type(arguments).__name__}",
                              call_id=call_id)
        _after(ctx, outcome)
        return outcome
    arguments = dict(arguments)
    before = fire_hook(
        ws,
        "tool:before",
        {"tool": name, "name": name, "arguments": arguments, "session_id": ctx.session_id},
        session_key=ctx.session_key,
    )
    if before.blocked:
        outcome = ToolOutcome(name, arguments, False, True,
                              f"blocked by a hook: {before.reason or 'no reason given'}", call_id=call_id)
        _after(ctx, outcome)
        return outcome
    rewritten = before.data.get("arguments")
    if isinstance(rewritten, dict):
        arguments = dict(rewritten)

    func = TOOL_FUNCTIONS.get(name)
    blocked = False
    if func is None:
        ok, text = False, f"error: unknown tool `{name}`; available: {', '.join(TOOL_NAMES)}"
    else:
        try:
            text, ok = func(ctx, arguments), True
        except _Blocked as exc:
            ok, blocked, text = False, True, str(exc)
        except KitError as exc:
            ok, text = False, f"error: {exc}"
        except ModuleNotFoundError as exc:
            ok, text = False, f"error: tool `{name}` is unavailable in this build ({exc.name} missing)"
        except (OSError, ValueError, TypeError) as exc:
            ok, text = False, f"error: {type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a broken tool must not end the turn
            ok, text = False, f"error: internal error in `{name}`: {type(exc).__name__}: {exc}"

    cfg = ws.config
    limit = result_limit(text, int(cfg.get("tools.max_result_chars", 16000)),
                         int(cfg.get("agent.context_window", 32000)))
    cut = truncate_result(text, limit)
    outcome = ToolOutcome(name, arguments, ok, blocked, cut.text, cut.cut, call_id)
    _after(ctx, outcome)
    return outcome


def _after(ctx: ToolContext, outcome: ToolOutcome) -> None:
    fire_hook(
        ctx.ws,
        "tool:after",
        {
            "tool": outcome.name,
            "name": outcome.name,
            "arguments": outcome.arguments,
            "ok": outcome.ok,
            "blocked": outcome.blocked,
            "result": outcome.result,
            "truncated": outcome.truncated,
            "session_id": ctx.session_id,
        },
        session_key=ctx.session_key,
    )
