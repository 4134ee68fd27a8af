"""A real MCP server written with the official SDK (MCPServer), for Kit's MCP client tests.

    python sdk_server.py [--exit-on-start] [--hang-on-start] [--name NAME]

Every call is appended to $KIT_TEST_CALL_LOG (when set), so a test can tell whether a call reached
the server at all (a denied or refused call must not); every start is a line in $KIT_TEST_START_LOG
(when set), so a test can tell whether the process was spawned at all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--exit-on-start", action="store_true")
parser.add_argument("--hang-on-start", action="store_true")
parser.add_argument("--name", default="kit-test-server")
opts = parser.parse_args()

if os.environ.get("KIT_TEST_START_LOG"):
    with open(os.environ["KIT_TEST_START_LOG"], "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")

if opts.exit_on_start:
    print("fatal: the test server was told to exit before serving", file=sys.stderr, flush=True)
    sys.exit(1)
if opts.hang_on_start:
    time.sleep(3600)  # never answers initialize

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp_types import ToolAnnotations  # noqa: E402

server = MCPServer(opts.name, version="1.2.3", instructions="A server for Kit's tests.")


def _log(tool: str, **arguments) -> None:
    path = os.environ.get("KIT_TEST_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"tool": tool, "arguments": arguments, "pid": os.getpid()}) + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers. Returns their sum."""
    _log("add", a=a, b=b)
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    _log("echo", text=text)
    return text


@server.tool()
def shout(text: str) -> str:
    """Return the text in capitals (a second tool for per-tool policies)."""
    _log("shout", text=text)
    return text.upper()


@server.tool()
def env(name: str) -> str:
    """The value of one environment variable of this server process."""
    _log("env", name=name)
    return os.environ.get(name, "<unset>")


@server.tool()
def fail(message: str) -> str:
    """Fail with the message (a tool-level error)."""
    _log("fail", message=message)
    raise ToolError(message)


@server.tool()
def big(chars: int) -> str:
    """Return a long text of `chars` characters."""
    _log("big", chars=chars)
    return "".join(f"line {i:06d} of a long result\n" for i in range(chars // 27 + 1))[:chars]


@server.tool()
def slow(seconds: float) -> str:
    """Sleep, then answer (timeouts)."""
    _log("slow", seconds=seconds)
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Kill this server mid-call."""
    _log("crash")
    print("the test server crashes now", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def pid() -> int:
    """This server's process id (restarts)."""
    _log("pid")
    return os.getpid()


if __name__ == "__main__":
    server.run()
