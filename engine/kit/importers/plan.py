"""The import plan (frozen data) and the one function that applies it."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import WorkspaceError
from kit.filewrite import atomic_write
from kit.paths import CONFIG_FILE

# What an action does to DEST. Only "create", "append" and "overwrite" write; "append" keeps every
# line DEST has and adds to it (imported memory entries, .kit/ in .gitignore).
WRITES = frozenset({"create", "append", "overwrite"})
KINDS = ("create", "append", "overwrite", "unchanged", "conflict", "withheld", "skip")


@dataclass(frozen=True)
class Action:
    kind: str  # one of KINDS
    path: str  # relative to DEST ("" for a skipped source that goes nowhere)
    source: str  # relative to SRC
    note: str = ""
    data: bytes | None = field(default=None, repr=False, compare=False)  # what a write puts there

    def to_json(self) -> dict:
        return {"action": self.kind, "path": self.path, "source": self.source, "note": self.note}


@dataclass(frozen=True)
class ImportPlan:
    kind: str  # "openclaw"
    src: Path
    dest: Path
    actions: tuple[Action, ...]
    notes: tuple[str, ...]  # what is kept but not used, not mapped, not copied (secrets), not runnable

    @property
    def writes(self) -> tuple[Action, ...]:
        return tuple(a for a in self.actions if a.kind in WRITES)

    @property
    def conflicts(self) -> tuple[Action, ...]:
        return tuple(a for a in self.actions if a.kind == "conflict")

    @property
    def nothing_to_do(self) -> bool:
        return not self.writes

    def count(self, kind: str) -> int:
        return sum(1 for a in self.actions if a.kind == kind)

    def to_json(self) -> dict:
        return {
            "kind": self.kind, "src": str(self.src), "dest": str(self.dest),
            "actions": [a.to_json() for a in self.actions], "notes": list(self.notes),
            "counts": {k: self.count(k) for k in KINDS},
        }


@dataclass(frozen=True)
class ImportResult:
    plan: ImportPlan
    written: tuple[str, ...]
    committed: bool

    def to_json(self) -> dict:
        return {**self.plan.to_json(), "applied": True, "written": list(self.written), "committed": self.committed}


def _git(dest: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(dest), *args], capture_output=True, text=True, check=False)


def apply_plan(plan: ImportPlan, *, git: bool = False) -> ImportResult:
    """Write the plan's creates and overwrites (atomically, one file at a time); with `git`, commit
    exactly those files (git init first when DEST is not a repository, or is a new workspace
    inside another one's folder)."""
    if git and shutil.which("git") is None:
        raise WorkspaceError("--git needs git on PATH")
    new_workspace = not (plan.dest / CONFIG_FILE).exists()
    written: list[str] = []
    for action in plan.writes:
        target = plan.dest / action.path
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise WorkspaceError(f"{target} is not a regular file; not importing {action.source} over it")
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, action.data or b"")
        written.append(action.path)
    committed = False
    if git and written:
        top = _git(plan.dest, "rev-parse", "--show-toplevel")
        # a new workspace gets a repository of its own, as `kit init --git` gives it: one that only
        # happens to lie inside another repository's folder (a home folder kept in git, a project)
        # must not have its import committed there; an existing workspace commits where it lives
        inside_other = top.returncode == 0 and new_workspace and \
            Path(top.stdout.strip()).resolve() != plan.dest.resolve()
        if top.returncode != 0 or inside_other:
            result = _git(plan.dest, "init", "-q")
            if result.returncode != 0:
                raise WorkspaceError(f"git init failed: {result.stderr.strip()}")
        # the person's own identity when git has one; Kit's otherwise (as kit init)
        who = [] if _git(plan.dest, "config", "user.email").stdout.strip() else [
            "-c", "user.name=Kit", "-c", "user.email=kit@localhost"]
        message = f"import: {plan.kind} workspace from {plan.src}"
        for name, args in (("add", ["add", "--", *written]),
                           ("commit", [*who, "commit", "-q", "-m", message, "--", *written])):
            result = _git(plan.dest, *args)
            if result.returncode != 0:
                raise WorkspaceError(f"git {name} failed: {(result.stderr or result.stdout).strip()}")
        committed = True
    return ImportResult(plan, tuple(written), committed)
