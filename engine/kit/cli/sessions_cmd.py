"""`kit sessions list|show|search`: the agent's conversation transcripts."""

from __future__ import annotations

import click

from kit import plural
from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    json_option,
    open_workspace,
    workspace_command,
    workspace_option,
)


def _store(workspace):
    """The workspace's session store, opened: an index that lacks transcripts (state.db deleted or
    moved aside) is rebuilt from them here, and said once on stderr."""
    store = open_workspace(workspace).sessions
    store.db.execute("SELECT 1")  # opening re-indexes
    _say_reindexed(store)
    return store


def _say_reindexed(store) -> None:
    """On stderr, when opening the store put transcripts back into a lost or incomplete index."""
    if store.reindexed:
        click.echo(f"kit: re-indexed {plural(store.reindexed, 'session')} from .kit/sessions/ "
                   f"(the session index in .kit/state.db lacked them)", err=True)
    for session_id, why in sorted(store.unindexed.items()):  # skipped, never in the way: but said
        click.echo(f"kit: warning: .kit/sessions/{session_id}.jsonl: not re-indexed ({why}); "
                   "kit sessions cannot show it until it reads", err=True)


@click.group("sessions")
def sessions() -> None:
    """List, show and search conversation sessions (.kit/sessions)."""


@sessions.command("list")
@workspace_option
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--key", default=None, help="Only sessions of this key.")
@json_option
@handle_errors
def list_cmd(workspace, limit, key, as_json):
    """Sessions, most recently active first."""
    items = _store(workspace).list(limit=limit, key=key)
    if as_json:
        emit_json({"sessions": [s.to_json() for s in items]})
        return
    if not items:
        click.echo("no sessions yet; start one with `kit run`")
        return
    from datetime import datetime

    from rich.markup import escape
    from rich.table import Table

    table = Table(box=None)
    table.add_column("id", no_wrap=True, min_width=22)  # ids are what you type next: never cut
    table.add_column("key", overflow="fold")
    table.add_column("updated", no_wrap=True, min_width=16)
    table.add_column("msgs", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("title", ratio=1, overflow="fold")
    for s in items:
        key_text = "-" if s.key == s.id else s.key  # a one-shot session has no key (null in --json)
        updated = datetime.fromtimestamp(s.updated).astimezone().strftime("%Y-%m-%d %H:%M")
        # keys and titles are user text: "[/dim]" in a message must print, not parse as markup
        table.add_row(s.id, escape(key_text), updated, str(s.messages), str(s.total_tokens),
                      escape(s.title) + ("" if s.ended is None else "  [dim](ended)[/dim]"))
    console().print(table)


@sessions.command("show")
@click.argument("session_id")
@workspace_command
def show_cmd(session_id, workspace, as_json):
    """One session's transcript (ID, a unique ID prefix, or a session key)."""
    store = _store(workspace)
    info = store.get(session_id)
    lines = store.transcript(info.id)
    if as_json:
        emit_json({"session": info.to_json(), "messages": lines})
        return
    from rich.markup import escape

    out = console()
    cached = sum(int((line.get("usage") or {}).get("cache_read_tokens") or 0) for line in lines)
    written = sum(int((line.get("usage") or {}).get("cache_write_tokens") or 0) for line in lines)
    cache = f" ({cached} read from the prompt cache, {written} written)" if cached or written else ""
    out.print(f"[bold]{info.id}[/bold] · key {escape(info.key if info.key != info.id else '-')} · "
              f"{plural(info.messages, 'message')} · "
              f"{plural(info.total_tokens, 'token')}{cache}")
    for line in lines:
        if line.get("hidden"):
            continue
        role = line.get("role", "?")
        content = str(line.get("content") or "")
        if line.get("kind") == "compaction":
            out.print(f"[dim]── compaction ({line.get('mode')}) ──[/dim]")
            continue
        if line.get("tool_calls"):
            calls = ", ".join(c["function"]["name"] for c in line["tool_calls"])
            content = (content + "\n" if content else "") + f"[calls {calls}]"
        if role == "tool":
            content = content if len(content) <= 300 else content[:299] + "…"
        note = {"length": " [cut by max_tokens]", "interrupted": " [broke off mid-reply]"}.get(
            line.get("finish_reason") or "", "")
        failed = [a for a in line.get("attempts") or () if a.get("outcome") != "ok"]
        if failed and line.get("model"):
            note += f" [answered by {line['model']} after {plural(len(failed), 'failed attempt')}]"
        out.print(f"[bold]{role}[/bold] #{line.get('seq')}: ", end="")
        out.print(content + note, markup=False, highlight=False)


@sessions.command("search")
@click.argument("query")
@workspace_option
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@json_option
@handle_errors
def search_cmd(query, workspace, limit, as_json):
    """Full-text search over messages (words, and CJK/substrings via trigrams)."""
    if not query.strip():  # as `kit memory search ""`: an empty query is a mistake, not "no matches"
        raise click.UsageError("QUERY is empty: say what to search for")
    hits = _store(workspace).search(query, limit=limit)
    if as_json:
        emit_json({"query": query, "results": [h.to_json() for h in hits]})
        return
    if not hits:
        click.echo("no matches")
        return
    out = console()
    for hit in hits:
        out.print(f"[bold]{hit.session_id}[/bold] #{hit.seq} {hit.role}: ", end="")
        out.print(hit.snippet, markup=False, highlight=False)
