"""`kit import openclaw SRC [DEST]`: plan, show, apply."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kit import plural
from kit.cli.common import emit_json, group_workspace, handle_errors, json_option, stacked

# what every importer takes after its own arguments
plan_options = stacked(
    click.option("--dry-run", is_flag=True, help="Show the plan and write nothing."),
    click.option("--force", is_flag=True, help="Overwrite DEST files whose content differs."),
    click.option("--git", "use_git", is_flag=True, help="Commit exactly the imported files (git init when needed)."),
    click.option("-v", "--verbose", is_flag=True, help="List unchanged files too."),
    json_option,
    handle_errors,
)

_LABEL = {"create": "create", "append": "append", "overwrite": "overwrite", "unchanged": "unchanged",
          "conflict": "CONFLICT", "withheld": "WITHHELD", "skip": "skip"}


@click.group("import")
def import_() -> None:
    """Bring another agent's workspace into Kit (plan first; nothing is overwritten without --force)."""


@import_.command("openclaw")
@click.argument("src", type=click.Path(path_type=Path))
@click.argument("dest", type=click.Path(path_type=Path), required=False)
@click.option("--config", "config", type=click.Path(path_type=Path), default=None,
              help="openclaw.json (default: in SRC or its parent folder, as ~/.openclaw/ holds it).")
@plan_options
def openclaw(src: Path, dest: Path | None, config: Path | None, dry_run: bool, force: bool, use_git: bool,
             verbose: bool, as_json: bool) -> None:
    """Import the OpenClaw workspace SRC into DEST (default: SRC itself, converted in place).

    Copies the bootstrap files, MEMORY.md (promotion markers become Kit provenance), daily notes,
    skills and hooks (disabled; TypeScript handlers are reported as not runnable); maps
    openclaw.json into a new kit.yaml. Text the threat scan flags is left out and reported.
    A second run finds nothing to do. Exit 1 when a conflict was left unwritten.
    """
    from kit import apply_plan, plan_openclaw

    plan = plan_openclaw(src, _dest(dest), config=config, force=force)
    result = None if dry_run else apply_plan(plan, git=use_git)
    _finish(plan, result, dry_run, verbose, as_json)


@import_.command("hermes")
@click.argument("src", type=click.Path(path_type=Path), required=False)
@click.argument("dest", type=click.Path(path_type=Path), required=False)
@plan_options
def hermes(src: Path | None, dest: Path | None, dry_run: bool, force: bool, use_git: bool, verbose: bool,
           as_json: bool) -> None:
    """Import the Hermes home SRC (default: $HERMES_HOME, else ~/.hermes) into DEST (default: the
    current workspace, else the current folder).

    SOUL.md and AGENTS.md are copied; the §-separated entries of memories/MEMORY.md and USER.md are
    appended to Kit's MEMORY.md and USER.md as list items with provenance; skills are flattened;
    hooks come over disabled (port handle(event_type, context) to handle(event)); config.yaml
    values map into a new kit.yaml. Secrets and Hermes' databases are never copied.
    Exit 1 when a conflict was left unwritten.
    """
    from kit import WorkspaceError, apply_plan, find_workspace, plan_hermes

    dest = _dest(dest)
    if dest is None:
        try:
            dest = find_workspace()
        except WorkspaceError:
            dest = Path.cwd()
    plan = plan_hermes(src, dest, force=force)
    result = None if dry_run else apply_plan(plan, git=use_git)
    _finish(plan, result, dry_run, verbose, as_json)


def _dest(dest: Path | None) -> Path | None:
    """DEST, or the -w given before the command (`kit -w PATH import …` imports into PATH): both,
    naming different folders, is a usage error rather than a guess at which one was meant."""
    given = group_workspace()
    if given is None or dest is None:
        return dest if dest is not None else given
    if dest.resolve() != given.resolve():
        raise click.UsageError(f"DEST ({dest}) and -w ({given}) name different folders; give one")
    return dest


def _finish(plan, result, dry_run: bool, verbose: bool, as_json: bool) -> None:
    if as_json:
        emit_json({**plan.to_json(), "applied": False} if result is None else result)
    else:
        _show(plan, verbose)
        if plan.nothing_to_do:  # with conflicts, those files are not "already there": said below
            click.echo("Nothing else to import: every other file is already there." if plan.conflicts
                       else "Nothing to import: every file is already there.")
        elif result is None:
            click.echo(f"Dry run: {plural(len(plan.writes), 'file')} would be written to {plan.dest}; nothing was.")
        else:
            click.echo(f"Imported {plural(len(result.written), 'file')} into {plan.dest}."
                       + (" Committed them." if result.committed else "")
                       + (" Next: `kit doctor`, `kit prompt`." if result.written else ""))
        if plan.conflicts:
            n = len(plan.conflicts)
            click.echo(f"{plural(n, 'conflict')} not overwritten: --force overwrites {'it' if n == 1 else 'them'}.",
                       err=True)
    if plan.conflicts:
        sys.exit(1)


def _show(plan, verbose: bool) -> None:
    for action in plan.actions:
        if action.kind == "unchanged" and not verbose:
            continue
        where = action.path or action.source
        extra = f" (from {action.source})" if action.path and action.source and action.source != action.path else ""
        if action.note.startswith("from "):  # the note says where from already ("from skills/tools/x/ (flattened)")
            extra = ""
        note = f" — {action.note}" if action.note else ""
        click.echo(f"  {_LABEL[action.kind]:<10} {where}{extra}{note}")
    for line in plan.notes:
        click.echo(f"  note       {line}")
