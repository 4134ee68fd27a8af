"""Kit's built-in tools (§9): memory, skills, workspace files and exec, each declared once.

Each `@tool(...)` above a function is the whole truth about that tool: the JSON schema the model
receives, the line in the system prompt's tools section, and the function that runs. Subsystems
are imported when a tool runs, so listing the tools (for the prompt) stays cheap.
"""

from __future__ import annotations

import json
from typing import Any

from kit.core import WorkspaceCore
from kit.errors import PathEscapeError
from kit.paths import CONFIG_FILE
from kit.tools.registry import BOOL, INT, STR, Blocked, ToolContext, ToolError, ToolRegistry, tool
from kit.wording import plural

PROTECTED_DIRS = (".kit", ".git")  # machine state: the model may read, never write
# kit.yaml holds the exec policy and hooks.enabled: a model (or text injected into it) that could
# write it would grant itself `exec: {mode: allow}` on the next call
PROTECTED_FILES = (CONFIG_FILE,)


# --------------------------------------------------------------------------- helpers


def to_json_text(data: Any) -> str:
    """A tool result as the model reads it: indented JSON, non-ASCII kept."""
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


def _query(args: dict[str, Any]) -> str:
    """The `query` argument, which says what to look for (blank is a mistake, not a search)."""
    query = str(_require(args, "query")).strip()
    if not query:
        raise ToolError("`query` is empty: say what to look for")
    return query


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


def _memory(ws: WorkspaceCore):
    from kit.memory.service import memory_for

    return memory_for(ws)


# --------------------------------------------------------------------------- memory tools


@tool("memory_search",
      summary="search MEMORY.md and the daily notes in memory/ (hybrid: meaning + keywords)",
      description="Search long-term memory (MEMORY.md and daily notes) by meaning and keywords.",
      params={"query": {**STR, "description": "what to look for"},
              "limit": {**INT, "description": "maximum results (default from config)"}},
      required=("query",))
def memory_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    query = _query(args)
    limit = _int_arg(args, "limit", None)
    # the agent's searches are recalls: dreaming learns from them (source `tool`, or `mcp` when a
    # client of `kit mcp serve` asked); screened: a snippet the threat scan flags is withheld
    # (listed under "withheld"), never shown
    result = _memory(ctx.ws).search(query, limit=limit, record=True, source=ctx.recall_source, screen=True)
    return to_json_text(result.to_json() if hasattr(result, "to_json") else result)


@tool("memory_get",
      summary="read lines of a memory file: memory_get(path, start, lines)",
      description="Read lines of a memory file (MEMORY.md or memory/...), e.g. around a search hit.",
      params={"path": STR, "start": {**INT, "description": "first line, 1-based"},
              "lines": {**INT, "description": "how many lines (default: to the end)"}},
      required=("path",))
