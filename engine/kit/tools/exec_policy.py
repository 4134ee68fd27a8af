"""May the agent run this shell command, and running it safely.

`check(command, config, interactive=...)` decides, in this order:
1. hard-blocked patterns — never run, in any mode, whatever the lists say;
2. `tools.exec.deny` — a match on any part of the command denies (deny wins over allow);
3. `tools.exec.allow` — the command runs when every part matches an allow pattern;
4. `tools.exec.mode` for the rest: allow runs it, deny refuses, ask needs the user's approval —
   and in a non-interactive run (no one to ask) ask means deny.

Patterns: one containing `*`, `?` or `[` is a glob matched against the whole (whitespace-
normalised) command part, e.g. `git *`; any other pattern is a prefix matched on word boundaries:
`git status` matches `git status -s` but not `git statusx`. A command is split into parts at
`;`, `&&`, `||`, `|`, `&` and newlines, so `git status && rm -rf build` is not allowed by an
allow-list entry for `git status`. Command substitution (`$(…)`, backticks) never counts as
allowed by a list: it needs the mode's permission.

`run(command, cwd=, timeout_s=)` runs through /bin/sh in its own process group, with dangerous
environment variables removed, and kills the whole group on timeout. It refuses hard-blocked
commands itself, so a caller that forgets `check` still cannot run them.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kit.config import section_of
from kit.envsafe import clean_env
from kit.errors import KitError
from kit.hooks.runner import run_shell
from kit.settings import ExecSettings

_SYSTEM_DIRS = r"(?:/|/\*|~|~/|~/\*|\$HOME|\$\{HOME\}|\$HOME/\*|/(?:bin|boot|dev|etc|home|lib|lib32|lib64|opt|proc|root|sbin|srv|sys|usr|var|System|Users|Library|Applications)(?:/\*?)?)"
_RC_FILES = r"(?:(?:[^\s'\"]*/)?\.(?:bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zshenv|zprofile|zlogin|kshrc|cshrc|tcshrc|inputrc)\b|/etc/(?:profile|bash\.bashrc|zsh/zshrc|environment)\b|(?:[^\s'\"]*/)?\.config/fish/config\.fish)"
# grouped, so the alternation stays inside the "| shell" pattern it is appended to
_SHELLS = r"(?:(?:sudo\s+)?(?:ba|z|k|da|fi|c|tc)?sh\b|python[0-9.]*\b|perl\b|ruby\b|node\b)"

# (compiled pattern, why) — matched against the whole command (so quoting tricks are caught too)
HARD_BLOCKS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), why)
    for p, why in (
        (r"\brm\s+(?:-[a-z]*\s+)*(?:-[a-z]*[rR][a-z]*|--recursive)\b(?:\s+-\S+)*\s+(?:--\s+)?['\"]?" + _SYSTEM_DIRS + r"['\"]?(?:\s|$|;|&|\|)",
         "recursive delete of /, the home folder or a system folder"),
        (r"\brm\b.*--no-preserve-root", "rm --no-preserve-root"),
        (r"\bmkfs(?:\.\w+)?\b", "formats a filesystem (mkfs)"),
        (r"\bdd\b[^;&|]*\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b)", "dd onto a device"),
        (r">\s*/dev/(?:sd|hd|nvme|vd|xvd|mmcblk|disk)\w*", "writes straight onto a disk device"),
        (r"(\w+|:)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&", "fork bomb"),
        (r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:env\s+)?" + _SHELLS, "downloads piped into a shell"),
        (r"(?:ba|z|k)?sh\s+<\(\s*(?:curl|wget)\b", "downloads fed to a shell"),
        (r"(?:ba|z|k)?sh\s+-c\s+['\"]?\$\(\s*(?:curl|wget)\b", "downloads run by a shell"),
        (r">>?\s*['\"]?" + _RC_FILES, "writes to a shell startup file"),
        (r"\btee\b[^;&|]*\s['\"]?" + _RC_FILES, "writes to a shell startup file"),
        (r"\b(?:cp|mv|ln|install)\b[^;&|]*\s['\"]?" + _RC_FILES + r"['\"]?\s*(?:$|;|&|\|)", "replaces a shell startup file"),
        (r"\bsed\s+(?:-\S+\s+)*-i\S*\s[^;&|]*" + _RC_FILES, "edits a shell startup file"),
        (r"\bch(?:mod|own)\s+(?:-\S+\s+)*-[a-z]*R[a-z]*\s+\S+\s+" + _SYSTEM_DIRS + r"(?:\s|$)", "recursive permission change on a system folder"),
    )
)

_SPLIT = re.compile(r"\|\||&&|[;|&\n]")
_SUBST = re.compile(r"\$\(|`")


@dataclass(frozen=True)
class ExecDecision:
    allowed: bool
    needs_approval: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"allowed": self.allowed, "needs_approval": self.needs_approval, "reason": self.reason}


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool

    def to_json(self) -> dict[str, Any]:
        return {"exit_code": self.exit_code, "stdout": self.stdout, "stderr": self.stderr, "timed_out": self.timed_out}


class ExecBlocked(KitError):
    """run() was asked to run a hard-blocked command."""


def _exec_settings(config: Any) -> ExecSettings:
    """The tools.exec section of a Config, of the whole config as a dict, or that dict itself."""
    settings = section_of(config, "tools.exec", ExecSettings)
    if settings.mode not in ("deny", "ask", "allow"):  # a plain dict is not validated
        settings = replace(settings, mode="deny")  # an unreadable setting must not widen permissions
    return settings


def normalise(command: str) -> str:
    return " ".join(command.split())


def split_parts(command: str) -> list[str]:
    """The simple commands of a compound command line (a conservative split; quotes ignored)."""
    return [normalise(p) for p in _SPLIT.split(command) if p.strip()]


def matches(pattern: str, part: str) -> bool:
    pattern = normalise(pattern)
    if not pattern:
        return False
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(part, pattern)
    return part == pattern or part.startswith(pattern + " ")


def hard_block(command: str) -> str | None:
    """Why this command must never run, or None."""
    text = normalise(command)
    for pattern, why in HARD_BLOCKS:
        if pattern.search(text):
            return why
    return None


def check(command: str, config: Any, *, interactive: bool) -> ExecDecision:
    """Decide whether `command` may run (see the module docstring for the order)."""
    if not command or not command.strip():
        return ExecDecision(False, False, "empty command")
    blocked = hard_block(command)
    if blocked:
        return ExecDecision(False, False, f"hard-blocked: {blocked}; this is never run, in any mode")
    settings = _exec_settings(config)
    mode, allow, deny = settings.mode, settings.allow, settings.deny
    parts = split_parts(command)
    for part in [normalise(command), *parts]:
        for pattern in deny:
            if matches(pattern, part):
                return ExecDecision(False, False, f"denied by tools.exec.deny pattern {pattern!r}")
    if allow and not _SUBST.search(command) and all(any(matches(p, part) for p in allow) for part in parts):
        return ExecDecision(True, False, "allowed by tools.exec.allow")
    if mode == "allow":
        return ExecDecision(True, False, "allowed: tools.exec.mode is allow")
    if mode == "deny":
        return ExecDecision(False, False, "denied: tools.exec.mode is deny and no allow pattern matches")
    if not interactive:
        return ExecDecision(
            False, False,
            "denied: tools.exec.mode is ask and this run is not interactive (add an allow pattern to run it)",
        )
    return ExecDecision(False, True, "needs approval: tools.exec.mode is ask")


def run(
    command: str,
    *,
    cwd: str | os.PathLike,
    timeout_s: float = 60.0,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> ExecResult:
    """Run a shell command (after `check`); output decoded as UTF-8 with replacement."""
    blocked = hard_block(command)
    if blocked:
        raise ExecBlocked(f"refusing to run a hard-blocked command: {blocked}")
    done = run_shell(command, cwd=cwd, env=clean_env(env), timeout_s=timeout_s,
                     stdin=stdin.encode() if stdin is not None else None)
    return ExecResult(
        exit_code=done.returncode,
        stdout=done.stdout,
        stderr=done.stderr + (f"\n[kit: timed out after {timeout_s:g}s; killed]" if done.timed_out else ""),
        timed_out=done.timed_out,
    )
