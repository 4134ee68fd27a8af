"""`kit watch`: hot-reload the workspace in the foreground and print one line per reload."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading

import click

from kit.cli.common import console, handle_errors, open_workspace, workspace_option


@click.command("watch")
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per reload, one per line.")
@handle_errors
def watch(workspace, as_json: bool) -> None:
    """Watch the workspace and hot-reload every change until Ctrl-C.

    Prints one line per reload (with --json: one JSON object per line,
    {"version": N, "changed": [...], "errors": [...]}). A broken edit keeps the last good
    version in force and its error is printed.
    """
    from kit import TemplateWatch, now

    # watcher warnings (inotify limits, failed reloads) go to stderr; stdout stays the report
    logging.basicConfig(level=logging.WARNING, format="kit: %(message)s", stream=sys.stderr)
    ws = open_workspace(workspace, config_warnings=False)
    err = console(stderr=True)
    out = console()

    templates = TemplateWatch(ws)

    def broken() -> set[str]:
        """What has an error now, by path: a reload's own errors are only those of its paths, so
        whether one was fixed is told by the workspace's problems before and after it."""
        return {issue.path or str(issue) for issue in ws.snapshot.errors}

    seen = {"version": ws.version, "broken": broken()}

    def on_reload(result) -> None:
        if not result.changed and not result.errors and result.version == seen["version"]:
            return  # e.g. a comment-only edit of kit.yaml: the effective config is the same
        now_broken = broken()
        fixed = sorted(seen["broken"] - now_broken)
        seen["version"] = result.version
        seen["broken"] = now_broken
        try:
            template_issue = templates.after_reload(result.changed)
        except Exception as exc:  # a failing prompt build must not swallow the reload line
            template_issue = None
            err.print(f"kit: could not check the prompt template: {exc}", markup=False, highlight=False)
        errors = [*result.errors, *result.listener_errors, *([template_issue] if template_issue else [])]
        if as_json:
            line = {**result.to_json(), "errors": [str(e) for e in errors]}
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return
        stamp = now().strftime("%H:%M:%S")
        shown = list(result.changed[:8])
        if len(result.changed) > len(shown):
            shown.append(f"and {len(result.changed) - len(shown)} more")
        if shown:
            changed = ", ".join(shown)
        else:  # a broken edit keeps the last good version; restoring it changes nothing in force
            changed = "nothing applied (the last good version stays)" if result.errors else "nothing changed"
        if fixed:
            changed += " (fixed)" if fixed == sorted(result.changed) else f" (fixed: {', '.join(fixed)})"
        out.print(f"[dim]{stamp}[/dim] v{result.version} {changed}", markup=True, highlight=False)
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
        stop_index()
        watcher.stop()
