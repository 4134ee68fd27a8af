"""Shared CLI plumbing: workspace option, error handling, JSON output."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from kit import KitError
from kit.cli.main import WORKSPACE_KEY

workspace_option = click.option(
    "-w",
    "--workspace",
    "workspace",
    type=click.Path(path_type=Path),
    default=None,
    help="Workspace folder (default: $KIT_WORKSPACE, else the nearest parent holding kit.yaml).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")


def group_workspace() -> Path | None:
    """The -w given before the command (`kit -w PATH doctor`), if any."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(WORKSPACE_KEY) if ctx is not None else None


def where_lines(path: str, start: int, end: int) -> str:
    """`path:7` for one line, `path:7-9` for a range (a key's `path:7:7` reads like line:column)."""
    return f"{path}:{start}" if start == end else f"{path}:{start}-{end}"


@contextlib.contextmanager
def stopping(err) -> Iterator[None]:
    """A long-running command (`kit serve`, `kit watch`) is stopping: say so — an embedding batch
    in flight can take seconds — and let a second Ctrl-C (or SIGTERM) end the process at once. It
    used to interrupt the interpreter's joins of worker threads at exit: a traceback, then a native
    thread pool's `terminate called without an active exception` and SIGABRT. Every file Kit
    writes is swapped in whole and SQLite rolls back a cut transaction, so ending now loses nothing."""
    import os
    import signal

    err.print("kit: stopping… (Ctrl-C again stops at once)", markup=False, highlight=False)

    def at_once(signum: int, _frame: object) -> None:
        os.write(2, b"kit: stopped at once\n")
        os._exit(128 + signum)  # as a shell reports a process a signal ended: 130 for Ctrl-C

    previous = {sig: signal.signal(sig, at_once) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:  # stopped: the process (or a test's) has its handlers back
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def fail(message: str, code: int = 1) -> None:
    click.echo(f"kit: {message}", err=True)
    sys.exit(code)


def handle_errors(func: Callable) -> Callable:
    """Turn library errors into one clear line on stderr and the documented exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KitError as exc:
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as exc:
            # the last net: a file-system failure the library did not anticipate is still one line
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            fail(f"{where}{exc.strerror or exc}")

    return wrapper


def stacked(*decorators: Callable) -> Callable:
    """One decorator made of several, applied as if written in this order above the function (so
    `--help` lists the options in this order)."""

    def apply(func: Callable) -> Callable:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


# what most commands take: --workspace and --json, with errors as one line and an exit code
workspace_command = stacked(workspace_option, json_option, handle_errors)


def open_workspace(path: Path | None, flags: dict[str, Any] | None = None, *, config_warnings: bool = True):
    """The workspace a command works on. A broken kit.yaml never stops a command (the valid values
    apply), so it is said on stderr, once per problem — unless the command reports it itself
    (`config_warnings=False`: doctor, config show, prompt, run, watch)."""
    from kit import open_workspace as open_

    ws = open_(path if path is not None else group_workspace(), flags=flags)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:  # its connections closed when the command ends (SQLite folds its WAL back in)
        ctx.call_on_close(ws.close)
    if config_warnings:
        for notice in ws.config_notices():
            click.echo(f"kit: {notice}", err=True)
    return ws


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=_default))


def _default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_json"):
        return value.to_json()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


@contextlib.contextmanager
def progress_display(enabled: bool = True) -> Iterator[Callable[[Any], None] | None]:
    """A `progress=` callback that draws the library's progress events on stderr — a bar for
    counted steps (embedding 40/120), a spinner line for status (dreaming: REM) — when `enabled`
    and stderr is a terminal; else None, and nothing is shown (--json, pipes, logs)."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

    from kit import Step

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console(stderr=True), transient=True) as bar:
        tasks: dict[str, Any] = {}

        def show(event: Any) -> None:
            key = event.task or "status"
            if key not in tasks:
                tasks[key] = bar.add_task(key, total=None)
            if isinstance(event, Step):
                bar.update(tasks[key], description=event.task, completed=event.done, total=event.total)
            else:
                bar.update(tasks[key], description=event.message)

        yield show


def console(stderr: bool = False):
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's own handling exits 1; a closed pipe is the reader's choice, the same exit 0 as
            # every command's plain output (handle_errors)
            self.quiet = True
            raise BrokenPipeError

    return _Console(stderr=stderr, highlight=False, soft_wrap=True)


def interactive() -> bool:
    return sys.stdout.isatty()
