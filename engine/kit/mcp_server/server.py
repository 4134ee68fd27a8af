"""`kit mcp serve`: a workspace's memory, skills and sessions as an MCP server (official SDK).

    KitMcpServer(ws).run_stdio()                      # Claude Code: `claude mcp add kit -- kit mcp serve -w PATH`
    KitMcpServer(ws).run_http("127.0.0.1", 8765)      # streamable HTTP on http://127.0.0.1:8765/mcp

Tools are views of Kit's own Tool declarations (kit.tools): the same schema, description and
function the agent uses, run through the same `execute_tool` (hooks, truncation, the memory
threat scan and dedupe), with `origin="mcp"` so recalls are recorded with source `mcp` and
dreaming learns from what the client asked. Resources are MEMORY.md, USER.md, the daily notes and
the built system prompt per run kind; prompts are the user-invocable skills. Every list is
computed per request from the live workspace, which the watcher hot-reloads while serving, and
clients hear `list_changed` / `resources/updated` when files change.

Initialize is answered before anything heavy loads: the embedding model and the index are
brought up on the first memory_search (or by the warm-up that starts after the handshake).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import socket
import threading
import weakref
from typing import Any

from kit.core import ReloadResult, WorkspaceCore
from kit.errors import KitError, ListenError
from kit.mcp_server.tools import served_tools
from kit.memory.notes import is_daily_note
from kit.tools import ToolContext, ToolOutcome, execute_tool

log = logging.getLogger("kit.mcp.serve")

SCHEME = "kit://"
FILE_PREFIX = "kit://workspace/"
PROMPT_PREFIX = "kit://prompt/"
PERSONAL_FILES = ("MEMORY.md", "USER.md")
INSTRUCTIONS = (
    "Kit workspace {root}: long-term memory (MEMORY.md, daily notes in memory/), skills and past "
    "sessions. Search memory with memory_search before answering questions about the user, their "
    "projects or past decisions; read around a hit with memory_get; save durable facts with "
    "memory_write (one fact per call). Skills: skills_list, then skill_view NAME."
)



def listen_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (IPv6 for an address with a colon); ListenError if not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is no conflict
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = (exc.strerror or str(exc)).lower()
        hint = "; another server is listening there: choose another port" if exc.errno == errno.EADDRINUSE else ""
        raise ListenError(f"cannot listen on {host}:{port}: {reason}{hint}") from None
    return sock

class KitMcpServer:
    """One workspace served over MCP (stdio or streamable HTTP)."""

    def __init__(self, ws: WorkspaceCore, *, watch: bool = True, warm: bool = True):
        self.ws = ws
        self.watch = watch
        self.warm = warm
        self.tools = served_tools()
        self._serial = threading.Lock()  # tools that change state run one at a time
        # connection -> a session on it: the SDK makes a session object per request, but one sends
        # on the connection's own channel after its request ended (the watcher's notifications)
        self._sessions: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._token: Any = None  # the event loop's, for the watcher thread to hop in
        self._warmed = threading.Event()
        self._stops: list[Any] = []
        self._stops_lock = threading.Lock()
        self._closing = False

    # ------------------------------------------------------------------ the SDK server

    def build(self) -> Any:
        import mcp_types as types
        from mcp.server import Server

        async def on_list_tools(ctx: Any, params: Any) -> Any:
            self._seen(ctx)
            return types.ListToolsResult(tools=[
                types.Tool(name=t.name, description=t.description, input_schema=dict(t.parameters),
                           annotations=types.ToolAnnotations(read_only_hint=not t.serial,
                                                             destructive_hint=False, open_world_hint=False))
                for t in self.tools])

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            self._seen(ctx)
            import anyio

            name, arguments = params.name, dict(params.arguments or {})
            if name not in self.tools:
                from mcp.shared.exceptions import MCPError

                raise MCPError(code=types.INVALID_PARAMS,
                               message=f"Unknown tool: {name}; Kit serves {', '.join(self.tools.names)}")
            outcome = await anyio.to_thread.run_sync(self.call_tool, name, arguments)
            content = [types.TextContent(type="text", text=outcome.result)]
            structured = _structured(outcome.result) if outcome.ok else None
            return types.CallToolResult(content=content, structured_content=structured, is_error=not outcome.ok)

        async def on_list_resources(ctx: Any, params: Any) -> Any:
            self._seen(ctx)
            return types.ListResourcesResult(resources=[
                types.Resource(uri=uri, name=name, description=description, mime_type=mime)
                for uri, name, description, mime in self.resources()])

        async def on_list_resource_templates(ctx: Any, params: Any) -> Any:
            # every resource is listed by its URI; a client that asks for templates (they belong to
            # the resources capability) gets an empty list rather than "Method not found"
            self._seen(ctx)
            return types.ListResourceTemplatesResult(resource_templates=[])

        async def on_read_resource(ctx: Any, params: Any) -> Any:
            self._seen(ctx)
            import anyio

            uri = str(params.uri)
            try:
                text, mime = await anyio.to_thread.run_sync(self.read_resource, uri)
            except KitError as exc:
                from mcp.shared.exceptions import MCPError

                raise MCPError(code=types.INVALID_PARAMS, message=str(exc), data={"uri": uri}) from None
            return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime)])

        async def on_list_prompts(ctx: Any, params: Any) -> Any:
            self._seen(ctx)
            return types.ListPromptsResult(prompts=[
                types.Prompt(name=name, description=description, arguments=[types.PromptArgument(
                    name="arguments", description="what to do with the skill (the text after /skill NAME)",
                    required=False)])
                for name, description in self.prompts()])

        async def on_get_prompt(ctx: Any, params: Any) -> Any:
            self._seen(ctx)
            try:
                description, text = self.get_prompt(params.name, (params.arguments or {}).get("arguments", ""))
            except KitError as exc:
                from mcp.shared.exceptions import MCPError

                raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
            return types.GetPromptResult(description=description, messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))])

        async def on_subscribe(ctx: Any, params: Any) -> Any:
            self._seen(ctx)
            return types.EmptyResult()

        server = Server("kit", version=_version(), instructions=INSTRUCTIONS.format(root=self.ws.root),
                        on_list_tools=on_list_tools, on_call_tool=on_call_tool,
                        on_list_resources=on_list_resources, on_read_resource=on_read_resource,
                        on_list_resource_templates=on_list_resource_templates,
                        on_list_prompts=on_list_prompts, on_get_prompt=on_get_prompt)
        server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, on_subscribe)
        server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, on_subscribe)
        return server

    def _options(self, server: Any) -> Any:
        from mcp.server import NotificationOptions

        return server.create_initialization_options(
            NotificationOptions(resources_changed=True, prompts_changed=True, tools_changed=False))

    # ------------------------------------------------------------------ serving

    def run_stdio(self) -> None:
        """Serve on stdin/stdout until the client closes stdin (stdout carries only the protocol)."""
        import anyio

        anyio.run(self._stdio)

    async def _stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        server = self.build()
        async with self._serving(), stdio_server() as (read, write):
            await server.run(read, write, self._options(server))

    def run_http(self, host: str, port: int, *, on_ready: Any = None) -> None:
        """Serve streamable HTTP at http://HOST:PORT/mcp until interrupted (SIGINT/SIGTERM)."""
        import anyio

        anyio.run(self._http, host, port, on_ready)

    async def _http(self, host: str, port: int, on_ready: Any) -> None:
        import uvicorn

        server = self.build()
        app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                                lifespan="on")
        web = uvicorn.Server(config)
        # bound here, before anything is announced: a port in use is one ListenError, not a
        # "serving at …" line followed by uvicorn's log and its exit
        sock = listen_socket(host, port)
        try:
            async with self._serving():
                if on_ready is not None:
                    on_ready(f"http://{host}:{sock.getsockname()[1]}/mcp")
                await web.serve(sockets=[sock])
        finally:
            sock.close()

    @contextlib.asynccontextmanager
    async def _serving(self):
        """Watch the workspace (hot reload + notifications) and warm the index while serving."""
        import anyio.lowlevel

        self._token = anyio.lowlevel.current_token()
        if self.watch:
            from kit.watch import Watcher

            watcher = Watcher(self.ws, on_reload=self._reloaded).start()
            self._stops.append(watcher.stop)
            # the memory auto-indexer starts with the first request after the handshake (_seen):
            # the memory service (numpy, the index) must not delay the answer to initialize
        try:
            yield
        finally:
            with self._stops_lock:
                self._closing = True
                stops, self._stops = list(self._stops), []
            for stop in reversed(stops):
                with contextlib.suppress(Exception):
                    stop()
            self._token = None

    def _start_indexer(self) -> None:
        """Re-index memory files as the watcher sees them change (so memory_search finds an edit)."""
        from kit.memory.service import memory_for

        try:
            stop = memory_for(self.ws).auto_index(initial_sync=False)
        except Exception as exc:  # noqa: BLE001 - search still syncs what changed when asked
            log.warning("memory auto-index did not start: %s", exc)
            return
        with self._stops_lock:
            if not self._closing:
                self._stops.append(stop)
                return
        stop()

    def _seen(self, ctx: Any) -> None:
        session = getattr(ctx, "session", None)
        if session is not None:
            connection = getattr(session, "_connection", None)  # SDK 2.3 names no public accessor
            with contextlib.suppress(TypeError):
                self._sessions[connection if connection is not None else session] = session
        if not self._warmed.is_set():
            self._warmed.set()
            threading.Thread(target=self._warm_up, name="kit-mcp-warm", daemon=True).start()

    def _warm_up(self) -> None:
        """After the handshake: start the auto-indexer, bring the index up to date and load the
        model, so the first memory_search does not pay for it (initialize never waits for this)."""
        from kit.memory.service import memory_for

        if self.watch and self._token is not None:
            self._start_indexer()
        if not self.warm:
            return
        try:
            import jsonschema  # noqa: F401 - every call's argument check needs it (~50 ms to import)

            memory = memory_for(self.ws)
            memory.sync()
            if memory.embedder is not None:
                memory.encode_query("warm up")
        except Exception as exc:  # noqa: BLE001 - a search will say what is wrong
            log.warning("memory warm-up failed: %s", exc)

    # ------------------------------------------------------------------ notifications

    def _reloaded(self, result: ReloadResult) -> None:
        """The watcher's callback (its own thread): tell live clients what changed."""
        changed = list(result.changed)
        if not changed or self._token is None or not self._sessions:
            return
        skills = any(p.startswith(("skills/", ".claude/skills/", ".agents/skills/")) for p in changed)
        uris = [FILE_PREFIX + p for p in changed if self._is_resource_file(p)]
        import anyio.from_thread

        async def notify() -> None:
            for session in list(self._sessions.values()):
                try:
                    await session.send_resource_list_changed()
                    for uri in uris:
                        await session.send_resource_updated(uri)
                    if skills:
                        await session.send_prompt_list_changed()
                except Exception as exc:  # noqa: BLE001 - a client that went away
                    log.debug("change notification not sent: %r", exc)

        try:
            anyio.from_thread.run(notify, token=self._token)
        except Exception as exc:  # noqa: BLE001 - the loop may be closing
            log.debug("change notification not sent: %r", exc)

    # ------------------------------------------------------------------ tools

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """One call through Kit's tool pipeline (hooks, truncation), as a client of the workspace."""
        from kit.agent.sessions import sessions_for  # the workspace's one store (session_search)

        tool = self.tools.get(name)
        if tool is not None:  # a client read the schema: a call outside it is refused, not reinterpreted
            from kit.mcp_server.arguments import argument_problems

            problems = argument_problems(name, tool.parameters, arguments)
            if problems:
                return ToolOutcome(name, dict(arguments), False, False,
                                   f"error: invalid arguments for `{name}`: {'; '.join(problems)}")
        ctx = ToolContext(self.ws, tools=self.tools, origin="mcp", interactive=False,
                          sessions=sessions_for(self.ws))
        if tool is not None and tool.serial:
            with self._serial:
                return execute_tool(ctx, name, arguments)
        return execute_tool(ctx, name, arguments)

    # ------------------------------------------------------------------ resources

    def _is_resource_file(self, rel: str) -> bool:
        return rel in PERSONAL_FILES or (rel.startswith("memory/") and is_daily_note(rel))

    def _daily_notes(self) -> list[str]:
        folder = self.ws.root / "memory"
        if not folder.is_dir():
            return []
        rels = [f"memory/{p.name}" for p in folder.iterdir() if p.is_file()]
        return sorted((r for r in rels if is_daily_note(r)), reverse=True)  # newest first

    def resources(self) -> list[tuple[str, str, str, str]]:
        """(uri, name, description, mime type) of everything served, computed now."""
        from kit.kinds import KINDS

        out = []
        for rel in PERSONAL_FILES:
            if (self.ws.root / rel).is_file():
                what = "long-term memory" if rel == "MEMORY.md" else "who the user is"
                out.append((FILE_PREFIX + rel, rel, f"{rel}: {what}", "text/markdown"))
        for rel in self._daily_notes():
            out.append((FILE_PREFIX + rel, rel, f"daily note {rel.removeprefix('memory/')}", "text/markdown"))
        for kind in KINDS:
            out.append((PROMPT_PREFIX + kind, f"prompt:{kind}",
                        f"Kit's system prompt for a {kind} run, as built now", "text/markdown"))
        return out

    def read_resource(self, uri: str) -> tuple[str, str]:
        from kit.errors import NotFoundError

        if uri.startswith(PROMPT_PREFIX):
            from kit.kinds import KINDS
            from kit.prompt.builder import build_prompt

            kind = uri.removeprefix(PROMPT_PREFIX)
            if kind not in KINDS:
                raise NotFoundError(f"Unknown resource: {uri} (run kinds: {', '.join(KINDS)})")
            return build_prompt(self.ws, kind=kind).prompt, "text/markdown"
        rel = uri.removeprefix(FILE_PREFIX) if uri.startswith(FILE_PREFIX) else None
        if rel is None or not self._is_resource_file(rel):
            raise NotFoundError(f"Unknown resource: {uri}")
        from kit.fsutil import read_text

        path = self.ws.path(rel)  # confined: no .., no symlink out
        if not path.is_file():
            raise NotFoundError(f"Unknown resource: {uri} ({rel} does not exist)")
        return read_text(path, display=rel), "text/markdown"

    # ------------------------------------------------------------------ prompts (skills)

    def prompts(self) -> list[tuple[str, str]]:
        from kit.skills.catalog import catalog_for

        return [(s.name, s.description) for s in catalog_for(self.ws) if s.user_invocable and not s.blocked]

    def get_prompt(self, name: str, arguments: str) -> tuple[str, str]:
        """What `/skill NAME arguments` sends the model in Kit's REPL, for the client's model."""
        from kit.agent.sessions import skill_message
        from kit.skills.disclosure import user_skill_view

        view = user_skill_view(self.ws, name)
        return view.description, skill_message(name, view.body, str(arguments or ""))


def _version() -> str:
    """Kit's version, as the installed distribution says (the `kit` package itself is the public
    API above this layer, so it is not imported from here)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kit-agent")
    except PackageNotFoundError:
        return "0+unknown"


def _structured(text: str) -> dict[str, Any] | None:
    """A tool's JSON object result, also as structured content (clients that read it need no parse)."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None

