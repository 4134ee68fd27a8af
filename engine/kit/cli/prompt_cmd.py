"""`kit prompt [-w PATH] [--kind K] [--json]`: the assembled system prompt and its budget report."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kit import KINDS
from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    json_option,
    open_workspace,
    workspace_option,
)

if TYPE_CHECKING:  # pragma: no cover
    from kit import Workspace


@click.command()
@workspace_option
@click.option("--kind", "kind", type=click.Choice(KINDS), default="default", show_default=True,
              help="Run kind: which workspace files go in.")
@click.option("--report", "report_only", is_flag=True,
              help="Show only the budget report (on stdout), not the prompt text.")
@json_option
@handle_errors
def prompt(workspace, kind: str, report_only: bool, as_json: bool) -> None:
    """Show the system prompt Kit builds for this workspace, and what each file cost.

    The prompt text goes to stdout alone (`kit prompt > prompt.txt` saves exactly the prompt);
    the budget report and warnings go to stderr. With --report only the report is printed, on stdout.
    """
    ws = open_workspace(workspace, config_warnings=False)
    result = ws.prompt(kind)
    if as_json:
        emit_json(result.to_json())
        # stdout stays one JSON document (its `warnings` hold them too); a broken kit.yaml is said
        # on stderr in the words of every other command, `kit config show --json` included
        for notice in ws.config_notices():
            click.echo(f"kit: {notice}", err=True)
        return
    render_report(result, show_prompt=not report_only, left_out=_left_out(ws))


# the words for `SkillCatalog.left_out`'s reasons, in the order they are said
_WHY = {"blocked": "blocked", "missing": "missing requirements", "unsupported": "unsupported here",
        "user-only": "user-only"}


def _left_out(ws: Workspace) -> str:
    """Why the catalog's other skills are not in the prompt: " (2 blocked, 1 user-only: see kit
    skills list)", or "" when every skill may be."""
    counts = ws.skills.left_out()
    said = [f"{counts[why]} {words}" for why, words in _WHY.items() if counts.get(why)]
    return f" ({', '.join(said)}: see kit skills list)" if said else ""


def render_report(result, *, show_prompt: bool = True, left_out: str = "") -> None:
    """With the prompt: the prompt on stdout, the report on stderr. Without: the report on stdout."""
    from rich.table import Table
    from rich.text import Text

    if show_prompt:
        click.echo(result.prompt, nl=not result.prompt.endswith("\n"))
    out = console(stderr=show_prompt)
    if show_prompt:
        out.rule()
    table = Table(title=f"Bootstrap budget — kind {result.kind}, snapshot v{result.version}", title_justify="left")
    table.add_column("file")
    table.add_column("raw chars", justify="right")
    table.add_column("allowance", justify="right")
    table.add_column("injected", justify="right")
    table.add_column("cut", justify="center")
    table.add_column("reason")
    for f in result.files:
        if f.problem:
            style = "red"
        elif f.truncated:
            style = "yellow"
        else:
            style = "dim" if f.reason == "excluded_by_kind" else ""
        allowance = f"{f.allowance:,}" if f.reason != "excluded_by_kind" and not (f.problem and not f.raw_chars) else "—"
        reason = "; ".join(part for part in (f.reason, f.problem) if part)
        table.add_row(Text(f.name), f"{f.raw_chars:,}", allowance, f"{f.injected_chars:,}",
                      "✂" if f.truncated else "", Text(reason), style=style)
    out.print(table)
    if result.cuts:
        out.print("allowance: file characters kept (head + tail); injected: what the prompt holds, "
                  "truncation marker included", style="dim")
    s = result.skills
    out.print(
        f"skills: {s.in_prompt} of {s.eligible} eligible in the prompt ({s.format} format, {len(s.text):,} chars); "
        f"{s.total} in the catalog{left_out}"
    )
    out.print(f"prompt: {result.chars:,} chars ≈ {result.est_tokens:,} tokens (chars/4, CJK 1 each, ×1.2); "
              f"template: {result.template}")
    if result.kind == "heartbeat" and result.heartbeat_empty:
        out.print("[yellow]HEARTBEAT.md has no tasks: heartbeat runs are skipped[/]")
    # on stderr a warning says it is Kit's, as every command's does; in the --report on stdout it is a line of the report
    label = "kit: warning:" if show_prompt else "warning:"
    for warning in result.warnings:
        out.print(Text.assemble((label, "yellow"), " ", warning))