def memory_get(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = str(_require(args, "path"))
    start = _int_arg(args, "start", 1) or 1
    lines = _int_arg(args, "lines", None)
    # reading a hit in full is a use of it: dreaming gives that recall extra credit; a line the
    # threat scan flags is withheld (and not recorded)
    return _memory(ctx.ws).get(path, start=start, lines=lines, record=True, screen=True)


@tool("memory_write",
      summary="append a fact to today's daily note: memory_write(text, topic?)",
      description="Append one fact to today's daily note (memory/YYYY-MM-DD.md), optionally under a topic.",
      params={"text": STR, "topic": STR}, required=("text",), serial=True)
def memory_write(ctx: ToolContext, args: dict[str, Any]) -> str:
    from kit.hooks.registry import fire_hook

    text = str(_require(args, "text"))
    topic = args.get("topic")
    result = _memory(ctx.ws).write(text, topic=str(topic) if topic else None)
    data = result.to_json()
    if not data.get("duplicate"):  # nothing was written: no memory:write event (as in the CLI)
        fire_hook(ctx.ws, "memory:write", {"source": ctx.recall_source, "session_id": ctx.session_id, **data},
                  session_key=ctx.session_key)
    return to_json_text(data)


SESSION_SEARCH_LIMIT = 10


@tool("session_search",
      summary="search your past conversations with the user (not this one): what was said or decided",
      description="Full-text search over past conversations with this Kit agent (keywords; CJK too; the "
                  "current conversation is left out): finds what the user said or decided earlier, e.g. "
                  "'what did we decide about the deploy last week'. Returns each hit's session, when it "
                  "started, the message number, role and a snippet.",
      params={"query": {**STR, "description": "words to look for"},
              "limit": {**INT, "description": f"maximum results (default {SESSION_SEARCH_LIMIT})"}},
      required=("query",))
def session_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    """The agent's tool and `kit mcp serve`'s: the caller hands in the session store (the tools
    layer may not import the agent) and, for the agent, its own session to leave out."""
    query = _query(args)
    limit = min(_int_arg(args, "limit", None) or SESSION_SEARCH_LIMIT, 50)
    if ctx.sessions is None:
        raise ToolError("session_search needs the workspace's session store (an agent run or kit mcp serve)")
    hits = ctx.sessions.search(query, limit=limit, exclude=ctx.session_id)
    return to_json_text({"query": query, "results": [h.to_json() for h in hits]})


# --------------------------------------------------------------------------- skills tools


@tool("skills_list",
      summary="list the skills you can use: name, description, readiness",
      description="List available skills: name, description, readiness.")
def skills_list(ctx: ToolContext, args: dict[str, Any]) -> str:
    from kit.skills.disclosure import skills_list as list_skills

    return to_json_text(list_skills(ctx.ws))


@tool("skill_view",
      summary="read a skill's instructions, or one of its files: skill_view(name, path?)",
      description="Read a skill's SKILL.md (instructions and linked files), or one file inside the skill.",
      params={"name": STR, "path": {**STR, "description": "a file inside the skill folder"},
              "arguments": {**STR, "description": "the skill's arguments, for its $ARGUMENTS"}},
      required=("name",))
def skill_view(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Metadata as JSON, then the Markdown itself unescaped: models follow prose better than
    a JSON string full of \\n."""
    from kit.skills.disclosure import skill_view as view_skill

    name = str(_require(args, "name"))
    path = args.get("path")
    arguments = args.get("arguments")
    view = view_skill(ctx.ws, name, str(path) if path else None,
                      arguments=str(arguments) if arguments is not None else None)
    data = view.to_json() if hasattr(view, "to_json") else dict(view)
    if data.get("ok") is False:
        raise ToolError(to_json_text(data))
    if ctx.skills is not None and not path:  # its instructions are in the conversation: it is active
        ctx.skills.activate(view.name, view.frontmatter.get("allowed-tools"))
    key = "body" if "body" in data else "content"
    text = data.pop(key, None)
    if not isinstance(text, str):
        return to_json_text(data)
    label = "SKILL.md" if key == "body" else str(data.get("path") or "file")
    return f"{to_json_text(data)}\n--- {label} ---\n{text}"


# --------------------------------------------------------------------------- file tools


def _confined(ctx: ToolContext, rel: str, *, for_write: bool = False):
    from kit.fsutil import check_path_text, safe_join

    rel = str(rel)
    check_path_text(rel)  # a NUL byte or an absurd length: one clear line, not the OS's ValueError
    rel = rel.strip()
    if not for_write:
        path = ctx.ws.path(rel)  # refuses absolute paths, `..` and symlinks leading out
        _readable(ctx, rel, path)
        return path
    # also refuses .kit/ and .git/, named directly, through a symlink or by a look-alike name
    path = safe_join(ctx.ws.root, rel, protected=PROTECTED_DIRS)
    if _rel(ctx, path) in PROTECTED_FILES or _rel(ctx, path.resolve()) in PROTECTED_FILES:
        raise PathEscapeError(f"{rel}: kit.yaml holds the agent's own permissions (exec policy, hooks) "
                              "and is not writable by tools; ask the user to edit it")
    return path


def _readable(ctx: ToolContext, rel: str, path) -> None:
    """Under .kit/ (named, look-alike or through a symlink) read_file reads only the whole tool
    outputs a cut saved there; the rest (state.db, the index, locks, logs) is Kit's own."""
    from kit.fsutil import leads_into
    from kit.tools.saved_output import is_saved_output

    if not leads_into(ctx.ws.root, rel, ".kit"):
        return
    resolved = path.resolve()
    if resolved.is_relative_to(ctx.ws.root.resolve()) and is_saved_output(
            resolved.relative_to(ctx.ws.root.resolve()).as_posix()):
        return
    raise PathEscapeError(f"{rel}: .kit/ holds Kit's machine state; read_file reads only the saved tool "
                          "outputs in .kit/tool-output/")


def _rel(ctx: ToolContext, path) -> str:
    return path.relative_to(ctx.ws.root).as_posix()


def _remember(ctx: ToolContext, rel: str, text: str, digest: str | None = None) -> None:
    """What a later write_file is based on: the text and the digest of the file's bytes (`digest`
    when they are not the text's own: a BOM the write kept)."""
    from kit.filewrite import FileState
    from kit.fsutil import sha1_hex

    ctx.seen[rel] = FileState(text, digest or sha1_hex(text))


def _is_memory_door(ctx: ToolContext, path) -> bool:
    """Files whose text reaches every prompt or the memory index: the bootstrap files (MEMORY.md,
    USER.md, SOUL.md …), memory/**/*.md and memory.extra_paths — also when named through a symlink."""
    from kit.kinds import BOOTSTRAP_FILES
    from kit.memory.index import is_indexable

    extra = list(ctx.ws.config.memory.extra_paths)
    names = {_rel(ctx, path)}
    resolved = path.resolve()
    if resolved.is_relative_to(ctx.ws.root):
        names.add(_rel(ctx, resolved))
    return any(name in BOOTSTRAP_FILES or is_indexable(name, extra)
               or (name.startswith("memory/") and name.endswith(".md")) for name in names)


def _screen_write(ctx: ToolContext, path, rel: str, before: str | None, after: str) -> None:
    """The threat scan at the file tools' door: what a write adds to a memory or bootstrap file
    (the file's existing text is its author's) must pass it, or nothing is written."""
    if not _is_memory_door(ctx, path):
        return
    from kit.threats import scan_added

    threat = scan_added(before, after)
    if threat is not None:
        raise ToolError(f"{rel}: not written, refused by the threat scan: {threat.reason}. This file reaches "
                        "the agent's prompt; write facts, not instructions to the model")


@tool("read_file",
      summary="read a file in the workspace",
      description="Read a text file in the workspace (paths relative to the workspace).",
      params={"path": STR, "start": {**INT, "description": "first line, 1-based"},
              "lines": {**INT, "description": "how many lines"}},
      required=("path",), serial="path")  # after a write to the same file in the same reply
def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    from kit.filewrite import file_state

    path = _confined(ctx, _require(args, "path"))
    rel = _rel(ctx, path)
    state = file_state(path, display=rel, settle=False)
    if state.text is None:
        raise ToolError(f"{rel}: file not found")
    ctx.seen[rel] = state  # what a later write_file is based on
    text = state.text
    start = _int_arg(args, "start", None)
    lines = _int_arg(args, "lines", None)
    if start is None and lines is None:
        return text
    all_lines = text.splitlines(keepends=True)
    first = (start or 1) - 1
    if first >= len(all_lines) and all_lines:
        raise ToolError(f"{rel} has only {plural(len(all_lines), 'line')}")
    chosen = all_lines[first : first + lines] if lines else all_lines[first:]
    return "".join(chosen)


@tool("write_file",
      summary="create or replace a file in the workspace",
      description="Create or overwrite a text file in the workspace.",
      params={"path": STR, "content": STR}, required=("path", "content"), serial="path")
def write_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    from kit.errors import ConflictError
    from kit.filewrite import file_state

    path = _confined(ctx, _require(args, "path"), for_write=True)
    content = str(_require(args, "content"))
    if path.is_dir():
        raise ToolError(f"{_rel(ctx, path)} is a directory")
    rel = _rel(ctx, path)
    # compare-and-swap against the version the model based its text on: the one it last read (or
    # wrote) in this conversation, else the file as it is now
    now = file_state(path, display=rel, settle=False)
    seen = ctx.seen.get(rel)
    if seen is not None and seen.digest != now.digest:
        raise ToolError(f"{rel} changed since you last read it (someone else edited it); read_file it again "
                        "and redo your change (or use edit_file), so their edit is not lost")
    _screen_write(ctx, path, rel, now.text, content)  # what the write adds must pass the scan
    try:
        ctx.ws.write_text(rel, content, expected=now)  # atomic; the watcher recognises the echo by hash
    except ConflictError:
        raise ToolError(f"{rel} changed while it was being written (someone else edited it); nothing was "
                        "written: read_file it again and redo your change") from None
    _remember(ctx, rel, content)
    return f"{'overwrote' if now.text is not None else 'created'} {rel} ({len(content)} chars)"


@tool("edit_file",
      summary="replace exact text in a workspace file",
      description="Replace exact text in a workspace file. old_text must occur exactly once unless replace_all.",
      params={"path": STR, "old_text": STR, "new_text": STR, "replace_all": BOOL},
      required=("path", "old_text", "new_text"), serial="path")
def edit_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = _confined(ctx, _require(args, "path"), for_write=True)
    rel = _rel(ctx, path)
    old = str(_require(args, "old_text"))
    new = str(_require(args, "new_text"))
    if not old:
        raise ToolError("old_text must not be empty")
    replace_all = bool(args.get("replace_all"))
    counted: list[int] = []

    def edit(text: str | None) -> str:
        # applied to the file as it is when written: an edit made meanwhile elsewhere in it is kept
        if text is None:
            raise ToolError(f"{rel}: file not found")
        count = text.count(old)
        if count == 0:
            raise ToolError(f"old_text was not found in {rel}; read the file and copy the text exactly")
        if count > 1 and not replace_all:
            raise ToolError(f"old_text occurs {count} times in {rel}; add context or set replace_all")
        counted[:] = [count]
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        _screen_write(ctx, path, rel, text, updated)
        return updated

    done = ctx.ws.update_text(rel, edit)
    if done.text is not None:
        _remember(ctx, rel, done.text, done.digest)
    return f"edited {rel}: {plural(counted[0] if replace_all else 1, 'replacement')}"


# --------------------------------------------------------------------------- exec


@tool("exec",
      summary="run a shell command (subject to the exec policy in kit.yaml)",
      description="Run a shell command in the workspace folder, subject to the exec policy in kit.yaml.",
      params={"command": STR, "timeout_s": {"type": "number", "minimum": 1}},
      required=("command",), serial=True)
def exec_command(ctx: ToolContext, args: dict[str, Any]) -> str:
    from kit.tools import exec_policy

    command = str(_require(args, "command")).strip()
    if not command:
        raise ToolError("empty command")
    config = ctx.ws.config
    decision = exec_policy.check(command, config, interactive=ctx.interactive)
    if not decision.allowed:
        if decision.needs_approval and ctx.interactive and ctx.approve is not None:
            if not ctx.approve(command, decision.reason):
                raise Blocked("exec refused: the user declined to run this command")
        else:
            raise Blocked(f"exec refused: {decision.reason}")
    ceiling = config.tools.exec.timeout_s
    timeout = min(float(args.get("timeout_s") or ceiling), ceiling)
    result = exec_policy.run(command, cwd=ctx.ws.root, timeout_s=timeout)
    parts = [f"exit_code: {result.exit_code}" + (" (timed out)" if result.timed_out else "")]
    if result.stdout:
        parts.append("--- stdout ---\n" + result.stdout.rstrip("\n"))
    if result.stderr:
        # stderr last: when the output is cut, the error at the end is what survives
        parts.append("--- stderr ---\n" + result.stderr.rstrip("\n"))
    return "\n".join(parts)


# the order the prompt lists them in and the schemas travel in
BUILTIN_TOOLS = (memory_search, memory_get, memory_write, session_search, skills_list, skill_view,
                 read_file, write_file, edit_file, exec_command)


def builtin_registry() -> ToolRegistry:
    """A fresh registry of Kit's built-in tools (callers may add their own to it)."""
    return ToolRegistry(BUILTIN_TOOLS)
