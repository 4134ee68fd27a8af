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

    def get(self, name: str) -> Document | None:
        return self.documents.get(name)

    def names(self, pattern: str = "*") -> list[str]:
        depth = pattern.count("/")
        return sorted(
            n for n in self.documents if fnmatch.fnmatchcase(n, pattern) and n.count("/") == depth
        )

    @property
    def config_issues(self) -> tuple[Problem, ...]:
        """Problems with the configuration layers (the last good config is in force)."""
        return tuple(i for i in self.issues if i.area == "config")

    @property
    def errors(self) -> tuple[Problem, ...]:
        return of_severity(self.issues, "error")
