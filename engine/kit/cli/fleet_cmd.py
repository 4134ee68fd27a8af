"""`kit fleet add|list|remove|dream|index|heartbeat|status|worker|beat`: many workspaces on Celery."""

from __future__ import annotations

import sys
from functools import partial

import click

from kit import plural
from kit.cli.common import console, emit_json, fail, handle_errors, json_option, stacked

wait_option = click.option("--wait", is_flag=True, help="Wait for every task, with a progress bar; exit 1 if any failed.")
timeout_option = click.option("--timeout", type=float, default=None, metavar="SECONDS",
                              help="With --wait: stop waiting after this long (the tasks stay queued).")
paths_argument = click.argument("paths", nargs=-1, metavar="[PATH]...")
# the tail of every enqueuing command (dream, index, heartbeat)
dispatch_options = stacked(wait_option, timeout_option, json_option, handle_errors, click.pass_context)


def _fleet(ctx: click.Context):
    from kit import Fleet

    opts = ctx.find_root().meta.get("kit.fleet", {})
    return Fleet.open(**opts)


@click.group("fleet")
@click.option("--broker", default=None, metavar="URL", help="Broker URL (default: fleet.broker, KIT_FLEET__BROKER).")
@click.option("--backend", default=None, metavar="URL", help="Result backend URL (default: fleet.backend, else the broker).")
@click.option("--registry", default=None, metavar="FILE",
              help="Registry file (default: fleet.registry, else $XDG_CONFIG_HOME/kit/fleet.yaml).")
@click.pass_context
def fleet(ctx: click.Context, broker, backend, registry) -> None:
    """Run dream, index and heartbeat for many workspaces on Celery workers (Redis broker).

    Register workspaces with `kit fleet add`, start `kit fleet worker` (one or more, on one machine
    or many), then `kit fleet dream --wait`, or `kit fleet beat` for each workspace's schedule.
    """
    ctx.find_root().meta["kit.fleet"] = {"broker": broker, "backend": backend, "registry": registry}


# ---------------------------------------------------------------------------- registry


@fleet.command("add")
@click.argument("patterns", nargs=-1, required=True, metavar="PATH-OR-GLOB...")
@click.option("--queue", default=None, help="Route these workspaces' tasks to this queue (default: fleet.queue).")
@json_option
@handle_errors
@click.pass_context
def add(ctx, patterns, queue, as_json) -> None:
    """Register workspaces: paths, or quoted globs ('/srv/kit/*') matched at dispatch time."""
    f = _fleet(ctx)
    change = f.registry.add(patterns, queue=queue)
    if as_json:
        emit_json({"registry": str(f.registry.path), **change.to_json()})
        return
    say = partial(console().print, markup=False)
    for p in change.done:
        say(f"added {p}" + (f" (queue {queue})" if queue else ""))
    for p in change.unchanged:
        say(f"already registered: {p}")
    for n in change.notes:
        say(f"note: {n}")
    say(f"registry: {f.registry.path}")


@fleet.command("remove")
@click.argument("patterns", nargs=-1, required=True, metavar="PATH-OR-GLOB...")
@json_option
@handle_errors
@click.pass_context
def remove(ctx, patterns, as_json) -> None:
    """Unregister entries (as they were added); exit 1 if one was not registered."""
    f = _fleet(ctx)
    change = f.registry.remove(patterns)
    if as_json:
        emit_json({"registry": str(f.registry.path), **change.to_json()})
    else:
        say = partial(console().print, markup=False)
        for p in change.done:
            say(f"removed {p}")
        for n in change.notes:
            say(f"note: {n}")
    if change.unchanged:
        fail("not registered: " + ", ".join(change.unchanged))


