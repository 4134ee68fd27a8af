"""`kit cron install|show|uninstall [--systemd]`: schedule dreaming with cron or a user systemd timer."""

from __future__ import annotations

import click

from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    json_option,
    open_workspace,
    stacked,
    workspace_option,
)

systemd_option = click.option("--systemd", is_flag=True, help="Use a user systemd timer instead of crontab.")
cron_options = stacked(workspace_option, systemd_option, json_option, handle_errors)


@click.group("cron")
def cron() -> None:
    """Run `kit dream` on dreaming.schedule from cron (or a systemd user timer)."""


def _render(result, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_json())
        return
    out = console()
    if result.action == "show":
        out.print(result.entry if result.installed else f"no Kit {result.kind} entry for this workspace", markup=False)
    elif result.action == "install":
        verb = "installed" if result.changed else "already installed"
        out.print(f"{verb} ({result.kind}): {result.entry}", markup=False)
    else:
        out.print("removed Kit's entry" if result.changed else "nothing to remove", markup=False)
    for f in result.files:
        out.print(f"  {f}", markup=False)
    if result.note:
        out.print(f"note: {result.note}", markup=False)


@cron.command("install")
@cron_options
def install(workspace, systemd: bool, as_json: bool) -> None:
    """Add (or update) the one crontab line for this workspace."""
    _render(open_workspace(workspace).cron("install", systemd=systemd), as_json)


@cron.command("show")
@cron_options
def show(workspace, systemd: bool, as_json: bool) -> None:
    """Print this workspace's crontab line (or timer schedule)."""
    _render(open_workspace(workspace).cron("show", systemd=systemd), as_json)


@cron.command("uninstall")
@cron_options
def uninstall(workspace, systemd: bool, as_json: bool) -> None:
    """Remove only Kit's line for this workspace; every other line stays."""
    _render(open_workspace(workspace).cron("uninstall", systemd=systemd), as_json)
