"""One live session with an MCP server, driven from Kit's synchronous code.

The official SDK is async; Kit's agent loop is not. A `Bridge` runs one anyio event loop in a
daemon thread (a blocking portal) for all the servers of an agent, and each `Connection` keeps its
server's session open across calls through it. This is the only module that imports the SDK, and
only when a server is actually started, so listing tools from the cache or `kit --help` never pays
for it (importing `mcp` costs about a second).

How failures surface (measured against SDK 2.3, docs/mcp.md):
- the command is missing or not executable: an OSError from the spawn;
- the server exits before answering `initialize`: MCPError CONNECTION_CLOSED (inside a group);
- it never answers: our startup timeout;
- a call outlives `timeout_s`: MCPError REQUEST_TIMEOUT (the session may be wedged: restart it);
- the server dies mid-call: MCPError CONNECTION_CLOSED.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kit import clock
from kit.errors import KitError
from kit.mcp_client.servers import ServerSpec

STDERR_TAIL_CHARS = 300  # of the server's stderr, quoted in a failure line


class StartError(KitError):
    """The server could not be started (spawned, initialised and asked for its tools)."""


class CallError(KitError):
    """A call failed at the protocol level. `kind`: timeout | crashed | error."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server declares it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool | None = None  # the server's readOnlyHint, when it gives one

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema,
                "read_only": self.read_only}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RemoteTool:
        return cls(str(data["name"]), str(data.get("description") or ""), dict(data.get("input_schema") or {}),
                   data.get("read_only"))


@dataclass(frozen=True)
class CallResult:
    text: str
    is_error: bool


class Bridge:
    """An event loop in a daemon thread that the sync side calls into (anyio's blocking portal)."""

    def __init__(self) -> None:
        from anyio.from_thread import start_blocking_portal

        self._cm = start_blocking_portal()
        self.portal = self._cm.__enter__()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._cm.__exit__(None, None, None)


class Connection:
    """A started server: its session, what it said at `initialize`, and its tools."""

    def __init__(self, spec: ServerSpec, bridge: Bridge, *, root: Path, errlog: Path | None):
        self.spec = spec
        self.bridge = bridge
        self.root = root
        self.errlog_path = errlog
        self._errlog: IO[str] | None = None
        self._errlog_start = 0
        self._cm: Any = None
        self.session: Any = None
        self.server_info: dict[str, Any] = {}
        self.instructions: str | None = None
        self.tools: tuple[RemoteTool, ...] = ()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ start / stop

    def start(self) -> tuple[RemoteTool, ...]:
        """Spawn (or connect), initialise and list the tools; StartError with one clear reason."""
        spec = self.spec
        self._open_errlog()
        self._cm = self.bridge.portal.wrap_async_context_manager(_session(spec, self.root, self._errlog))
        try:
            self.session, init, tools = self._cm.__enter__()
        except BaseException as exc:  # noqa: BLE001 - every way a start fails becomes one line
            self._cm = None
            reason = start_failure(exc, spec)
            tail = self.stderr_tail()
            self._close_errlog()
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise StartError(f"MCP server '{spec.name}' failed to start: {reason}"
                             + (f"; its stderr said: {tail}" if tail else "")) from None
        info = getattr(init, "server_info", None)
        self.server_info = {"name": getattr(info, "name", None), "version": getattr(info, "version", None)}
        self.instructions = getattr(init, "instructions", None)
        self.tools = tools
        return tools

    def close(self) -> None:
        """Leave the session: closes stdin, then SIGTERM, then SIGKILL (the SDK's 2 s + 2 s)."""
        cm, self._cm, self.session = self._cm, None, None
        if cm is not None:
            with contextlib.suppress(BaseException):
                cm.__exit__(None, None, None)
        self._close_errlog()

    @property
    def alive(self) -> bool:
        return self._cm is not None

    # ------------------------------------------------------------------ calls

    def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> CallResult:
        session = self.session
        if session is None:
            raise CallError(f"MCP server '{self.spec.name}' is not running", "crashed")
        try:
            result = self.bridge.portal.call(
                lambda: session.call_tool(tool, arguments, read_timeout_seconds=timeout_s))
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise call_failure(exc, self.spec, tool, timeout_s, self.stderr_tail()) from None
        return CallResult(result_text(result), bool(getattr(result, "is_error", False)))

    # ------------------------------------------------------------------ stderr

    def _open_errlog(self) -> None:
        if self.errlog_path is None:
            import tempfile

            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8")  # doctor: read-only workspace
            self._errlog_start = 0
            return
        self.errlog_path.parent.mkdir(parents=True, exist_ok=True)
        self._errlog = open(self.errlog_path, "a+", encoding="utf-8")  # noqa: SIM115 - lives with the server
        self._errlog.write(f"--- {clock.now().isoformat(timespec='seconds')} kit started: {self.spec.target}\n")
        self._errlog.flush()
        self._errlog_start = self._errlog.tell()

    def _close_errlog(self) -> None:
        handle, self._errlog = self._errlog, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()

    def stderr_tail(self) -> str:
        """The last non-empty lines the server wrote to stderr since it was started (one line)."""
        handle = self._errlog
        if handle is None:
            return ""
        try:
            handle.flush()
            handle.seek(self._errlog_start)
            text = handle.read()
            handle.seek(0, 2)
        except (OSError, ValueError):
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        tail = " | ".join(lines[-3:])
        return tail if len(tail) <= STDERR_TAIL_CHARS else "…" + tail[-STDERR_TAIL_CHARS:]


# --------------------------------------------------------------------------- the async side


