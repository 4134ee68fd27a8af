"""`kit hooks list|fire EVENT [--data JSON]|trust NAME [--json]`."""

from __future__ import annotations

import json

import click

from kit.cli.common import (
    console,
    emit_json,
    open_workspace,
    workspace_command,
)


@click.group()
def hooks() -> None:
    """Hooks: HOOK.md folders (bundled < ~/.config/kit/hooks < workspace hooks/) run on events."""


@hooks.command("list")
@workspace_command
def list_cmd(workspace, as_json: bool) -> None:
    """Every hook with its root, events, kind and whether it runs (valid, enabled, trusted)."""
    ws = open_workspace(workspace)
    rows = ws.hooks.listing()
    unread = ws.hooks.settings_problems()  # a settings file Kit cannot read has no rows to show it on
    if as_json:
        emit_json({"enabled": ws.config.hooks.enabled, "hooks": rows, "problems": [p.to_json() for p in unread]})
        return
    from rich.markup import escape

    out = console()
    if not ws.config.hooks.enabled:
        out.print("[yellow]hooks are disabled (hooks.enabled: false)[/]")
    for problem in unread:
        style = "red" if problem.severity == "error" else "yellow"
        out.print(f"[{style}]{problem.severity}:[/] {escape(str(problem))}")
    if not rows:
        out.print("no hooks")
        return

    # columns as wide as their longest value: Claude Code handlers are named like
    # claude:project:PreToolUse[0] and their root is claude-code, past the usual widths
    name_w = max(20, *(len(row["name"]) for row in rows))
    root_w = max(9, *(len(row["root"]) for row in rows))
    kind_w = max(7, *(len(row["kind"]) for row in rows))
    out.print(f"[bold]{'NAME':<{name_w}} {'STATE':<10} {'ROOT':<{root_w}} {'KIND':<{kind_w}} EVENTS[/]")
    for row in rows:
        if not row["valid"]:
            state, style = "invalid", "bold red"
        elif not row["enabled"]:
            state, style = "disabled", "dim"
        elif not row["trusted"]:
            state, style = "untrusted", "yellow"
        else:
            state, style = "active", "green"
        out.print(
            f"{escape(row['name']) + ' ' * (name_w - len(row['name']))} [{style}]{state:<10}[/] "
            f"[dim]{row['root']:<{root_w}} {row['kind']:<{kind_w}}[/] "
            + escape(", ".join(row["events"]) + _claude_source(row))
        )
        for problem in row["problems"]:  # errors first, each at its line where known
            style = "red" if problem["severity"] == "error" else "yellow"
            out.print(f"    [{style}]{problem['severity']}:[/] {escape(_located(problem))}")
        if row["valid"] and row["trusted"] is False:
            hint = row.get("review") or f"review hooks/{row['name']}/ then run `kit hooks trust {row['name']}`"
            out.print(f"    {escape(hint)}")


def _claude_source(row: dict) -> str:
    """A Claude Code handler's own event and matcher, after the Kit event it runs on:
    ` (PreToolUse, matcher "Write|Edit")`; empty for Kit's own hooks."""
    if row["root"] != "claude-code":
        return ""
    matcher = row.get("matcher")
    shown = f"matcher {json.dumps(matcher, ensure_ascii=False)}" if matcher else "no matcher"
    return f"{' ' if row['events'] else ''}({row['claude_event']}, {shown})"


def _located(problem: dict) -> str:
    """`path:line: message` of a problem's JSON, in Problem's one rendering."""
    from kit import Problem

    return str(Problem(**{key: problem[key] for key in ("area", "path", "line", "message", "severity")}))


@hooks.command("fire")
@click.argument("event")
@click.option("--data", "data_json", default="{}", help="Event data as a JSON object.")
@click.option("--session", "session_key", default=None, help="Session key to put on the event.")
@workspace_command
def fire_cmd(event: str, data_json: str, session_key: str | None, workspace, as_json: bool) -> None:
    """Fire EVENT through the hooks, as Kit would, and show the outcome.

    The event's documented data fields that --data leaves out are filled with defaults (for
    command:NAME: command NAME, args "", messages [], session_id null, key the --session)."""
    from kit import unknown_event

    try:
        data = json.loads(data_json)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--data") from None
    if not isinstance(data, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--data")
    if not event.strip():
        raise click.BadParameter("is empty: name an event (tool:before, message:received, command:NAME …)",
                                 param_hint="EVENT")
    ws = open_workspace(workspace)
    unknown = unknown_event(event)
    if unknown:
        # fired all the same (a `*` hook sees it), but Kit itself never fires it: likely a typo
        tip = "" if "did you mean" in unknown else " (a custom slash command is command:<name>)"
        click.echo(f"kit: warning: no such event: {unknown.removeprefix('event ')}{tip}", err=True)
    data = ws.hooks.documented_data(event, data, session_key=session_key)  # what --data gives wins
    outcome = ws.hooks.fire(event, data, session_key=session_key)
    if as_json:
        emit_json({"event": event, **outcome.to_json()})
        return
    from rich.markup import escape

    out = console()
    # what ran, and what applied but could not run (a hook that blocks without running is one)
    could_not = f"; could not run {', '.join(outcome.not_run)}" if outcome.not_run else ""
    out.print(f"[bold]{escape(event)}[/]: ran {escape(', '.join(outcome.ran) or 'no hooks')}{escape(could_not)}")
    for name, reply in zip(outcome.replied_by, outcome.replies, strict=True):
        out.print(f"[bold]reply[/] from {escape(name)}: {escape(reply)}")
    if outcome.blocked:
        out.print(f"[bold red]blocked[/] by {escape(outcome.blocked_by or '?')}: {escape(outcome.reason or '')}")
    for line in outcome.skipped:
        out.print(f"[yellow]skipped[/] {escape(line)}")
    for line in outcome.errors:
        out.print(f"[red]error[/] {escape(line)}")
    if outcome.data != data:
        out.print("data after hooks:")
        out.print(json.dumps(outcome.data, ensure_ascii=False, indent=2), markup=False)


@hooks.command("trust")
@click.argument("name")
@workspace_command
def trust_cmd(name: str, workspace, as_json: bool) -> None:
    """Allow NAME's current code to run (recorded by content hash outside the workspace).

    NAME `claude-code` trusts the hooks of .claude/settings.json, .claude/settings.local.json and
    ~/.claude/settings.json (with .claude/hooks/) as they are now."""
    ws = open_workspace(workspace)
    registry = ws.hooks
    entry = registry.trust(name)
    root = "claude-code" if entry is not None and entry.kind == "claude-code" else registry.get(name).root
    if as_json:
        emit_json({"name": name, "root": root, "trusted": True, "needed": entry is not None,
                   "digest": entry.digest if entry else None})
        return
    if entry is None:
        console().print(f"{name} is a {root} hook: it is trusted already")
    elif root == "claude-code":
        console().print(f"trusted the Claude Code hooks (sha256 {entry.digest[:12]}); editing .claude/settings*.json, "
                        "~/.claude/settings.json or .claude/hooks/ will need trusting again")
        for problem in registry.settings_problems():  # trusted as they are: what of them cannot run
            click.echo(f"kit: warning: {problem}", err=True)
    else:
        console().print(f"trusted {name} (sha256 {entry.digest[:12]}); editing its files will need trusting again")
