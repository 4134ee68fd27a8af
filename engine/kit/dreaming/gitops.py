"""git.autocommit (§8): commit exactly the files dreams changed, never anything else.

The runner commits only when a dream changed memory (MEMORY.md or the archive); reports and diary
entries of the nights in between are carried into that commit, so history gets one commit per change
of memory instead of a "promote 0 memories" commit every night.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kit import clock


@dataclass(frozen=True)
class CommitResult:
    committed: bool
    note: str
    commit: str | None = None

    def to_json(self) -> dict:
        return {"committed": self.committed, "note": self.note, "commit": self.commit}


def _git(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env)


def _pending(root: Path, pathspecs: Sequence[str]) -> list[str]:
    """Uncommitted (unstaged or untracked, not ignored) files under `pathspecs`."""
    if not pathspecs:
        return []
    # --relative: paths as seen from the workspace, also when the repository root is above it
    modified = _git(root, "diff", "--name-only", "--relative", "--", *pathspecs).stdout.splitlines()
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "--", *pathspecs).stdout.splitlines()
    return modified + untracked


def autocommit(root: Path, files: Sequence[str], message: str, *, carry: Sequence[str] = ()) -> CommitResult:
    """Commit `files` plus the uncommitted files under `carry` (the dream's own reports and diary
    that earlier dreams left for this commit), never anything else."""
    if not files:
        return CommitResult(False, "nothing changed")
    try:
        inside = _git(root, "rev-parse", "--is-inside-work-tree")
    except FileNotFoundError:
        return CommitResult(False, "git is not installed")
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return CommitResult(False, "the workspace is not in a git repository")
    staged = _git(root, "diff", "--cached", "--quiet")
    if staged.returncode != 0:
        # the user is in the middle of composing a commit: do not mix our files into it
        return CommitResult(False, "you have staged changes; dream files left uncommitted")
    files = list(dict.fromkeys([*files, *_pending(root, carry)]))
    # .gitignore is the user's say on what belongs in history (e.g. `memory/dreaming/`, DREAMS.md):
    # ignored files stay out, and a night that changed only ignored files makes no commit
    ignored = set(_git(root, "check-ignore", "--", *files).stdout.splitlines())
    files = [f for f in files if f not in ignored]
    if not files:
        return CommitResult(False, "every changed file is ignored by git")
    env = {**os.environ, **clock.git_dates()}
    if not _git(root, "config", "user.name").stdout.strip():
        env.setdefault("GIT_AUTHOR_NAME", "Kit")
        env.setdefault("GIT_COMMITTER_NAME", "Kit")
    if not _git(root, "config", "user.email").stdout.strip():
        env.setdefault("GIT_AUTHOR_EMAIL", "kit@localhost")
        env.setdefault("GIT_COMMITTER_EMAIL", "kit@localhost")
    add = _git(root, "add", "--", *files, env=env)
    if add.returncode != 0:
        return CommitResult(False, f"git add failed: {add.stderr.strip()}")
    done = _git(root, "commit", "-q", "-m", message, "--", *files, env=env)
    if done.returncode != 0:
        return CommitResult(False, f"git commit failed: {(done.stderr or done.stdout).strip()}")
    sha = _git(root, "rev-parse", "HEAD").stdout.strip()
    return CommitResult(True, message, sha)