@fleet.command("list")
@json_option
@handle_errors
@click.pass_context
def list_(ctx, as_json) -> None:
    """Show the registry's entries and the workspaces they name now."""
    f = _fleet(ctx)
    entries = f.registry.entries()
    members = f.registry.members()
    if as_json:
        emit_json({"registry": str(f.registry.path), "entries": [e.to_json() for e in entries],
                   "workspaces": [m.to_json() for m in members]})
        return
    out = console()
    say = partial(out.print, markup=False)
    if not entries:
        say(f"the registry is empty ({f.registry.path}); add workspaces with `kit fleet add PATH…`")
        return
    for e in entries:
        n = sum(1 for m in members if m.pattern == e.pattern)
        where = f" → queue {e.queue}" if e.queue else ""
        say(f"{e.pattern}{where}" + (f"  ({plural(n, 'workspace')})" if e.is_glob else ""))
    for m in members:
        if m.problem:
            say(f"  problem: {m.path} {m.problem}")
    say(f"{plural(len(members), 'workspace')}; registry: {f.registry.path}")


# ---------------------------------------------------------------------------- dispatch


def _dispatch(ctx, kind: str, paths, wait: bool, timeout, as_json: bool, **kw) -> None:
    f = _fleet(ctx)
    batch = f.dispatch(kind, paths=paths or None, **kw)
    queues = sorted({q for _, _, q in batch.tasks})
    if not wait:
        if as_json:
            emit_json(batch.to_json())
        else:
            click.echo(f"queued {plural(len(batch.tasks), f'{kind} task')} on {', '.join(queues)}; "
                       "follow them with `kit fleet status`")
        return
    bar = None
    show_bar = sys.stderr.isatty() and not as_json
    if show_bar:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        bar = Progress(TextColumn(f"{kind}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("{task.description}"), console=console(stderr=True), transient=True)
        job = bar.add_task("", total=len(batch.tasks))
        bar.start()

    def progress(done: int, total: int, outcome) -> None:
        if bar is not None:
            bar.update(job, completed=done, description=f"last: {outcome.state} {outcome.path}")

    try:
        waited = f.wait(batch, progress=progress, timeout=timeout)
    finally:
        if bar is not None:
            bar.stop()
    if as_json:
        emit_json({"kind": kind, **waited.to_json()})
    else:
        _render_waited(kind, waited)
    if waited.pending:
        fail(f"timed out after {timeout:g} s: {plural(len(waited.pending), 'task')} still queued or running "
             "(they go on; see `kit fleet status`)")
    if any(o.state == "failed" for o in waited.outcomes):
        sys.exit(1)


def _render_waited(kind: str, waited) -> None:
    say = partial(console().print, markup=False)
    for o in waited.outcomes:
        if o.state in ("failed", "busy"):
            say(f"{o.state}: {o.path}: {o.error}")
    counts = waited.counts()
    total = sum(v for k, v in counts.items() if k != "pending")
    durations = sorted(o.duration_s for o in waited.outcomes if o.duration_s)
    median = f"; median {durations[len(durations) // 2]:.2f} s per workspace" if durations else ""
    say(f"{kind}: {total} done — " + ", ".join(f"{v} {k}" for k, v in counts.items() if v) + median)


@fleet.command("dream")
@paths_argument
@click.option("--phase", type=click.Choice(["light", "rem", "deep", "all"]), default="all", show_default=True)
@dispatch_options
def dream(ctx, paths, phase, wait, timeout, as_json) -> None:
    """Enqueue one dream per workspace (all registered, or the PATHs given)."""
    _dispatch(ctx, "dream", paths, wait, timeout, as_json, phase=phase)


@fleet.command("index")
@paths_argument
@dispatch_options
def index(ctx, paths, wait, timeout, as_json) -> None:
    """Enqueue one memory index refresh per workspace."""
    _dispatch(ctx, "index", paths, wait, timeout, as_json)


@fleet.command("heartbeat")
@paths_argument
@dispatch_options
def heartbeat(ctx, paths, wait, timeout, as_json) -> None:
    """Enqueue one heartbeat run per workspace (skipped where HEARTBEAT.md has no tasks)."""
    _dispatch(ctx, "heartbeat", paths, wait, timeout, as_json)


# ---------------------------------------------------------------------------- status


@fleet.command("status")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(["dream", "index", "heartbeat"]),
              help="Only these task kinds (repeatable; default: all).")
@click.option("--workers", "show_workers", is_flag=True, help="Also ping the workers (waits 1 s for answers).")
@json_option
@handle_errors
@click.pass_context
def status(ctx, kinds, show_workers, as_json) -> None:
    """Per workspace: the last run of each task, its result and duration, and what is queued."""
    f = _fleet(ctx)
    rows = f.status(kinds or ("dream", "index", "heartbeat"))
    workers = f.workers() if show_workers else None
    if as_json:
        emit_json({"workspaces": [r.to_json() for r in rows], "workers": workers})
        return
    out = console()
    out.print(status_table(rows))
    failed = sum(1 for r in rows if r.result == "failed")
    line = f"{plural(len({r.path for r in rows}), 'workspace')}; {failed} failing"
    if workers is not None:
        line += f"; {plural(len(workers), 'worker')} online" + (f": {', '.join(workers)}" if workers else "")
    out.print(line, markup=False)


def status_table(rows):
    """The `kit fleet status` table. A workspace path is what one types next, so it keeps its
    width and the finished time and the detail wrap instead; at 80 columns every column
    folded alike and cut paths mid-name ("/tmp/nu.90h0/hom" over "e/agent")."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))  # one space between columns
    table.add_column("workspace", no_wrap=True, overflow="fold")
    for col in ("task", "state", "result"):
        table.add_column(col, no_wrap=True)
    table.add_column("finished", overflow="fold")  # the time goes under the date when space is short
    table.add_column("took", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for r in rows:
        detail = r.error if r.result in ("failed", "busy") else (r.summary or "")
        if r.failures > 1:
            detail = f"{detail} ({plural(r.failures, 'failure')} in a row; last ok {r.last_ok_at or 'never'})"
        if not r.registered:
            detail = f"{detail} [not in the registry]"
        took = f"{r.duration_s:.2f} s" if r.duration_s is not None else ""
        when = (r.finished_at or "")[:16].replace("T", " ")
        # Text, not markup: an error's "[byte 0xff]" or "[not in the registry]" is what it says
        table.add_row(Text(r.path), r.kind or "-", r.state, r.result or "", when, took, Text(detail),
                      style="red" if r.result == "failed" else None)
    return table


# ---------------------------------------------------------------------------- processes


@fleet.command("worker")
@click.option("-c", "--concurrency", type=int, default=None,
              help="Worker processes (default: Celery's, the number of CPUs); each loads the model once.")
@click.option("-Q", "--queues", default=None, help="Comma-separated queues to consume (default: fleet.queue).")
@click.option("--pool", type=click.Choice(["prefork", "solo", "threads"]), default=None,
              help="Celery pool (default prefork).")
@click.option("-n", "--hostname", default=None, help="Node name (default kit.<pid>@<host>).")
@click.option("--loglevel", default="info", show_default=True)
@handle_errors
@click.pass_context
def worker(ctx, concurrency, queues, pool, hostname, loglevel) -> None:
    """Start a Celery worker running Kit's tasks (until Ctrl-C or SIGTERM)."""
    f = _fleet(ctx)
    qs = [q.strip() for q in queues.split(",") if q.strip()] if queues else None
    f.run_worker(concurrency=concurrency, queues=qs, pool=pool, hostname=hostname, loglevel=loglevel)


@fleet.command("beat")
@click.option("--schedule", "schedule_file", default=None, metavar="FILE",
              help="Where beat keeps last run times (default: $XDG_DATA_HOME/kit/fleet/beat-schedule).")
@click.option("--loglevel", default="info", show_default=True)
@handle_errors
@click.pass_context
def beat(ctx, schedule_file, loglevel) -> None:
    """Run Celery beat: each registered workspace dreams on its own dreaming.schedule and timezone."""
    _fleet(ctx).run_beat(loglevel=loglevel, schedule_file=schedule_file)
