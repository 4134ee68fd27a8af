"""`kit prompt [-w PATH] [--kind K] [--json]`: the assembled system prompt and its budget report."""

from __future__ import annotations

import click

from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    json_option,
    open_workspace,
    workspace_option,
)

KINDS = ("default", "subagent", "cron", "heartbeat", "shared")  # kit.prompt.builder.KINDS, without the import


@click.command()
@workspace_option
@click.option("--kind", "kind", type=click.Choice(KINDS), default="default", show_default=True,
              help="Run kind: which files go in (§4).")
@click.option("--report", "report_only", is_flag=True, help="Show only the budget report, not the prompt text.")
@json_option
@handle_errors
def prompt(workspace, kind: str, report_only: bool, as_json: bool) -> None:
    """Show the system prompt Kit builds for this workspace, and what each file cost."""
    from kit.prompt.builder import build_prompt

    ws = open_workspace(workspace)
    result = build_prompt(ws, kind)
    if as_json:
        emit_json(result.to_json())
        return
    render_report(result, show_prompt=not report_only)


def render_report(result, *, show_prompt: bool = True) -> None:
    from rich.table import Table

    out = console()
    if show_prompt:
        out.print(result.prompt, markup=False, highlight=False)
        out.rule()
    table = Table(title=f"Bootstrap budget — kind {result.kind}, snapshot v{result.version}", title_justify="left")
    table.add_column("file")
    table.add_column("raw chars", justify="right")
    table.add_column("injected", justify="right")
    table.add_column("cut", justify="center")
    table.add_column("reason")
    for f in result.files:
        style = "yellow" if f.truncated else ("dim" if f.reason == "excluded_by_kind" else "")
        table.add_row(f.name, f"{f.raw_chars:,}", f"{f.injected_chars:,}", "✂" if f.truncated else "",
                      f.reason or "", style=style)
    out.print(table)
    s = result.skills
    out.print(
        f"skills: {s.in_prompt} of {s.eligible} eligible in the prompt ({s.format} format, {len(s.text):,} chars); "
        f"{s.total} in the catalog"
    )
    out.print(f"prompt: {result.chars:,} chars ≈ {result.est_tokens:,} tokens (chars/4, CJK 1 each, ×1.2); "
              f"template: {result.template}")
    if result.kind == "heartbeat" and result.heartbeat_empty:
        out.print("[yellow]HEARTBEAT.md has no tasks: heartbeat runs are skipped[/]")
    for warning in result.warnings:
        out.print(f"[yellow]warning:[/] {warning}", highlight=False)
