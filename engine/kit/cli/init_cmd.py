"""`kit init [PATH] [--git] [--force]`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli.common import emit_json, group_workspace, handle_errors, json_option


@click.command()
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option("--git", "use_git", is_flag=True, help="git init and make the first commit (sets git.autocommit).")
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
@json_option
@handle_errors
def init(path: Path, use_git: bool, force: bool, as_json: bool) -> None:
    """Create a workspace at PATH (default: here) from Kit's template.

    Existing files are never overwritten without --force.
    """
    from kit import init_workspace

    path = path or group_workspace() or Path(".")
    result = init_workspace(path, git=use_git, force=force)
    if as_json:
        emit_json(result)
        return
    for rel in result.created:
        click.echo(f"  created      {rel}")
    for rel in result.overwritten:
        click.echo(f"  overwritten  {rel}")
    for rel in result.updated:
        click.echo(f"  updated      {rel} (git.autocommit: true added at its end)")
    from kit import NEVER_OVERWRITTEN

    for rel in result.skipped:
        # --force never overwrites memory: offering it there was a promise it did not keep
        why = "memory is never overwritten" if rel in NEVER_OVERWRITTEN else "exists; --force overwrites"
        click.echo(f"  kept         {rel} ({why})")
    if result.committed:
        click.echo("  git          " + ("first commit of the workspace (every file in it)" if result.first_commit
                                       else "committed the files kit init wrote"))
    if use_git and result.autocommit:
        click.echo("  git          git.autocommit is on: a dream (or a verify) that changes MEMORY.md commits the files it changed")
    for note in result.notes:
        click.echo(f"  note         {note}")
    click.echo(f"Workspace ready at {result.root}. Next: cd there, `kit doctor`, `kit prompt`.")
