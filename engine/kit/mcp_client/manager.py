"""The MCP servers of one agent: lazy connections, their tools in the agent's Tool registry.

    clients = McpClients(ws, status=print)
    clients.sync(registry)        # every turn: offer the tools of the servers kit.yaml configures
    registry.get("time__convert_time").run(ctx, {...})   # starts `time` on first use
    clients.close()               # stops every server this object started

Lazy: a server is started only when one of its tools is called, or when Kit does not know its
tools yet. The tool list of each server is kept in `.kit/cache/mcp-tools.json`, keyed by the
spec's fingerprint (command, args, env, url), so a one-shot `kit run` that calls no MCP tool starts
no server. A server that fails to start is skipped with one status line; the agent runs without it.

Policy (per server, per tool; deny wins): `deny` tools are not offered at all; `ask` tools run
after the user approves in an interactive run and are refused otherwise; `allow` tools just run.
The policy is read from the live config at every call, so an edit of kit.yaml applies at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.core import WorkspaceCore
from kit.filewrite import atomic_write
from kit.fsutil import sha1_hex
from kit.mcp_client.servers import ServerSpec, server_specs
from kit.tools.registry import NAME_RE, Blocked, Tool, ToolError, ToolRegistry

log = logging.getLogger("kit.mcp")

CACHE_FILE = "mcp-tools.json"
SOURCE_PREFIX = "mcp:"
RETRY_START_AFTER_S = 60.0  # a server that failed to start is tried again after this (or a config change)
MAX_CRASHES = 3  # a server that dies this often during calls is not restarted until kit.yaml changes
SUMMARY_CHARS = 120

StatusCallback = Callable[[str], None]


def kit_tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>` in the characters every provider accepts, at most 64 of them (a long
    name keeps its start and gets a short hash, so two long names never collide)."""
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", tool) or "tool"
    name = f"{server}__{clean}"
    if len(name) > 64:
        name = f"{name[:55]}_{sha1_hex(tool, 8)}"
    return name


def _summary(description: str) -> str:
    first = " ".join(description.split())
    cut = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0]
    return cut if len(cut) <= SUMMARY_CHARS else cut[: SUMMARY_CHARS - 1] + "…"


def _parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """The server's input schema as a function's parameters (always an object schema)."""
    out = dict(schema or {})
    if out.get("type") != "object":
        out = {"type": "object", "properties": {}}
    out.setdefault("properties", {})
    return out


@dataclass(frozen=True)
class ToolStatus:
    name: str  # the server's name for it
    kit_name: str  # what the model calls: <server>__<tool>
    description: str
    policy: str  # allow | ask | deny (effective)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kit_name": self.kit_name, "description": self.description,
                "policy": self.policy}


@dataclass(frozen=True)
class McpServerStatus:
    """One configured server, for `kit mcp list` and doctor."""

    name: str
    transport: str  # stdio | http
    target: str  # command line or URL
    enabled: bool
    policy: str
    state: str  # running | ready (tools known, not running) | failed | crashed | disabled | unknown
    error: str | None
    server: dict[str, Any] = field(default_factory=dict)  # name/version from initialize
    tools: tuple[ToolStatus, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "transport": self.transport, "target": self.target,
                "enabled": self.enabled, "policy": self.policy, "state": self.state, "error": self.error,
                "server": dict(self.server), "tools": [t.to_json() for t in self.tools]}


