"""One declaration per tool, and the registry an agent offers the model.

A `Tool` holds everything Kit says about a tool: its name, the description and JSON schema the
model receives with every request, the one-line summary in the system prompt's tools section, the
function that runs it, and whether it must run alone. The JSON schemas, the function table and
the prompt summary are views of the same declarations, so they cannot disagree.

    @tool("memory_get", summary="read lines of a memory file",
          description="Read lines of a memory file …", params={"path": STR}, required=("path",))
    def memory_get(ctx, args): ...

`ToolRegistry` is a small, per-workspace (or per-agent) set of tools. It starts with Kit's
built-in tools (`kit.tools.builtin.builtin_registry()`) and takes more at run time with `add`
(e.g. tools an MCP server offers, named `<server>__<tool>`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kit.errors import KitError

Approver = Callable[[str, str], bool]  # (command, reason) -> approved?


@dataclass
class ToolContext:
    """What a tool's function receives besides its arguments: the workspace and the run."""

    ws: Any
    session_id: str | None = None
    session_key: str | None = None
    interactive: bool = False
    approve: Approver | None = None  # asked for `ask`-mode exec in interactive runs
    tools: ToolRegistry | None = None  # what the model may call; None: Kit's built-in tools
    # rel path -> the version of the file the model last saw (read_file, or its own write): a
    # write_file over a file that changed since is refused instead of reverting someone's edit
    seen: dict[str, Any] = field(default_factory=dict)
    # skills active this turn (kit.tools.allowed.ActiveSkills): their allowed-tools limit the calls
    skills: Any = None
    # the workspace's SessionStore (session_search), handed in by the agent or `kit mcp serve`:
    # the tools layer may not import the agent; None elsewhere
    sessions: Any = None
    # who is calling: "agent" (Kit's own loop) or "mcp" (a client of `kit mcp serve`); recalls and
    # memory:write events carry it as their source, so dreaming knows what Claude Code asked
    origin: str = "agent"

    @property
    def recall_source(self) -> str:
        return "mcp" if self.origin == "mcp" else "tool"


ToolFunction = Callable[[ToolContext, dict[str, Any]], str]

# What every provider accepts as a function name (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

# JSON-schema building blocks for parameters
STR: Mapping[str, Any] = {"type": "string"}
INT: Mapping[str, Any] = {"type": "integer", "minimum": 1}
BOOL: Mapping[str, Any] = {"type": "boolean"}


class ToolError(KitError):
    """A tool could not do what was asked; the message goes back to the model."""


class Blocked(KitError):
    """A policy (not a hook) refused the call: the outcome is marked blocked."""


def object_schema(properties: Mapping[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    """The `parameters` schema of a tool taking these named arguments, and no others."""
    return {"type": "object", "properties": {k: dict(v) for k, v in properties.items()},
            "required": list(required), "additionalProperties": False}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str  # what the model reads in the tool's JSON schema
    summary: str  # its line in the system prompt's tools section (short: it is in every prompt)
    parameters: Mapping[str, Any]  # a JSON schema of the arguments (an object schema)
    run: ToolFunction = field(compare=False)  # (context, arguments) -> text; raises ToolError / Blocked
    # How a turn's calls may overlap (the agent runs one reply's calls concurrently):
    #   False — runs alongside anything (reads);
    #   True — runs alone, in the order the model asked: every earlier call finishes first and
    #          every later one waits for it (exec: a command may touch anything);
    #   "path" (the name of an argument) — calls naming the same value run one after another, in
    #          order (writes to the same file); other values run alongside.
    serial: bool | str = False
    source: str = "kit"  # "kit" for the built-in tools; where an added tool came from otherwise

    def lock_key(self, arguments: Mapping[str, Any]) -> str | None:
        """What this call must not overlap with: "*" (everything), a resource ("path=notes.md"),
        or None (nothing)."""
        if self.serial is True:
            return "*"
        if isinstance(self.serial, str) and self.serial:
            value = arguments.get(self.serial) if isinstance(arguments, Mapping) else None
            return f"{self.serial}={_normalised(value)}" if value is not None else "*"
        return None

    def schema(self) -> dict[str, Any]:
        """The function schema sent with every request (OpenAI's chat shape; adapters convert)."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description,
                             "parameters": dict(self.parameters)}}


def _normalised(value: Any) -> str:
    """A resource name as a lock key: `./notes.md` and `notes.md` are the same file."""
    import posixpath

    text = str(value).strip().replace("\\", "/")
    return posixpath.normpath(text) if text else text


def tool(
    name: str,
    *,
    summary: str,
    description: str,
    params: Mapping[str, Any] | None = None,
    required: Iterable[str] = (),
    serial: bool | str = False,
) -> Callable[[ToolFunction], Tool]:
    """Declare a tool over its function: `@tool(...)` replaces the function by its `Tool`."""

    def declare(run: ToolFunction) -> Tool:
        return Tool(name=name, description=description, summary=summary,
                    parameters=object_schema(params or {}, required), run=run, serial=serial)

    return declare


class ToolRegistry:
    """The tools on offer, by name, in the order they were added.

    Not a module global: the workspace owns one (`ws.tools`, the built-in tools) and an agent may
    get its own copy with more tools. Adding and removing are safe while another thread reads
    (each change publishes a new table).
    """

    def __init__(self, tools: Iterable[Tool] = ()):
        self._tools: dict[str, Tool] = {}
        self._lock = threading.Lock()
        for item in tools:
            self.add(item)

    def add(self, item: Tool, *, replace: bool = False) -> None:
        """Offer one more tool. A name already taken is refused unless `replace`."""
        if not NAME_RE.match(item.name):
            raise KitError(f"tool name {item.name!r} must be 1-64 characters of A-Z, a-z, 0-9, _ and -")
        with self._lock:
            if item.name in self._tools and not replace:
                raise KitError(f"a tool named {item.name!r} is already registered "
                               f"(from {self._tools[item.name].source})")
            self._tools = {**self._tools, item.name: item}

    def remove(self, name: str) -> Tool:
        with self._lock:
            if name not in self._tools:
                raise KitError(f"no tool named {name!r}")
            table = dict(self._tools)
            removed = table.pop(name)
            self._tools = table
        return removed

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(tuple(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry of only these tools (unknown names are skipped), e.g. for a memory flush."""
        table = self._tools
        return ToolRegistry(table[n] for n in names if n in table)

    def copy(self) -> ToolRegistry:
        return ToolRegistry(self)

    # ------------------------------------------------------------------ the views

    def schemas(self) -> list[dict[str, Any]]:
        """What the model receives with each request."""
        return [t.schema() for t in self]

    def summaries(self) -> list[dict[str, str]]:
        """What the system prompt lists: [{"name", "description"}] (the template's `tools`)."""
        return [{"name": t.name, "description": t.summary} for t in self]
