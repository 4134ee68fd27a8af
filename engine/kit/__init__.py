"""Kit: a file-system-native, Markdown-driven agent kit.

The public API is what this package exports:

    from kit import Workspace, KitError
    with Workspace.open("~/agent") as ws:
        print(ws.prompt().prompt)
        for hit in ws.memory.search("deploy checklist").results:
            print(hit.path, hit.start_line, hit.snippet)

Names load on first use (PEP 562), so `import kit` — and `kit --help` — stays cheap.
Everything under `kit.<subsystem>` is internal; the CLI (`kit.cli`) uses only these names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # the facade
    "Workspace": "kit.workspace",
    "ReloadResult": "kit.core",
    "find_workspace": "kit.core",
    "open_workspace": "kit.workspace",
    # errors (the CLI maps each to one line and an exit code)
    "KitError": "kit.errors",
    "WorkspaceError": "kit.errors",
    "ConfigError": "kit.errors",
    "DocumentError": "kit.errors",
    "PathEscapeError": "kit.errors",
    "BusyError": "kit.errors",
    "NotFoundError": "kit.errors",
    "ListenError": "kit.errors",
    "StateError": "kit.errors",
    # result types a caller meets
    "Snapshot": "kit.snapshot",
    "Document": "kit.documents",
    "Config": "kit.config",
    "PromptResult": "kit.prompt.builder",
    "SkillCatalog": "kit.skills.catalog",
    "Skill": "kit.skills.catalog",
    "HookRegistry": "kit.hooks.registry",
    "Memory": "kit.memory.service",
    "SearchResult": "kit.memory.search",
    "SyncResult": "kit.memory.index",
    "WriteResult": "kit.memory.daily",
    "DreamResult": "kit.dreaming.runner",
    "Explanation": "kit.dreaming.explain",
    "VerifyItem": "kit.dreaming.store",
    "VerifyOutcome": "kit.dreaming.verify",
    "Agent": "kit.agent.loop",
    "TurnResult": "kit.agent.loop",
    "cut_marker": "kit.agent.loop",
    "GenerationSettings": "kit.providers.base",
    "SessionStore": "kit.agent.sessions",
    "Watcher": "kit.watch",
    "Problem": "kit.problems",
    "Tool": "kit.tools",
    "ToolRegistry": "kit.tools",
    "RunKind": "kit.kinds",
    "KINDS": "kit.kinds",
    "McpServerStatus": "kit.mcp_client.manager",
    # what the commands need besides the workspace (the CLI imports nothing else)
    "SkillCheck": "kit.skills.catalog",
    "SkillFile": "kit.skills.disclosure",
    "skill_view": "kit.skills.disclosure",
    "new_skill": "kit.skills.manage",
    "trust_skill": "kit.skills.manage",
    "unknown_event": "kit.hooks.events",
    "TemplateWatch": "kit.prompt.builder",
    "Scheduler": "kit.dreaming.schedule",
    "one_line": "kit.dreaming.managed",
    "gate_reason": "kit.dreaming.ranking",
    "action_words": "kit.dreaming.deep",
    "CronResult": "kit.dreaming.cron",
    "init_workspace": "kit.init",
    "plan_openclaw": "kit.importers",
    "plan_hermes": "kit.importers",
    "apply_plan": "kit.importers",
    "ImportPlan": "kit.importers",
    "ImportResult": "kit.importers",
    "NEVER_OVERWRITTEN": "kit.init",
    "estimate_tokens": "kit.tokens",
    "now": "kit.clock",
    "plural": "kit.wording",
    "count_text": "kit.wording",
    # progress events (long calls take progress=callback; the library never prints)
    "Step": "kit.progress",
    "Status": "kit.progress",
    "ProgressCallback": "kit.progress",
    # the threat scan every door uses (memory writes, file tools, recall, MCP writes, imports)
    "scan_threats": "kit.threats",
    "Threat": "kit.threats",
    "ThreatError": "kit.threats",
    # the fleet is an extra: `from kit import Fleet` imports kit.fleet (not Celery) only when asked
    "Fleet": "kit.fleet",
}

__all__ = [  # a literal, so linters and readers see it; a test checks it matches _EXPORTS
    "__version__",
    "action_words",
    "Agent",
    "BusyError",
    "Config",
    "ConfigError",
    "count_text",
    "CronResult",
    "cut_marker",
    "Document",
    "DocumentError",
    "DreamResult",
    "estimate_tokens",
    "Explanation",
    "find_workspace",
    "Fleet",
    "gate_reason",
    "GenerationSettings",
    "HookRegistry",
    "apply_plan",
    "ImportPlan",
    "ImportResult",
    "init_workspace",
    "KINDS",
    "plan_hermes",
    "plan_openclaw",
    "plural",
    "KitError",
    "ListenError",
    "McpServerStatus",
    "Memory",
    "NEVER_OVERWRITTEN",
    "new_skill",
    "NotFoundError",
    "now",
    "one_line",
    "open_workspace",
    "PathEscapeError",
    "Problem",
    "ProgressCallback",
    "PromptResult",
    "ReloadResult",
    "RunKind",
    "scan_threats",
    "Scheduler",
    "SearchResult",
    "SessionStore",
    "Skill",
    "skill_view",
    "SkillCatalog",
    "SkillCheck",
    "SkillFile",
    "Snapshot",
    "StateError",
    "Status",
    "Step",
    "SyncResult",
    "TemplateWatch",
    "Threat",
    "ThreatError",
    "Tool",
    "ToolRegistry",
    "trust_skill",
    "TurnResult",
    "unknown_event",
    "VerifyItem",
    "VerifyOutcome",
    "Watcher",
    "Workspace",
    "WorkspaceError",
    "WriteResult",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - what type checkers (and the import graph) see
    from kit.agent.loop import Agent, TurnResult, cut_marker
    from kit.agent.sessions import SessionStore
    from kit.clock import now
    from kit.config import Config
    from kit.core import ReloadResult, find_workspace
    from kit.documents import Document
    from kit.dreaming.cron import CronResult
    from kit.dreaming.explain import Explanation
    from kit.dreaming.managed import one_line
    from kit.dreaming.ranking import gate_reason
    from kit.dreaming.runner import DreamResult
    from kit.dreaming.schedule import Scheduler
    from kit.dreaming.store import VerifyItem
    from kit.dreaming.verify import VerifyOutcome
    from kit.errors import (
        BusyError,
        ConfigError,
        DocumentError,
        KitError,
        NotFoundError,
        PathEscapeError,
        StateError,
        WorkspaceError,
    )
    from kit.fleet import Fleet
    from kit.hooks.events import unknown_event
    from kit.hooks.registry import HookRegistry
    from kit.importers import ImportPlan, ImportResult, apply_plan, plan_hermes, plan_openclaw
    from kit.init import NEVER_OVERWRITTEN, init_workspace
    from kit.kinds import KINDS, RunKind
    from kit.mcp_client.manager import McpServerStatus
    from kit.memory.daily import WriteResult
    from kit.memory.index import SyncResult
    from kit.memory.search import SearchResult
    from kit.memory.service import Memory
    from kit.problems import Problem
    from kit.progress import ProgressCallback, Status, Step
    from kit.prompt.builder import PromptResult, TemplateWatch
    from kit.providers.base import GenerationSettings
    from kit.skills.catalog import Skill, SkillCatalog, SkillCheck
    from kit.skills.disclosure import SkillFile, skill_view
    from kit.skills.manage import new_skill, trust_skill
    from kit.snapshot import Snapshot
    from kit.threats import Threat, ThreatError, scan_threats
    from kit.tokens import estimate_tokens
    from kit.tools import Tool, ToolRegistry
    from kit.watch import Watcher
    from kit.workspace import Workspace, open_workspace
