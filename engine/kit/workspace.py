"""The Workspace facade: the one door to a Kit workspace.

    from kit import Workspace
    ws = Workspace.open("~/agent")
    ws.prompt("default").prompt          # the system prompt and its budget report
    ws.memory.search("deploy checklist") # hybrid search over the notes
    ws.skills, ws.hooks, ws.sessions     # the skill catalog, the hook registry, the transcripts
    ws.agent(model="script:turns.yaml").turn("hello")
    ws.dream(dry_run=True), ws.doctor(), ws.watch(on_reload=print)

`Workspace` is `kit.core.WorkspaceCore` (snapshot, config, reload, writes, state) plus the
subsystems. They are imported on first use, so opening a workspace stays cheap and `kit --help`
never pays for them; the memory service and the session store are built once per workspace and
die with it. Subsystems never import this module: they are written against `WorkspaceCore`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kit.core import CONFIG_FILE, Listener, ReloadResult, WorkspaceCore, find_workspace
from kit.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from kit.agent.loop import Agent
    from kit.agent.sessions import SessionStore
    from kit.dreaming.cron import CronResult
    from kit.dreaming.explain import Explanation
    from kit.dreaming.runner import DreamResult
    from kit.dreaming.store import VerifyItem
    from kit.dreaming.verify import VerifyOutcome
    from kit.hooks.registry import HookRegistry
    from kit.mcp_client.manager import McpServerStatus
    from kit.memory.service import Memory
    from kit.problems import Problem
    from kit.prompt.builder import PromptResult
    from kit.skills.catalog import SkillCatalog
    from kit.watch import Watcher

__all__ = ["CONFIG_FILE", "Listener", "ReloadResult", "Workspace", "find_workspace"]


class Workspace(WorkspaceCore):
    """A loaded workspace and its subsystems (see the module docstring)."""

    # ------------------------------------------------------------------ subsystems

    @property
    def memory(self) -> Memory:
        """Daily notes, the index and search (one per workspace)."""
        from kit.memory.service import memory_for

        return memory_for(self)

    @property
    def skills(self) -> SkillCatalog:
        """The skill catalog, rebuilt when the snapshot or the trust store changes."""
        from kit.skills.catalog import catalog_for

        return catalog_for(self)

    @property
    def hooks(self) -> HookRegistry:
        """The hook registry of the current snapshot."""
        from kit.hooks.registry import registry_for

        return registry_for(self)

    @property
    def sessions(self) -> SessionStore:
        """Conversation transcripts and their search index (one per workspace)."""
        from kit.agent.sessions import sessions_for

        return sessions_for(self)

    # ------------------------------------------------------------------ actions

    def prompt(self, kind: str = "default", **options: Any) -> PromptResult:
        """The system prompt for a run kind, with its budget report."""
        from kit.prompt.builder import build_prompt

        return build_prompt(self, kind=kind, **options)

    def dream(self, **options: Any) -> DreamResult:
        """Run the dreaming phases (`phases=`, `dry_run=`, `progress=` …; see kit.dreaming.runner)."""
        from kit.dreaming.runner import run_dream

        return run_dream(self, **options)

    def explain(self, target: str) -> Explanation:
        """`kit memory explain`: one promotion candidate (a key or some of its text) — signals,
        credit, gates and recall history (`.to_json()` for the CLI's JSON shape)."""
        from kit.dreaming.explain import explain

        return explain(self, target)

    def to_verify(self, *, everything: bool = False) -> list[VerifyItem]:
        """`kit memory verify`: the contradictions dreaming queued instead of promoting (pending
        ones; accepted and rejected too with `everything`)."""
        from kit.dreaming.verify import items

        return items(self, everything=everything)

    def verify(self, action: str, item_id: int) -> VerifyOutcome:
        """`kit memory verify accept|reject|keep-both N`: accept promotes item N's new value and
        retires the entry (or your line) it contradicts to the archive; reject keeps MEMORY.md as it
        is; keep-both says both are true: MEMORY.md keeps the old line, the pair is never queued
        again and the new text is promoted by a dream like any other candidate."""
        from kit.dreaming import verify

        actions = {"accept": verify.accept, "reject": verify.reject, "keep-both": verify.keep_both}
        if action not in actions:
            raise ValueError(f"verify action must be accept, reject or keep-both, not {action!r}")
        return actions[action](self, item_id)

    def cron(self, action: str, *, systemd: bool = False) -> CronResult:
        """`kit cron install|show|uninstall`: dreaming on dreaming.schedule from crontab (or a
        user systemd timer)."""
        from kit.dreaming import cron

        actions = {"install": (cron.install_cron, cron.install_systemd),
                   "show": (cron.show_cron, cron.show_systemd),
                   "uninstall": (cron.uninstall_cron, cron.uninstall_systemd)}
        if action not in actions:
            raise ValueError(f"cron action must be one of {', '.join(actions)}, not {action!r}")
        return actions[action][systemd](self)

    def doctor(self, *, offline: bool = False) -> list[Problem]:
        """Every subsystem's checks, read-only: nothing is written. `offline`: no server is asked
        (the checks that each configured model's base URL answers are skipped)."""
        from kit.doctor import run_checks

        return run_checks(self, offline=offline)

    def agent(self, **options: Any) -> Agent:
        """An agent on this workspace (`model=`, `session_key=`, `kind=` …; see kit.agent.loop.Agent).
        Close it when done (`agent.close()`). A `model=` that cannot name a model is a ConfigError
        here, not at the first turn (kit.yaml's model is read at each turn: it may be fixed meanwhile)."""
        from kit.agent.loop import Agent

        if options.get("model"):
            self.check_model(options["model"])
        return Agent(self, **options)

    def check_model(self, spec: str) -> None:
        """ConfigError when `spec` cannot name a model (`kit run --model` checks before a session opens);
        a provider kit.yaml declares but an error in it left out is said so, not "unknown"."""
        from kit.providers.registry import check_spec

        try:
            check_spec(spec, self.config, root=self.root)
        except ConfigError as exc:
            from kit.providers.failover import left_out

            raise left_out(self, spec.partition("/")[0], exc) from None

    def config_notices(self) -> list[str]:
        """A warning per configuration problem (file:line) with what is in force instead; empty
        when every layer is valid."""
        if not self.snapshot.config_issues:
            return []
        from kit.agent.preflight import config_notices

        return config_notices(self)

    def load_notices(self) -> list[str]:
        """A warning per load error of the workspace (kit.yaml, a document, a skill) with what is in
        force instead: the lines an interactive session starts with."""
        from kit.agent.preflight import load_notices

        return load_notices(self)

    def run_notices(self, model: str | None = None) -> list[str]:
        """What a one-shot run must say first: the script label, load errors, skipped untrusted hooks."""
        from kit.agent.preflight import run_notices

        return run_notices(self, model)

    def rule_errors(self, paths: Iterable[str] | None = None, *, besides: Iterable[Problem] = ()) -> list[Problem]:
        """The errors the skills and hooks find in their files beyond parsing — a name that is not
        its folder's, a bad timeout, a skill its scan blocks — in `paths` (workspace-relative), or
        everywhere; `besides`: problems already said (a reload's own), left out. A reload reads
        such a file without error; the skill or hook keeps its last good version in force (or is
        not loaded), and `kit watch`, `kit serve` and the REPL say so."""
        catalog = self.skills  # (each read checks the trust store's stamp)
        found = [*catalog.errors, *(s.blocked_by for s in catalog if s.blocked_by is not None)]
        found += [p for hook in self.hooks.invalid() for p in hook.problems if p.severity == "error"]
        said = {str(p) for p in besides}
        wanted = None if paths is None else set(paths)
        return [p for p in found if (wanted is None or p.path in wanted) and str(p) not in said]

    def watch(self, on_reload: Callable[[ReloadResult], None] | None = None, **options: Any) -> Watcher:
        """A hot-reload watcher (not started): `with ws.watch(on_reload=print): ...` or `.start()`.
        Watching starts the workspace's lifecycle events (workspace:loaded once, then
        workspace:changed and config:reloaded on its reloads; kit.hooks.lifecycle)."""
        from kit.hooks.lifecycle import start
        from kit.watch import Watcher

        start(self, by="watch")
        return Watcher(self, on_reload=on_reload, **options)

    # ------------------------------------------------------------------ MCP

    def mcp_servers(self, *, probe: bool = True) -> list[McpServerStatus]:
        """`kit mcp list`: the MCP servers kit.yaml configures, their state and tools. With `probe`
        each enabled server is started (in parallel) and stopped again; without, the tools are
        what Kit cached when it last started them."""
        from kit.mcp_client.manager import McpClients

        clients = McpClients(self)
        try:
            return clients.statuses(probe=probe)
        finally:
            clients.close()

    def serve_mcp(self, *, http: tuple[str, int] | None = None, watch: bool = True,
                  on_ready: Callable[[str], None] | None = None) -> None:
        """`kit mcp serve`: this workspace as an MCP server, on stdio (default) or streamable HTTP
        at http://HOST:PORT/mcp; returns when the client hangs up (or on SIGINT/SIGTERM for HTTP)."""
        from kit.mcp_server.server import KitMcpServer

        server = KitMcpServer(self, watch=watch)
        if http is None:
            server.run_stdio()
        else:
            server.run_http(http[0], http[1], on_ready=on_ready)

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close the calling thread's connections held by the workspace's services."""
        for key in ("memory", "sessions"):
            service = self._owned.get(key)
            if service is not None:
                service.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_workspace(path: str | None = None, *, flags: dict[str, Any] | None = None,
                   embedders: Any = None) -> Workspace:
    """`path`, else $KIT_WORKSPACE, else the nearest parent of the current folder with a kit.yaml."""
    root = path if path is not None else find_workspace()
    return Workspace.open(root, flags=flags, embedders=embedders)
