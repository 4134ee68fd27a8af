"""Before a run: what the person must be told first.

`kit run` asks these before it opens a session (a bad `--model` is a usage error found before
anything is written: `ws.check_model`, `kit.providers.registry.check_spec`), and a one-shot run (nobody is asked anything) announces every load problem
and every workspace hook that will not run (spec §6, principle 5).
"""

from __future__ import annotations

from collections.abc import Iterable

from kit.core import WorkspaceCore
from kit.problems import Problem
from kit.providers.script import LABEL


def in_force(ws: WorkspaceCore, problem: Problem) -> str:
    """What a run just opened does about a load problem. There is no last good version yet: a broken
    setting or document is simply left out (the config starts from every valid value of every
    layer, else the defaults)."""
    if problem.area == "config":
        if "workspace" not in set(ws.config.sources.values()):
            return "ignored until fixed; no kit.yaml setting applies"
        return "ignored until fixed; the valid settings apply"
    if problem.path and ws.snapshot.get(problem.path) is not None:
        return "last good version in force"
    return "ignored until fixed"


def _warnings(ws: WorkspaceCore, problems: Iterable[Problem]) -> list[str]:
    return [f"warning: {problem} ({in_force(ws, problem)})" for problem in problems]


def config_notices(ws: WorkspaceCore) -> list[str]:
    """One warning per kit.yaml (or user file, env, flag) problem and what is in force instead:
    every command that acts on settings says it, so a typo never silently means the defaults."""
    return _warnings(ws, ws.snapshot.config_issues)


def load_notices(ws: WorkspaceCore) -> list[str]:
    """One warning per load error (config or document) with what is in force instead."""
    return _warnings(ws, ws.snapshot.errors)


def run_notices(ws: WorkspaceCore, model: str | None = None) -> list[str]:
    """The status lines a one-shot run starts with: the script provider's label, each load error
    and what is in force instead, each untrusted workspace hook that is skipped."""
    from kit.hooks.registry import registry_for

    notices = []
    spec = model or ws.config.agent.model
    if spec.startswith("script:"):
        notices.append(f"model {spec}: {LABEL}")
    notices.extend(load_notices(ws))
    notices.extend(
        f"hook {hook.name} does not run: its workspace code is not trusted "
        f"(review hooks/{hook.name}/, then `kit hooks trust {hook.name}`)"
        for hook in registry_for(ws).untrusted()
    )
    if ws.config.hooks.claude_code:  # off (the default): kit.hooks.claude is not even imported
        registry = registry_for(ws)
        claude = registry.claude.untrusted_notice(registry.trust_store)
        if claude:
            notices.append(claude)
    return notices
