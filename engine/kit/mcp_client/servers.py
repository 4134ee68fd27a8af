"""The MCP servers kit.yaml configures (`mcp.servers.<name>`), as frozen specs.

Reading them never imports the SDK nor starts anything: the agent, `kit mcp list` and `kit doctor`
all start from these specs. A spec's `fingerprint` names everything that decides which process (or
URL) answers, so a cached tool list is used only for the server it came from.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.config import Config
from kit.fsutil import sha1_hex

POLICIES = ("allow", "ask", "deny")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str | None
    args: tuple[str, ...]
    env: Mapping[str, str]  # as written: ${VAR} references are expanded when the server starts
    cwd: str | None
    url: str | None
    headers: Mapping[str, str]
    enabled: bool
    policy: str  # allow | ask | deny: what the agent may call without asking
    tools: Mapping[str, str] = field(default_factory=dict)  # per-tool overrides (the server's names)
    timeout_s: float = 60.0
    startup_timeout_s: float = 30.0

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    @property
    def target(self) -> str:
        """What `kit mcp list` shows: the command line, or the URL."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args]).strip()

    @property
    def fingerprint(self) -> str:
        """A hash of what decides which server answers (not the policy or timeouts)."""
        material = [self.command, list(self.args), dict(sorted(self.env.items())), self.cwd, self.url,
                    dict(sorted(self.headers.items()))]
        return sha1_hex(json.dumps(material, sort_keys=True), 16)

    def policy_for(self, tool: str) -> str:
        """The effective policy of one of the server's tools: deny wins (a server denied is denied
        whatever its tools say, and a tool denied is denied whatever the server allows); else the
        tool's own override, else the server's policy."""
        own = self.tools.get(tool)
        if self.policy == "deny" or own == "deny":
            return "deny"
        return own or self.policy

    def working_dir(self, root: Path) -> Path:
        return (root / self.cwd).resolve() if self.cwd else root

    def expanded_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """`env` with ${VAR} replaced by Kit's own environment (a variable that is unset: empty)."""
        return _expand(self.env, environ)

    def expanded_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        return _expand(self.headers, environ)

    def missing_env(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The ${VAR} references in env and headers that Kit's environment does not set."""
        source = os.environ if environ is None else environ
        names = {m.group(1) for v in (*self.env.values(), *self.headers.values()) for m in _ENV_REF.finditer(v)}
        return sorted(n for n in names if not source.get(n))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "transport": self.transport, "target": self.target,
                "enabled": self.enabled, "policy": self.policy, "tools": dict(self.tools),
                "timeout_s": self.timeout_s, "startup_timeout_s": self.startup_timeout_s}


def _expand(values: Mapping[str, str], environ: Mapping[str, str] | None) -> dict[str, str]:
    source = os.environ if environ is None else environ
    return {k: _ENV_REF.sub(lambda m: source.get(m.group(1), ""), v) for k, v in values.items()}


def server_specs(config: Config) -> tuple[ServerSpec, ...]:
    """Every server under mcp.servers (enabled or not), sorted by name. Defaults come from the
    config schema (kit.config.MCP_SERVER_FIELDS), which fills every key."""
    servers = config.mcp.servers
    out = []
    for name in sorted(servers):
        raw = servers[name]
        if not isinstance(raw, Mapping):
            continue
        out.append(ServerSpec(
            name=name, command=raw["command"], args=tuple(raw["args"]), env=dict(raw["env"]),
            cwd=raw["cwd"], url=raw["url"], headers=dict(raw["headers"]), enabled=bool(raw["enabled"]),
            policy=raw["policy"], tools=dict(raw["tools"]), timeout_s=float(raw["timeout_s"]),
            startup_timeout_s=float(raw["startup_timeout_s"]),
        ))
    return tuple(out)