def _quiet_sdk_logs() -> None:
    """The SDK logs a server's non-JSON stdout line with its traceback; with no handler anywhere,
    Python's last-resort handler put ~15 lines on stderr above Kit's own one-line report. A
    NullHandler is the library convention: an application that configures logging still gets them."""
    import logging

    sdk = logging.getLogger("mcp")
    if not any(isinstance(h, logging.NullHandler) for h in sdk.handlers):
        sdk.addHandler(logging.NullHandler())


@contextlib.asynccontextmanager
async def _session(spec: ServerSpec, root: Path, errlog: IO[str] | None):
    """(session, initialize result, tools) for the server. The session's read timeout (the
    spec's startup timeout) bounds `initialize` and each `tools/list`; calls pass their own.
    (No overall fail_after here: a cancel scope may not close over the transport's task group.)"""
    from mcp import ClientSession

    _quiet_sdk_logs()

    async with contextlib.AsyncExitStack() as stack:
        if spec.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers=spec.expanded_headers(),
                timeout=httpx2.Timeout(spec.startup_timeout_s, read=max(300.0, spec.timeout_s))))
            streams = await stack.enter_async_context(streamable_http_client(spec.url, http_client=http))
        else:
            from mcp import StdioServerParameters
            from mcp.client.stdio import get_default_environment, stdio_client

            params = StdioServerParameters(
                command=_command(spec, root), args=list(spec.args),
                env={**get_default_environment(), **spec.expanded_env()}, cwd=str(spec.working_dir(root)))
            streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        read, write = streams[0], streams[1]
        session = await stack.enter_async_context(
            ClientSession(read, write, read_timeout_seconds=spec.startup_timeout_s))
        init = await session.initialize()
        tools = await _list_tools(session)
        yield session, init, tools


async def _list_tools(session: Any) -> tuple[RemoteTool, ...]:
    import mcp_types as types

    out: list[RemoteTool] = []
    cursor = None
    for _ in range(100):  # pagination, bounded
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for t in page.tools:
            hints = getattr(t, "annotations", None)
            out.append(RemoteTool(t.name, t.description or "", dict(t.input_schema or {}),
                                  getattr(hints, "read_only_hint", None) if hints is not None else None))
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return tuple(out)


def _command(spec: ServerSpec, root: Path) -> str:
    """A command written as a relative path (./server.py, bin/x) is relative to the workspace."""
    command = str(spec.command)
    if "/" in command and not command.startswith(("/", "~")):
        return str((root / command).resolve())
    return str(Path(command).expanduser()) if command.startswith("~") else command


# --------------------------------------------------------------------------- results and failures


def result_text(result: Any) -> str:
    """A CallToolResult as the text the model reads: its text parts; what is not text is named."""
    parts: list[str] = []
    for item in getattr(result, "content", None) or ():
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind in ("image", "audio"):
            size = len(getattr(item, "data", "") or "") * 3 // 4
            parts.append(f"[{kind} {getattr(item, 'mime_type', '')}, about {size} bytes: not shown]")
        elif kind == "resource":
            res = item.resource
            text = getattr(res, "text", None)
            parts.append(text if text is not None else f"[binary resource {res.uri}: not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource {item.uri}" + (f": {item.name}" if getattr(item, "name", None) else "") + "]")
        else:
            parts.append(f"[{kind or 'unknown'} content: not shown]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        import json

        parts.append(json.dumps(structured, ensure_ascii=False, indent=1, default=str))
    return "\n".join(parts)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, in order."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _first(exc: BaseException) -> BaseException:
    leaves = list(_leaves(exc))
    # a cancellation is a consequence; the real cause is the other leaf
    meaningful = [e for e in leaves if type(e).__name__ not in ("CancelledError", "Cancelled", "GeneratorExit")]
    return (meaningful or leaves or [exc])[0]


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "code", None)
    if code is None:
        code = getattr(getattr(exc, "error", None), "code", None)
    return code if isinstance(code, int) else None


def start_failure(exc: BaseException, spec: ServerSpec) -> str:
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    cause = _first(exc)
    if isinstance(cause, TimeoutError) or _code(cause) == REQUEST_TIMEOUT:
        return f"no answer to initialize within {spec.startup_timeout_s:g} s (startup_timeout_s)"
    if isinstance(cause, FileNotFoundError):
        return f"command not found: {spec.command}"
    if isinstance(cause, PermissionError):
        return f"command is not executable: {spec.command}"
    if _code(cause) == CONNECTION_CLOSED:
        return "it exited before answering initialize"
    name = type(cause).__name__
    if name in ("ConnectError", "ConnectTimeout"):
        return f"cannot connect to {spec.url}"
    message = str(cause).strip() or name
    return f"{name}: {message}" if name not in message else message


def call_failure(exc: BaseException, spec: ServerSpec, tool: str, timeout_s: float, tail: str) -> CallError:
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    cause = _first(exc)
    code = _code(cause)
    if code == REQUEST_TIMEOUT or isinstance(cause, TimeoutError):
        return CallError(f"MCP server '{spec.name}' did not answer {tool} within {timeout_s:g} s "
                         "(timeout_s); Kit restarts it on the next call", "timeout")
    if code == CONNECTION_CLOSED or type(cause).__name__ in ("ClosedResourceError", "BrokenResourceError",
                                                             "EndOfStream"):
        return CallError(f"MCP server '{spec.name}' exited during {tool}"
                         + (f" (its stderr said: {tail})" if tail else "")
                         + "; Kit restarts it on the next call", "crashed")
    message = getattr(cause, "message", None) or str(cause) or type(cause).__name__
    return CallError(f"MCP server '{spec.name}' refused {tool}: {message}", "error")
