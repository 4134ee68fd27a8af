"""`kit memory index|search|status|write` (and, below, the dreaming commands promote|explain)."""

from __future__ import annotations

import click

from kit import plural
from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    json_option,
    open_workspace,
    progress_display,
    where_lines,
    workspace_command,
    workspace_option,
)


@click.group()
def memory() -> None:
    """Daily notes, the memory index and hybrid search."""


@memory.command("index")
@workspace_option
@click.option("--rebuild", is_flag=True, help="Forget the index and build it again (embeddings stay cached).")
@json_option
@handle_errors
def index_cmd(workspace, rebuild: bool, as_json: bool) -> None:
    """Bring .kit/index.db up to date with MEMORY.md and memory/ (incremental)."""
    from rich.markup import escape

    ws = open_workspace(workspace)
    with progress_display(not as_json) as show:
        result = ws.memory.sync(rebuild=rebuild, progress=show)
    if as_json:
        emit_json(result)
        return
    out = console()
    out.print(
        f"[bold]indexed[/] {plural(result.files, 'file')} ({result.mode}): {len(result.added)} added, "
        f"{len(result.updated)} updated, {len(result.removed)} removed, {result.unchanged} unchanged"
        + (f", {len(result.skipped)} skipped" if result.skipped else "")
        # embedded counts texts, and chunks that say the same thing share one: "54 chunks, 18 embedded"
        # read as a third left without vectors
        + f"; {plural(result.chunks, 'chunk')} written ({plural(result.embedded, 'distinct text')} embedded, "
        f"{result.cached} from cache) in {result.seconds:.1f}s"
    )
    for item in result.skipped:
        out.print(f"[yellow]skipped[/] {escape(item.describe())}")
    for error in result.problems:
        out.print(f"[yellow]warning[/] {escape(error)}")


@memory.command("search")
@workspace_option
@click.argument("query")
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=None, help="Results (default memory.search.max_results).")
@click.option("--record", is_flag=True, help="Record daily-note hits in the recall log (source cli).")
@json_option
@handle_errors
def search_cmd(workspace, query: str, limit: int | None, record: bool, as_json: bool) -> None:
    """Hybrid (vector + keyword) search over the memory files."""
    from rich.markup import escape

    if not query.strip():
        raise click.UsageError("QUERY is empty: say what to search for")
    ws = open_workspace(workspace)
    if not ws.memory.read_only:  # a read-only folder: what the index holds is searched as it is
        with progress_display(not as_json) as show:  # incremental; a bar on a terminal if there is much to embed
            synced = ws.memory.sync(progress=show)
        for skipped in synced.skipped:  # "no matches" must not hide a note that was not searched
            click.echo(f"kit: warning: {skipped.describe()}", err=True)
    result = ws.memory.search(query, limit=limit, record=record, source="cli")
    if as_json:
        # --record: how many recall events it wrote, as the text output says (the shape is the spec's otherwise)
        emit_json({**result.to_json(), "recorded": result.recorded} if record else result)
        return
    out = console()
    if result.mode != "hybrid":
        out.print(f"[yellow]mode: {result.mode}[/] (see `kit doctor`)")
        if ws.memory.embedding_error:
            out.print(f"[dim]embeddings off: {escape(ws.memory.embedding_error)}[/]")
    if not result.results:
        out.print("no matches")
    if result.period is not None:
        out.print(f"[dim]period: {result.period.to_json()['start'] or '…'} to {result.period.to_json()['end'] or '…'}[/]")
    for hit in result.results:
        vec = "-" if hit.vector_score is None else f"{hit.vector_score:.3f}"
        dated = f"  {hit.date}" if hit.date and hit.date not in hit.path else ""
        out.print(
            f"[bold cyan]{escape(where_lines(hit.path, hit.start_line, hit.end_line))}[/]{dated}  score {hit.score:.3f} "
            f"[dim](vector {vec}, text {hit.text_score or 0:.3f})[/]"
        )
        out.print(escape(hit.snippet), soft_wrap=True)
        for t in hit.times:
            when = t.start if t.start == t.end else f"{t.start} to {t.end}"
            out.print(f"[dim]  “{escape(t.text)}” = {when}[/]")
        for c in hit.context:
            out.print(f"[dim]  {escape(where_lines(hit.path, c.start_line, c.end_line))}: {escape(c.text)}[/]", soft_wrap=True)
        out.print()
    if record:
        out.print(f"[dim]{plural(result.recorded, 'recall event')} recorded[/]")


@memory.command("status")
@workspace_command
def status_cmd(workspace, as_json: bool) -> None:
    """Files, chunks, embeddings, model, mode, index freshness and recall counts."""
    ws = open_workspace(workspace)
    status = ws.memory.status()
    if as_json:
        emit_json(status)
        return
    from rich.markup import escape

    out = console()
    stale = status.stale_paths
    fresh = "[green]fresh[/]" if status.fresh else (
        f"[yellow]stale[/] ({len(stale.new)} new, {len(stale.changed)} changed, {len(stale.deleted)} deleted: "
        "run `kit memory index`)"
    )
    out.print(f"[bold]index[/]     {escape(status.index_path)}  {fresh}")
    out.print(f"[bold]mode[/]      {status.mode}   model {escape(status.model or '-')}   "
              f"backend {status.backend or '-'}   fts5 {'yes' if status.fts5 else 'no'}")
    if status.embedding_error:
        out.print(f"          [dim]embeddings off: {escape(status.embedding_error)}[/]")
    out.print(
        f"[bold]contents[/]  {plural(status.files, 'file')}, {plural(status.chunks, 'chunk')}, "
        f"{status.embedded_chunks} embedded, last sync {status.last_sync or 'never'}"
    )
    for item in status.skipped:  # not stale: another `kit memory index` would skip it again
        out.print(f"[bold]skipped[/]   {escape(item.describe())}")
    by_source = ", ".join(f"{k} {v}" for k, v in status.recall.by_source.items()) or "none"
    out.print(
        f"[bold]recalls[/]   {plural(status.recall.events, 'event')} on {plural(status.recall.keys, 'passage')} "
        f"over {plural(status.recall.days, 'day')} ({by_source})"
    )


@memory.command("write")
@workspace_option
@click.argument("text")
@click.option("--topic", "-t", default=None, help="Put the note under a `## topic` heading.")
@json_option
@handle_errors
def write_cmd(workspace, text: str, topic: str | None, as_json: bool) -> None:
    """Append TEXT to today's daily note as a bullet (refused if it looks like a prompt injection)."""
    if not text.strip():  # a usage mistake, as an empty `kit memory search` query is
        raise click.UsageError("TEXT is empty: say what to write")
    ws = open_workspace(workspace)
    result = ws.memory.write(text, topic=topic)
    if not result.duplicate:  # a no-op writes nothing, so nothing fires
        ws.hooks.fire("memory:write", {"source": "cli", **result.to_json()})
    if as_json:
        emit_json(result)
        return
    if result.duplicate:
        console().print(f"already in today's note (line {result.line}): {result.path}", markup=False)
        return
    where = f" under ## {result.topic}" if result.topic else ""
    console().print(f"wrote {result.path}:{result.line}{where}", markup=False)




# ---------------------------------------------------------------------------------------------
# Dreaming commands (`promote`, `explain`) are appended below this line by the dreaming module's
# owner; keep the memory commands above it.
# ---------------------------------------------------------------------------------------------
from kit.cli.promote_cmd import explain, promote, verify  # noqa: E402

memory.add_command(promote); memory.add_command(explain); memory.add_command(verify)  # noqa: E702
