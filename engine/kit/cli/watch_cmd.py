"""`kit watch`: hot-reload the workspace in the foreground and print one line per reload."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kit.cli.common import console, handle_errors, open_workspace, stopping, workspace_option

if TYPE_CHECKING:  # pragma: no cover
    from kit import TemplateWatch, Workspace

SHOWN = 8  # paths named on one line; a burst says "and N more"


@dataclass(frozen=True)
class ReloadOutcome:
    """What one reload did, path by path, as `kit watch` tells it."""

    paths: tuple[str, ...]  # every path the reload touched: changed, and broken ones deleted
    removed: tuple[str, ...]  # deleted: gone from disk (a broken file deleted is removed, not fixed)
    fixed: tuple[str, ...]  # had an error before the reload, has none now, and is still there


def reload_outcome(root: Path, changed: Sequence[str], broken_before: Mapping[str, bool],
                   broken_now: Mapping[str, bool]) -> ReloadOutcome:
    """Sort a reload's paths into removed and fixed. `broken_*`: what had an error before and
    after the reload (a path, or a pathless problem's text), and whether it is a file. A reload's
    errors are only those of its own paths, so whether one was fixed is told by the workspace's
    problems before and after it; and a problem that went away with its file was not fixed: the
    file was removed."""
    gone = sorted(set(broken_before) - set(broken_now))
    files = [*changed, *(key for key in gone if broken_before[key] and key not in changed)]
    removed = tuple(rel for rel in files if not os.path.lexists(root / rel))
    fixed = tuple(key for key in gone if key not in removed)
    # a broken file that had no last good version changes nothing in force when deleted: name it anyway
    paths = (*changed, *(rel for rel in removed if rel not in changed))
    return ReloadOutcome(paths, removed, fixed)


def describe(outcome: ReloadOutcome, has_errors: bool) -> str:
    """`SOUL.md, skills/x/SKILL.md (fixed: skills/x/SKILL.md; removed: memory/a.md)`: the paths,
    then which were fixed and which removed — bare `(fixed)` / `(removed)` when that is all of them."""
    shown = list(outcome.paths[:SHOWN])
    if len(outcome.paths) > SHOWN:
        shown.append(f"and {len(outcome.paths) - SHOWN} more")
    if shown:
        text = ", ".join(shown)
    else:  # a broken edit keeps the last good version; restoring it changes nothing in force
        text = "nothing applied (the last good version stays)" if has_errors else "nothing changed"
    notes = [_note(word, paths, outcome.paths) for word, paths in (("fixed", outcome.fixed),
                                                                   ("removed", outcome.removed)) if paths]
    return f"{text} ({'; '.join(notes)})" if notes else text


def _note(word: str, paths: Sequence[str], every: Sequence[str]) -> str:
    return word if sorted(paths) == sorted(every) else f"{word}: {', '.join(paths)}"


class ReloadTracker:
    """What each reload did — changed, fixed, removed, and its errors — as `kit watch` and `kit
    serve` both tell it: the workspace's problems before and after a reload say what was fixed.
    `templates`: the prompt template's problem counts too (only rendering finds it)."""

    def __init__(self, ws: Workspace, templates: TemplateWatch,
                 on_template_error: Callable[[Exception], None] | None = None) -> None:
        self.ws, self.templates, self.on_template_error = ws, templates, on_template_error
        self.version, self.broken = ws.version, self._broken()

    def _broken(self) -> dict[str, bool]:
        """What has an error now: its path (True: a file), else the problem's text (False)."""
        issue = self.templates.issue
        return {i.path or str(i): bool(i.path)
                for i in [*self.ws.snapshot.errors, *self.ws.rule_errors(), *([issue] if issue else [])]}

    def outcome(self, result) -> tuple[ReloadOutcome, list] | None:
        """(what the reload did, its errors); None when nothing in force changed and nothing failed."""
        if not result.changed and not result.errors and result.version == self.version:
            return None
        try:
            template_issue = self.templates.after_reload(result.changed)
        except Exception as exc:  # a failing prompt build must not swallow the reload line
            template_issue = None
            if self.on_template_error is not None:
                self.on_template_error(exc)
        now_broken = self._broken()
        outcome = reload_outcome(self.ws.root, result.changed, self.broken, now_broken)
        self.version, self.broken = result.version, now_broken
        # read without error, but a skill or hook rule broken: its last good version stays in force
        rules = self.ws.rule_errors(result.changed, besides=result.errors)
        return outcome, [*result.errors, *rules, *result.listener_errors, *([template_issue] if template_issue else [])]


@click.command("watch")
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per reload, one per line.")
@handle_errors
def watch(workspace, as_json: bool) -> None:
    """Watch the workspace and hot-reload every change until Ctrl-C.

    Prints one line per reload (with --json: one JSON object per line, {"version": N,
    "changed": [...], "removed": [...], "fixed": [...], "errors": [...]}). A broken edit keeps
    the last good version in force and its error is printed.
    """
    from kit import TemplateWatch, now

    # watcher warnings (inotify limits, failed reloads) go to stderr; stdout stays the report
    logging.basicConfig(level=logging.WARNING, format="kit: %(message)s", stream=sys.stderr)
    ws = open_workspace(workspace, config_warnings=False)
    err = console(stderr=True)
    out = console()

    reloads = ReloadTracker(ws, TemplateWatch(ws), on_template_error=lambda exc: err.print(
        f"kit: could not check the prompt template: {exc}", markup=False, highlight=False))
    templates = reloads.templates

    def on_reload(result) -> None:
        told = reloads.outcome(result)
        if told is None:
            return  # e.g. a comment-only edit of kit.yaml: the effective config is the same
        outcome, errors = told
        if as_json:
            line = {**result.to_json(), "removed": list(outcome.removed), "fixed": list(outcome.fixed),
                    "errors": [str(e) for e in errors]}
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return
        stamp = now().strftime("%H:%M:%S")
        out.print(f"[dim]{stamp}[/dim] v{result.version} {describe(outcome, bool(result.errors))}",
                  markup=True, highlight=False)
        for issue in errors:
            out.print(f"  [red]error[/red] {issue}", markup=True, highlight=False)
        sys.stdout.flush()

    stop = threading.Event()
    # `kill` (SIGTERM) ends the watch as cleanly as Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    watcher = ws.watch(on_reload=on_reload)
    watcher.start()
    # changed memory notes are re-indexed (once an index exists: watching never builds one)
    stop_index = ws.memory.auto_index(require_index=True)
    try:
        debounce = int(watcher.debounce_s * 1000)
        err.print(
            f"watching {ws.root} (backend: {watcher.backend}, debounce {debounce} ms, "
            f"version {ws.version}); Ctrl-C to stop",
            markup=False,
            highlight=False,
        )
        for issue in ws.snapshot.issues:
            err.print(f"  {issue.severity}: {issue}", markup=False, highlight=False)
        if templates.issue is not None:
            err.print(f"  error: {templates.issue}", markup=False, highlight=False)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a foreground watch ends: exit 0
    finally:
        with stopping(err):
            stop_index()
            watcher.stop()
