"""`kit serve`: the watcher, the memory auto-indexer and the dreaming schedule, in the foreground."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING

import click

from kit import plural
from kit.cli.common import console, handle_errors, stopping, workspace_option

if TYPE_CHECKING:  # pragma: no cover
    from kit import Workspace


POLL_S = 5.0


@click.command("serve")
@workspace_option
@click.option("--no-watch", is_flag=True, help="Do not hot-reload (run the schedule only).")
@handle_errors
def serve(workspace, no_watch: bool) -> None:
    """Watch the workspace and dream on dreaming.schedule (when dreaming.enabled) until Ctrl-C."""
    from kit import ConfigError, Scheduler, now
    from kit.cli.common import open_workspace

    logging.basicConfig(level=logging.WARNING, format="kit: %(message)s", stream=sys.stderr)
    ws = open_workspace(workspace)
    err = console(stderr=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cleanups = []
    if not no_watch:
        watcher = ws.watch(on_reload=_reload_reporter(ws, err)).start()
        cleanups.append(watcher.stop)
    cleanups.append(ws.memory.auto_index())
    scheduler = Scheduler()
    announced = None
    err.print(f"serving {ws.root}; Ctrl-C to stop", markup=False, highlight=False)
    try:
        while not stop.is_set():
            dreaming = ws.config.dreaming
            enabled, schedule, tz = dreaming.enabled, dreaming.schedule, dreaming.timezone
            try:
                if enabled:
                    if scheduler.due(schedule, tz, now()):
                        _dream(ws, err)
                    state = ("on", schedule, tz, scheduler.next)
                else:
                    scheduler.key = None
                    state = ("off",)
            except ConfigError as exc:  # a bad schedule edited in while serving: say so, keep watching
                scheduler.key = None
                state = ("error", str(exc))
            if state != announced:
                announced = state
                if state[0] == "on":
                    err.print(f"dreaming: next run {scheduler.next.isoformat(timespec='minutes')} "
                              f"({schedule!r}, {tz or 'local time'})", markup=False, highlight=False)
                elif state[0] == "off":
                    err.print("dreaming: schedule off (dreaming.enabled: false)", markup=False, highlight=False)
                else:
                    err.print(f"dreaming: schedule paused: {state[1]}", markup=False, highlight=False)
            stop.wait(POLL_S)
    except KeyboardInterrupt:
        pass
    finally:
        with stopping(err):
            for cleanup in reversed(cleanups):
                cleanup()
    err.print(f"stopped serving {ws.root}", markup=False, highlight=False)


def _reload_reporter(ws: Workspace, err):
    """One stderr line per reload, in `kit watch`'s words (what changed, fixed or removed; each
    error under it): a person running `kit serve` sees an edit applied or refused."""
    from kit import TemplateWatch
    from kit.cli.watch_cmd import ReloadTracker, describe

    reloads = ReloadTracker(ws, TemplateWatch(ws), on_template_error=lambda exc: err.print(
        f"kit: could not check the prompt template: {exc}", markup=False, highlight=False))

    def on_reload(result) -> None:
        told = reloads.outcome(result)
        if told is None:
            return
        outcome, errors = told
        err.print(f"reloaded v{result.version}: {describe(outcome, bool(result.errors))}", markup=False,
                  highlight=False)
        for issue in errors:
            if getattr(issue, "area", None) != "config":
                err.print(f"  error: {issue}", markup=False, highlight=False)
        if any(getattr(issue, "area", None) == "config" for issue in errors):
            for notice in ws.config_notices():  # with what is in force instead (the last good config)
                err.print(f"  {notice}", markup=False, highlight=False)

    return on_reload


def _dream(ws: Workspace, err) -> None:
    from kit import BusyError, KitError

    try:
        result = ws.dream()
    except BusyError as exc:
        err.print(f"dreaming skipped: {exc}", markup=False, highlight=False)
        return
    except KitError as exc:
        err.print(f"dreaming failed: {exc}", markup=False, highlight=False)
        return
    err.print(f"dreamed {result.day}: promoted {len(result.promoted)}, changed {plural(len(result.changed), 'file')}",
              markup=False, highlight=False)
