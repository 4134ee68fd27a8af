"""`kit mcp serve [--http HOST:PORT]` and `kit mcp list [--cached] [--json]` (docs/mcp.md)."""

from __future__ import annotations

import click

from kit.cli.common import (
    console,
    emit_json,
    fail,
    handle_errors,
    json_option,
    open_workspace,
    workspace_option,
)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.group()
def mcp() -> None:
    """MCP both ways: serve this workspace to Claude Code & co, list the servers the agent uses."""


def _http_address(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, int] | None:
    """--http HOST:PORT, checked while click parses it (so its errors name the option)."""
    if value is None:
        return None
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"expected HOST:PORT such as 127.0.0.1:8765, not {value!r}")
    if host not in LOOPBACK:
        raise click.BadParameter(f"{host} is not a loopback address: Kit serves memory without "
                                 "authentication, so only 127.0.0.1, localhost or ::1")
    return host, int(port)


@mcp.command("serve")
@workspace_option
@click.option("--http", "http", metavar="HOST:PORT", default=None, callback=_http_address,
              help="Serve streamable HTTP at http://HOST:PORT/mcp (loopback only) instead of stdio.")
@click.option("--no-watch", is_flag=True, help="Do not hot-reload the workspace while serving.")
@handle_errors
def serve(workspace, http: tuple[str, int] | None, no_watch: bool) -> None:
    """Serve this workspace over MCP: memory, skills and sessions as tools, MEMORY.md, USER.md,
    daily notes and built prompts as resources, skills as prompts.

    stdio by default (stdout carries only the protocol; messages go to stderr). For Claude Code:
    claude mcp add kit -- kit mcp serve -w PATH
    """
    import logging
    import sys

    logging.basicConfig(level=logging.WARNING, format="kit: %(message)s", stream=sys.stderr)
    ws = open_workspace(workspace)
    try:
        import mcp as _sdk  # noqa: F401 - say what is missing before anything starts
    except ModuleNotFoundError:
        fail("the MCP SDK is not installed: pip install 'kit-agent[mcp]'")

    def ready(url: str) -> None:
        click.echo(f"kit: serving {ws.root} over MCP at {url}; Ctrl-C to stop", err=True)

    from kit import ListenError

    try:
        ws.serve_mcp(http=http, watch=not no_watch, on_ready=ready)
    except ListenError as exc:  # the address --http gave cannot be used
        raise click.BadParameter(str(exc), param_hint="'--http'") from None
    except KeyboardInterrupt:
        pass


@mcp.command("list")
@workspace_option
@click.option("--cached", is_flag=True, help="Do not start the servers: show the tools Kit cached.")
@json_option
@handle_errors
def list_cmd(workspace, cached: bool, as_json: bool) -> None:
    """The MCP servers in kit.yaml (mcp.servers): state, policy and tools. Each enabled server is
    started to ask for its tools (in parallel) unless --cached; exit 1 when one fails to start."""
    ws = open_workspace(workspace)
    servers = ws.mcp_servers(probe=not cached)
    failed = [s for s in servers if s.enabled and s.state == "failed"]
    if as_json:
        emit_json({"servers": [s.to_json() for s in servers]})
        if failed:
            raise SystemExit(1)
        return
    out = console()
    if not servers:
        out.print("no MCP servers configured (add them under mcp.servers in kit.yaml; see docs/mcp.md)")
        return
    from rich.markup import escape

    styles = {"running": "green", "ready": "green", "failed": "bold red", "crashed": "red",
              "disabled": "dim", "unknown": "yellow"}
    for s in servers:
        info = " ".join(str(v) for v in (s.server.get("name"), s.server.get("version")) if v)
        # the state word --json gives (docs/mcp.md): running, ready, failed, …
        out.print(f"[bold]{escape(s.name)}[/] [{styles.get(s.state, '')}]{s.state}[/] "
                  f"[dim]{s.transport} {escape(s.target)}  policy {s.policy}"
                  + (f"  ({escape(info)})" if info else "") + "[/]")
        if s.error:
            out.print(f"    [red]error:[/] {escape(s.error)}")
        for t in s.tools:
            style = {"allow": "green", "ask": "yellow", "deny": "red"}[t.policy]
            first = " ".join(t.description.split())[:80]
            out.print(f"    {escape(t.kit_name):<40} [{style}]{t.policy:<5}[/] [dim]{escape(first)}[/]")
    if failed:
        raise SystemExit(1)
