"""Before a run: what the person must be told first.

`kit run` asks these before it opens a session (a bad `--model` is a usage error found before
anything is written: `ws.check_model`, `kit.providers.registry.check_spec`), and a one-shot run (nobody is asked anything) announces every load problem
and every workspace hook that will not run (spec §6, principle 5).
"""

from __future__ import annotations

from collections.abc import Iterable

from kit.core import WorkspaceCore
from kit.errors import ConfigError
from kit.problems import Problem
from kit.providers.script import LABEL
from kit.snapshot import Snapshot, config_problem_text


def _in_force(snapshot: Snapshot, problem: Problem) -> str:
    """A load problem and what is in force instead: a config problem in `config_problem_text`'s
    words; a document keeps its last good version if it had one, else (a run just opened has
    none) it is left out."""
    if problem.area == "config":
        return config_problem_text(problem, snapshot)
    if problem.path and snapshot.get(problem.path) is not None:
        return f"{problem} (last good version in force)"
    return f"{problem} (ignored until fixed)"


def _warnings(ws: WorkspaceCore, problems: Iterable[Problem]) -> list[str]:
    snapshot = ws.snapshot
    return [f"warning: {_in_force(snapshot, problem)}" for problem in problems]


def config_notices(ws: WorkspaceCore) -> list[str]:
    """One warning per kit.yaml (or user file, env, flag) problem and what is in force instead:
    every command that acts on settings says it, so a typo never silently means the defaults."""
    return _warnings(ws, ws.snapshot.config_issues)


def load_notices(ws: WorkspaceCore) -> list[str]:
    """One warning per load error (config or document) with what is in force instead."""
    return _warnings(ws, ws.snapshot.errors)


def refusal(ws: WorkspaceCore) -> ConfigError | None:
    """Why `kit run` must not start: a configuration file that does not load at all (invalid
    YAML …). None of its settings would apply — agent.model, the providers, tools.exec — so the
    message would go to a model the user did not choose, under a policy they did not set. A bad
    value in a file that loads leaves its valid settings in force: that is a warning, not this."""
    # the model client's module: imported only when a run starts, not by every command's warnings
    from kit.providers.failover import unloaded_config

    problem = unloaded_config(ws)
    if problem is None:
        return None
    return ConfigError(f"{problem.message}; kit run does not start until this file loads: none of its "
                       "settings (agent.model, providers, tools.exec …) would apply",
                       path=problem.path, line=problem.line)


def run_notices(ws: WorkspaceCore, model: str | None = None) -> list[str]:
    """The status lines a run starts with: the script provider's label, each load error and what
    is in force instead, each untrusted workspace hook that is skipped. Raises the `refusal`
    ConfigError instead when the run must not start at all."""
    from kit.hooks.registry import registry_for

    refused = refusal(ws)
    if refused is not None:
        raise refused
    notices = []
    spec = model or ws.config.agent.model
    if spec.startswith("script:"):
        notices.append(f"model {spec}: {LABEL}")
    notices.extend(load_notices(ws))
    notices.extend(  # an invalid hook's first error: it never runs (doctor and `kit hooks list` say all)
        f"hook {hook.name} does not run: {next(p for p in hook.problems if p.severity == 'error')}"
        for hook in registry_for(ws).invalid() if any(p.severity == "error" for p in hook.problems)
    )
    notices.extend(
        f"hook {hook.name} does not run: its workspace code is not trusted "
        f"(review hooks/{hook.name}/, then `kit hooks trust {hook.name}`)"
        for hook in registry_for(ws).untrusted()
    )
    if ws.config.hooks.claude_code and ws.config.hooks.enabled:  # off (the default): not even imported
        registry = registry_for(ws)
        # a settings file whose JSON does not parse runs none of its hooks: said before the turn
        # (a single ignored entry is for `kit hooks list` and doctor)
        notices.extend(str(problem) for problem in registry.settings_problems(whole=True))
        claude = registry.claude.untrusted_notice(registry.trust_store)
        if claude:
            notices.append(claude)
    return notices
