"""`kit doctor [--json]`: every problem, with file and line; exit 1 if any error."""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from kit import plural
from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    json_option,
    open_workspace,
    workspace_option,
)

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


@click.command()
@workspace_option
@click.option("--offline", is_flag=True,
              help="Ask no server: skip the checks that each configured model's base URL answers.")
@json_option
@handle_errors
def doctor(workspace, offline: bool, as_json: bool) -> None:
    """Check the workspace: config, documents, skills, hooks, memory index, dreaming, providers."""
    ws = open_workspace(workspace, config_warnings=False)
    findings = ws.doctor(offline=offline)
    errors = [f for f in findings if f.severity == "error"]
    if as_json:
        emit_json(
            {
                "workspace": str(ws.root),
                "ok": not errors,
                "errors": len(errors),
                "warnings": sum(f.severity == "warning" for f in findings),
                "findings": [f.to_json() for f in findings],
            }
        )
    else:
        out = console()
        # rich markup is for Kit's styles only: a finding says `pip install 'kit-agent[mcp]'`
        out.print(f"[bold]Workspace[/] {escape(str(ws.root))}")
        if not findings:
            out.print("[green]✓ no problems found[/]")
        for f in findings:
            out.print(f"[{STYLE.get(f.severity, '')}]{f.severity:<7}[/] [dim]{f.area:<9}[/] {escape(str(f))}", markup=True)
        if errors:
            out.print(f"[bold red]{plural(len(errors), 'error')}[/]")
    if errors:
        sys.exit(1)
