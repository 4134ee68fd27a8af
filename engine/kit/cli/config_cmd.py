"""`kit config show [--json]`: the effective configuration and where each value came from."""

from __future__ import annotations

import json
import sys

import click

from kit.cli.common import (
    console,
    emit_json,
    interactive,
    open_workspace,
    workspace_command,
)


@click.group()
def config() -> None:
    """Inspect the effective configuration."""


@config.command("show")
@workspace_command
def show(workspace, as_json: bool) -> None:
    """Print every effective value with its layer (default, user, workspace, env, flag)."""
    ws = open_workspace(workspace, config_warnings=False)
    cfg = ws.config
    flat = cfg.flat()
    errors = [str(i) for i in ws.snapshot.config_issues]
    notices = ws.config_notices()  # each problem and what is in force instead, as every command says it
    if as_json:
        emit_json(
            {
                "workspace": str(ws.root),
                "values": {k: {"value": v, "source": cfg.source(k)} for k, v in sorted(flat.items())},
                "config": cfg.data,
                "errors": errors,
            }
        )
        for notice in notices:  # stdout stays one JSON document; the exit code's reason goes to stderr
            click.echo(f"kit: {notice}", err=True)
        sys.exit(1 if errors else 0)
    rows = [(key, json.dumps(value, ensure_ascii=False), cfg.source(key)) for key, value in sorted(flat.items())]
    if not interactive():
        # piped: one whole line per key (grep-able, never wrapped at 80 columns)
        width = max(len(key) for key, _, _ in rows)
        for key, value, source in rows:
            click.echo(f"{key:<{width}}  {value}  ({source})")
    else:
        from rich.markup import escape
        from rich.table import Table

        table = Table(show_header=True, header_style="bold", box=None)
        table.add_column("key", no_wrap=True)
        table.add_column("value", overflow="fold")
        table.add_column("from", style="dim", no_wrap=True)
        for key, value, source in rows:
            # a value is the user's text, never rich markup ("[bold]" in a string stays)
            table.add_row(escape(key), escape(value), escape(source), style="" if source == "default" else "bold")
        console().print(table)
    # what failed is not in the table (its valid settings are): say so on stderr and exit 1, as doctor does
    err_out = console(stderr=True)
    for notice in notices:
        err_out.print(f"kit: {notice}", markup=False, highlight=False)
    if errors:
        sys.exit(1)
