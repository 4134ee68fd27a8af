"""`kit doctor`: gather findings from every subsystem."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from kit.core import WorkspaceCore
from kit.errors import KitError
from kit.problems import Problem

# Each entry names a module that may define `doctor_checks(ws: WorkspaceCore) -> list[Problem]`
# (with an `offline` keyword if it asks a server: `kit doctor --offline` asks none).
PROVIDERS = (
    "kit.doctor",
    "kit.prompt.builder",
    "kit.skills.catalog",
    "kit.hooks.registry",
    "kit.memory.service",
    "kit.dreaming.runner",
    "kit.providers.failover",
    "kit.mcp_client.doctor",
)


def doctor_checks(ws: WorkspaceCore) -> list[Problem]:
    """Config and document problems from the snapshot; a damaged trust store; a damaged state.db."""
    from kit.trust import TrustStore

    out = list(ws.snapshot.issues)
    damaged = TrustStore().problem()
    if damaged is not None:
        out.append(Problem(area="trust", path=damaged.path, line=damaged.line,
                           message=f"{damaged.message}; until then no skill or hook code is trusted"))
    state = state_problem(ws)
    if state is not None:
        out.append(state)
    return out


def state_problem(ws: WorkspaceCore) -> Problem | None:
    """`.kit/state.db` as SQLite sees it: opened (read-only: doctor writes nothing) and checked
    page by page (`quick_check`), so damage deep in the file is found too, not only a bad header."""
    from kit.errors import StateError
    from kit.state import unusable

    if ws.kit_dir.exists() and not ws.kit_dir.is_dir():
        # every command that keeps state (the index, notes' write lock, dreams, sessions) fails on it
        return Problem(area="state", path=".kit",
                       message="is not a folder: Kit keeps its state there (index, sessions, locks); "
                               "move the file aside and Kit makes the folder")
    path = ws.kit_dir / "state.db"
    if not path.exists():
        return None  # no state yet: nothing to check
    try:
        with ws.open_state() as db:
            damage = db.check()
    except StateError as exc:
        return Problem.from_error(exc, area="state")
    if not damage:
        return None
    import sqlite3

    error = unusable(sqlite3.DatabaseError(f"quick_check: {'; '.join(damage[:3])}"), path)
    assert error is not None
    return Problem.from_error(error, area="state")


def run_checks(ws: WorkspaceCore, *, offline: bool = False) -> list[Problem]:
    """Every provider's findings. Checks run inside `ws.read_only()`: doctor never writes.
    `offline`: skip the checks that ask a server (each configured model's base URL)."""
    with ws.read_only():
        return _collect(ws, offline)


def _collect(ws: WorkspaceCore, offline: bool = False) -> list[Problem]:
    findings: list[Problem] = []
    for module_name in PROVIDERS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # subsystem not present in this build
            raise
        check = getattr(module, "doctor_checks", None)
        if check is None:
            continue
        try:
            if "offline" in inspect.signature(check).parameters:
                findings.extend(check(ws, offline=offline))
            else:
                findings.extend(check(ws))
        except KitError as exc:  # a located error (a file that cannot be opened …): as every other problem
            path = getattr(exc, "path", None)
            findings.append(Problem(area=module_name.split(".")[1], path=_relative(ws, path) if path else None,
                                    line=getattr(exc, "line", None), message=getattr(exc, "message", None) or str(exc)))
        except OSError as exc:  # a file the check could not read: named, in words
            path = _relative(ws, exc.filename) if exc.filename else None
            findings.append(Problem(area=module_name.split(".")[1], path=path,
                                    message=f"check failed: {exc.strerror or exc}"))
        except Exception as exc:  # a broken check must not hide the others
            findings.append(Problem(area=module_name.split(".")[1], message=f"check failed: {exc!r}"))
    return _dedupe(findings)


def _relative(ws: WorkspaceCore, filename: Any) -> str:
    path = Path(str(filename))
    try:
        return path.relative_to(ws.root).as_posix()
    except ValueError:
        return str(path)


def _dedupe(findings: list[Problem]) -> list[Problem]:
    """One report per problem: a snapshot issue (area "documents") that a subsystem reports too
    for the same file and line — e.g. a broken SKILL.md, which the skills check names with what it
    means for the skill — is kept only in the subsystem's more specific words. A damaged state.db
    is reported once, as the "state" error: another check that could not read it (cooldowns,
    the recall log …) only repeats it."""
    def covered(doc: Problem) -> bool:
        return any(
            other is not doc and other.area != "documents" and other.path == doc.path
            and other.line == doc.line and other.message.startswith(doc.message)
            for other in findings
        )

    state = [f.message for f in findings if f.area == "state"]

    def repeats_state(finding: Problem) -> bool:
        return finding.area != "state" and any(message in finding.message for message in state)

    return [f for f in findings
            if not (f.area == "documents" and f.path and covered(f)) and not repeats_state(f)]
