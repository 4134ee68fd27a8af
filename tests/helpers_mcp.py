"""Helpers for the MCP tests: kit.yaml blocks for real MCP servers, the call log of the SDK test server."""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).parent / "data" / "mcp"
SDK_SERVER = DATA / "sdk_server.py"


def time_server_command() -> str:
    """The console script of the third-party `mcp-server-time` package (the dev extra installs it)."""
    return str(Path(sysconfig.get_path("scripts")) / "mcp-server-time")


def sdk_server(*args: str, **settings: Any) -> dict[str, Any]:
    """An mcp.servers entry running tests/data/mcp/sdk_server.py with this interpreter."""
    return {"command": sys.executable, "args": [str(SDK_SERVER), *args], **settings}


def time_server(**settings: Any) -> dict[str, Any]:
    return {"command": time_server_command(), "args": ["--local-timezone", "UTC"], **settings}


def write_servers(root: Path, servers: dict[str, Any], *, extra: dict[str, Any] | None = None) -> None:
    """Set kit.yaml's mcp.servers to these servers (the rest of the file is kept, comments aside)."""
    path = root / "kit.yaml"
    data: dict[str, Any] = (yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None) or {}
    data["mcp"] = {"servers": servers}
    data.update(extra or {})
    (root / "kit.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def call_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
