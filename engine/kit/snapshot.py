"""An immutable, versioned view of the workspace documents Kit loads into memory.

Tracked: top-level Markdown files, `templates/*.j2`, workspace skills (`skills/`, `.claude/skills/`,
`.agents/skills/`) and hooks (`hooks/*/HOOK.md`). Daily notes are not here: the memory index
owns them. A document that fails to load keeps its last good version (if any) and adds a Problem.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kit.config import Config
from kit.documents import Document
from kit.paths import CONFIG_FILE
from kit.problems import Problem, of_severity

TRACKED_PATTERNS = (
    "*.md",
    "templates/*.j2",
    "skills/*/SKILL.md",
    ".claude/skills/*/SKILL.md",
    ".agents/skills/*/SKILL.md",
    "hooks/*/HOOK.md",
)
NO_FRONTMATTER = ("templates/*.j2",)


# What is in force while a configuration layer (kit.yaml, the user file, env, flags) has a problem:
# `Snapshot.config_state`, worded by `config_in_force` alone.
CONFIG_OK = ""  # no problem
CONFIG_VALID = "valid"  # first load: every valid value of every layer (one typo keeps the rest)
CONFIG_DEFAULTS = "defaults"  # first load whose valid values contradict each other: the defaults alone
CONFIG_KEPT = "kept"  # a reload failed: the last good configuration stays (kit serve, watch, a REPL)
CONFIG_EARLIER = "earlier"  # a reload failed, and what was in force before had problems too


def is_tracked(rel: str) -> bool:
    """True for paths the snapshot holds (fnmatch's * would cross '/', so compare depth too)."""
    depth = rel.count("/")
    return any(fnmatch.fnmatchcase(rel, p) and p.count("/") == depth for p in TRACKED_PATTERNS)


def wants_frontmatter(rel: str) -> bool:
    return not any(fnmatch.fnmatchcase(rel, p) for p in NO_FRONTMATTER)


@dataclass(frozen=True)
class Snapshot:
    version: int
    root: Path
    config: Config
    documents: Mapping[str, Document]
    issues: tuple[Problem, ...] = ()  # document and config problems, current as of this version
    config_state: str = CONFIG_OK  # what is in force while config_issues is not empty (CONFIG_*)

    def get(self, name: str) -> Document | None:
        return self.documents.get(name)

    def names(self, pattern: str = "*") -> list[str]:
        depth = pattern.count("/")
        return sorted(
            n for n in self.documents if fnmatch.fnmatchcase(n, pattern) and n.count("/") == depth
        )

    @property
    def config_issues(self) -> tuple[Problem, ...]:
        """Problems with the configuration layers (`config_in_force` says what applies instead)."""
        return tuple(i for i in self.issues if i.area == "config")

    @property
    def errors(self) -> tuple[Problem, ...]:
        return of_severity(self.issues, "error")


def config_in_force(snapshot: Snapshot, problem: Problem | None = None) -> str:
    """What applies while a configuration layer has a problem: the one wording of every command's
    warning, `kit config show`, the prompt report and a session's status line. True to the case: a
    first load keeps every valid setting; a broken edit seen by a reload keeps the configuration
    from before it. "No kit.yaml setting applies" only of a problem in the workspace's kit.yaml
    (`problem`), when none of its settings does: an error in the user file or the environment said
    it while the user file's valid settings applied."""
    state = snapshot.config_state
    if state == CONFIG_KEPT:
        return "ignored until fixed; the last good configuration stays in force"
    if state == CONFIG_EARLIER:
        return "ignored until fixed; the configuration from before this edit stays in force"
    if state == CONFIG_DEFAULTS:
        return "ignored until fixed; the defaults apply"
    if (problem is not None and problem.path == CONFIG_FILE
            and "workspace" not in set(snapshot.config.sources.values())):
        return "ignored until fixed; no kit.yaml setting applies"
    return "ignored until fixed; the valid settings apply"


def config_problem_text(problem: Problem, snapshot: Snapshot) -> str:
    """`kit.yaml:3: unknown key … (ignored until fixed; the valid settings apply)`: a config
    problem and what is in force instead (the CLI puts `kit: warning: ` before it on stderr)."""
    return f"{problem} ({config_in_force(snapshot, problem)})"
