"""`kit doctor` on the configured MCP servers: each one is started (in parallel, read-only: its
stderr goes to a temporary file) and a server that fails to start is one line naming why.
`kit doctor --offline` starts the stdio servers (local processes) but asks no URL."""

from __future__ import annotations

import shutil

from kit.core import WorkspaceCore
from kit.mcp_client.servers import server_specs
from kit.paths import CONFIG_FILE
from kit.problems import Problem


def doctor_checks(ws: WorkspaceCore, *, offline: bool = False) -> list[Problem]:
    specs = [s for s in server_specs(ws.config) if s.enabled]
    if not specs:
        return []  # nothing configured: the SDK is never imported
    findings: list[Problem] = []

    def at(name: str) -> dict:
        """Where the server's entry is (`mcp.servers.<name>:` in kit.yaml or the user config)."""
        path, line = ws.config.where(f"mcp.servers.{name}")
        return {"path": path or CONFIG_FILE, "line": line}

    for spec in specs:
        missing = spec.missing_env()
        if missing:
            findings.append(Problem(area="mcp", severity="warning", **at(spec.name),
                                    message=f"MCP server '{spec.name}': {', '.join(missing)} not set in Kit's "
                                            "environment (its env/headers pass them on empty)"))
        if spec.command and "/" not in spec.command and shutil.which(spec.command) is None:
            findings.append(Problem(area="mcp", **at(spec.name),
                                    message=f"MCP server '{spec.name}' failed to start: command not found: "
                                            f"{spec.command}; the agent runs without its tools"))
    unstartable = {p.message.split("'")[1] for p in findings if p.severity == "error"}
    try:
        import mcp  # noqa: F401
    except ModuleNotFoundError:
        path, line = ws.config.where("mcp.servers")
        return findings + [Problem(area="mcp", path=path or CONFIG_FILE, line=line,
                                   message="mcp.servers is configured but the MCP SDK is not installed: "
                                           "pip install 'kit-agent[mcp]'; the agent runs without those servers")]
    from kit.mcp_client.manager import McpClients

    clients = McpClients(ws, use_cache=False)
    try:
        # --offline asks no URL; what kit.yaml says of a URL server (an unset ${VAR}) is still said
        asked = {s.name for s in specs if not (offline and s.url)}
        if not asked:
            return findings
        for status in clients.statuses(probe=True, only=asked):
            if status.name in asked and status.enabled and status.error and status.name not in unstartable:
                findings.append(Problem(area="mcp", **at(status.name),
                                        message=f"{status.error}; the agent runs without its tools"))
    finally:
        clients.close()
    return findings