@dataclass
class _Server:
    """What the manager knows about one server (one per name; replaced when its spec changes)."""

    spec: ServerSpec
    tools: tuple[Any, ...] | None = None  # RemoteTool, from a start or the cache
    connection: Any = None  # a live Connection
    failed: str | None = None  # why the last start failed
    failed_at: float = 0.0
    crashes: int = 0
    state: str = "unknown"
    server_info: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class McpClients:
    """The configured MCP servers of one agent (or of `kit mcp list`). Not a module global: each
    agent owns one and closes it with itself."""

    def __init__(self, ws: WorkspaceCore, *, status: StatusCallback | None = None, use_cache: bool = True):
        self.ws = ws
        self.status = status or (lambda message: None)
        self.use_cache = use_cache
        self._servers: dict[str, _Server] = {}
        self._bridge: Any = None
        self._lock = threading.RLock()
        self._closing: list[threading.Thread] = []
        self._said: set[str] = set()

    # ------------------------------------------------------------------ the registry

    def specs(self) -> tuple[ServerSpec, ...]:
        return server_specs(self.ws.config)

    def sync(self, registry: ToolRegistry) -> None:
        """Make `registry` offer exactly the tools of the enabled servers in the current config
        (policy `deny` left out). Servers whose tools are unknown are started, in parallel."""
        specs = {s.name: s for s in self.specs() if s.enabled}
        with self._lock:
            for name in list(self._servers):
                current = self._servers[name]
                if name not in specs or specs[name].fingerprint != current.spec.fingerprint:
                    self._forget(name)  # removed or changed: its old process must go
            for name, spec in specs.items():
                known = self._servers.get(name)
                if known is None:
                    known = self._servers[name] = _Server(spec, tools=self._cached_tools(spec))
                    known.state = "ready" if known.tools is not None else "unknown"
                else:
                    known.spec = spec  # same process; policy or timeouts may have changed
            unknown = [s for s in self._servers.values()
                       if s.tools is None and s.connection is None and self._may_start(s)]
        if unknown:
            self._start_all(unknown)
        wanted: dict[str, Tool] = {}
        with self._lock:
            for server in self._servers.values():
                for remote in server.tools or ():
                    if server.spec.policy_for(remote.name) == "deny":
                        continue
                    item = self._declare(server.spec, remote)
                    wanted[item.name] = item
        for item in list(registry):
            if item.source.startswith(SOURCE_PREFIX) and item.name not in wanted:
                registry.remove(item.name)
        for name, item in wanted.items():
            present = registry.get(name)
            if present is not None and not present.source.startswith(SOURCE_PREFIX):
                self._say(f"MCP tool {name} is not offered: a built-in tool has that name")
                continue
            if present != item:
                registry.add(item, replace=True)

    def _declare(self, spec: ServerSpec, remote: Any) -> Tool:
        server, tool = spec.name, remote.name

        def run(ctx: Any, arguments: dict[str, Any]) -> str:
            return self.call(server, tool, arguments, ctx)

        description = remote.description.strip() or f"the {tool} tool"
        return Tool(name=kit_tool_name(server, tool),
                    description=f"{description}\n\n(MCP server '{server}', tool '{tool}')",
                    summary=f"[{server}] {_summary(description)}", parameters=_parameters(remote.input_schema),
                    run=run, serial=remote.read_only is not True, source=f"{SOURCE_PREFIX}{server}")

    # ------------------------------------------------------------------ calls

    def call(self, server: str, tool: str, arguments: dict[str, Any], ctx: Any = None) -> str:
        """Run one tool of `server` under its policy; ToolError/Blocked for every failure (the
        model reads the message)."""
        spec = next((s for s in self.specs() if s.name == server and s.enabled), None)
        if spec is None:
            raise ToolError(f"MCP server '{server}' is no longer configured in kit.yaml")
        policy = spec.policy_for(tool)
        kit_name = kit_tool_name(server, tool)
        if policy == "deny":
            raise Blocked(f"{kit_name} refused: mcp.servers.{server} denies it (policy deny)")
        if policy == "ask":
            interactive = bool(getattr(ctx, "interactive", False))
            approve = getattr(ctx, "approve", None)
            if not interactive or approve is None:
                raise Blocked(f"{kit_name} refused: mcp.servers.{server} asks before each call (policy ask) "
                              "and this run is not interactive; set its policy (or tools."
                              f"{tool}) to allow in kit.yaml to let it run unattended")
            shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
            if not approve(f"{kit_name} {shown}", f"MCP server '{server}' asks before each call"):
                raise Blocked(f"{kit_name} refused: the user declined this call")
        with self._lock:
            known = self._servers.get(server)
            if known is None or known.spec.fingerprint != spec.fingerprint:
                if known is not None:
                    self._forget(server)
                known = self._servers[server] = _Server(spec, tools=self._cached_tools(spec))
            known.spec = spec
        connection = self._connected(known)
        from kit.mcp_client.connection import CallError

        try:
            result = connection.call(tool, dict(arguments), spec.timeout_s)
        except CallError as exc:
            with self._lock:
                if exc.kind in ("timeout", "crashed"):
                    known.state = "crashed" if exc.kind == "crashed" else "unresponsive"
                    known.crashes += 1
                    self._drop_connection(known)
                    if known.crashes >= MAX_CRASHES:
                        known.failed, known.failed_at = (f"it failed {known.crashes} calls in a row (crashed or "
                                                         "timed out); not restarted until kit.yaml changes"), float("inf")
                        known.state = "failed"
            raise ToolError(str(exc)) from None
        known.crashes = 0
        if result.is_error:
            raise ToolError(result.text or f"{kit_name} failed (the server gave no message)")
        return result.text

    def _connected(self, known: _Server) -> Any:
        """The live connection of a server, started now if needed (lazy)."""
        with known.lock:
            if known.connection is not None and known.connection.alive:
                return known.connection
            if known.failed and known.failed_at == float("inf"):
                raise ToolError(f"MCP server '{known.spec.name}' is unavailable: {known.failed}")
            from kit.mcp_client.connection import StartError

            try:
                self._start(known)
            except StartError as exc:
                raise ToolError(str(exc)) from None
            return known.connection

    # ------------------------------------------------------------------ starting

    def _may_start(self, server: _Server) -> bool:
        if server.failed is None:
            return True
        return time.monotonic() - server.failed_at >= RETRY_START_AFTER_S

    def _start_all(self, servers: Iterable[_Server]) -> None:
        """Start servers whose tools are unknown, in parallel; failures become one status line each."""
        from kit.mcp_client.connection import StartError

        def start(server: _Server) -> None:
            with server.lock:
                if server.connection is not None:
                    return
                try:
                    self._start(server)
                except StartError as exc:
                    self._say(f"{exc}; the agent runs without its tools")

        servers = list(servers)
        if len(servers) == 1:
            start(servers[0])
            return
        with ThreadPoolExecutor(max_workers=min(8, len(servers)), thread_name_prefix="kit-mcp-start") as pool:
            list(pool.map(start, servers))

    def _start(self, server: _Server) -> None:
        """Start one server (caller holds server.lock); StartError on failure."""
        from kit.mcp_client.connection import Connection, StartError

        spec = server.spec
        errlog = None if self.ws.is_read_only else self.ws.kit_dir / "logs" / f"mcp-{spec.name}.log"
        connection = Connection(spec, self._get_bridge(), root=self.ws.root, errlog=errlog)
        try:
            tools = connection.start()
        except StartError as exc:
            server.failed, server.failed_at, server.state = str(exc), time.monotonic(), "failed"
            raise
        with self._lock:
            server.connection, server.failed, server.state = connection, None, "running"
            server.server_info = dict(connection.server_info)
            bad = [t.name for t in tools if not NAME_RE.match(kit_tool_name(spec.name, t.name))]
            server.tools = tuple(t for t in tools if t.name not in bad)
        if server.tools != self._cached_tools(spec):
            self._store_tools(spec, server.tools)

    def _get_bridge(self) -> Any:
        with self._lock:
            if self._bridge is None:
                from kit.mcp_client.connection import Bridge

                self._bridge = Bridge()
            return self._bridge

    # ------------------------------------------------------------------ stopping

    def _drop_connection(self, server: _Server) -> None:
        """Close a connection in the background (a hung server takes up to 4 s to stop)."""
        connection, server.connection = server.connection, None
        if connection is not None:
            thread = threading.Thread(target=connection.close, name=f"kit-mcp-close-{server.spec.name}",
                                      daemon=True)
            thread.start()
            self._closing.append(thread)

    def _forget(self, name: str) -> None:
        server = self._servers.pop(name, None)
        if server is not None:
            self._drop_connection(server)

    def close(self) -> None:
        """Stop every server this object started and its event loop thread."""
        with self._lock:
            for name in list(self._servers):
                self._forget(name)
            closing, self._closing = self._closing, []
            bridge, self._bridge = self._bridge, None
        for thread in closing:
            thread.join(timeout=10)
        if bridge is not None:
            bridge.close()

    # ------------------------------------------------------------------ status

    def statuses(self, *, probe: bool = True, only: Iterable[str] | None = None) -> list[McpServerStatus]:
        """Every configured server with its state and tools. With `probe`, servers are started
        (in parallel) so the answer is what they say now, not what the cache remembers; `only`
        limits the probe to those names (doctor --offline leaves the URL servers alone)."""
        probed = None if only is None else set(only)
        specs = self.specs()
        enabled = [s for s in specs if s.enabled]
        with self._lock:
            for spec in enabled:
                known = self._servers.get(spec.name)
                if known is None or known.spec.fingerprint != spec.fingerprint:
                    if known is not None:
                        self._forget(spec.name)
                    self._servers[spec.name] = _Server(spec, tools=self._cached_tools(spec))
                    self._servers[spec.name].state = "ready" if self._servers[spec.name].tools is not None else "unknown"
            targets = [self._servers[s.name] for s in enabled
                       if probe and self._servers[s.name].connection is None
                       and (probed is None or s.name in probed)]
            for server in targets:
                server.failed = None  # a probe always tries again
        if targets:
            self._start_all_quiet(targets)
        out = []
        for spec in specs:
            if not spec.enabled:
                out.append(McpServerStatus(spec.name, spec.transport, spec.target, False, spec.policy,
                                        "disabled", None))
                continue
            known = self._servers[spec.name]
            tools = tuple(ToolStatus(t.name, kit_tool_name(spec.name, t.name), t.description,
                                     spec.policy_for(t.name)) for t in known.tools or ())
            out.append(McpServerStatus(spec.name, spec.transport, spec.target, True, spec.policy, known.state,
                                    known.failed, dict(known.server_info), tools))
        return out

    def _start_all_quiet(self, servers: list[_Server]) -> None:
        from kit.mcp_client.connection import StartError

        def start(server: _Server) -> None:
            with server.lock, contextlib.suppress(StartError):
                self._start(server)

        with ThreadPoolExecutor(max_workers=min(8, len(servers)), thread_name_prefix="kit-mcp-probe") as pool:
            list(pool.map(start, servers))

    def _say(self, message: str) -> None:
        if message not in self._said:  # once per agent: a failing server is not news every turn
            self._said.add(message)
            log.info("%s", message)
            self.status(message)

    # ------------------------------------------------------------------ the tool cache

    @property
    def _cache_path(self) -> Path:
        return self.ws.kit_dir / "cache" / CACHE_FILE

    def _read_cache(self) -> dict[str, Any]:
        try:
            data = json.loads(self._cache_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _cached_tools(self, spec: ServerSpec) -> tuple[Any, ...] | None:
        if not self.use_cache:
            return None
        from kit.mcp_client.connection import RemoteTool

        entry = self._read_cache().get(spec.name)
        if not isinstance(entry, dict) or entry.get("fingerprint") != spec.fingerprint:
            return None
        try:
            return tuple(RemoteTool.from_json(t) for t in entry.get("tools") or ())
        except (KeyError, TypeError, ValueError):
            return None

    def _store_tools(self, spec: ServerSpec, tools: tuple[Any, ...]) -> None:
        if self.ws.is_read_only or not self.use_cache:
            return
        with self._lock:
            data = self._read_cache()
            data[spec.name] = {"fingerprint": spec.fingerprint, "tools": [t.to_json() for t in tools]}
            with contextlib.suppress(OSError):
                self._cache_path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(self._cache_path, json.dumps(data, indent=1, sort_keys=True) + "\n")
