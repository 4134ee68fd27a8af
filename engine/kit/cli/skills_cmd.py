"""`kit skills list|view NAME [FILE]|new NAME|check [NAME]|trust NAME`, each with --json."""

from __future__ import annotations

import sys

import click

from kit import plural
from kit.cli.common import (
    console,
    emit_json,
    open_workspace,
    workspace_command,
)

STYLE = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "dim", "error": "bold red",
         "warning": "yellow"}
READY = {"available": "green", "missing": "yellow", "unsupported": "dim"}


@click.group()
def skills() -> None:
    """Skills: list, view, create, check and trust them."""


@skills.command("list")
@workspace_command
def list_cmd(workspace, as_json: bool) -> None:
    """Every skill: source root, readiness (or blocked / invalid), flags and description."""
    catalog = open_workspace(workspace).skills
    invalid = catalog.invalid
    if as_json:
        emit_json({"skills": [s.to_json() for s in catalog],
                   "invalid": [p.to_json() for p in invalid],
                   "problems": [p.to_json() for p in catalog.problems]})
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False)
    # fold, not "…": an invalid skill's readiness holds FILE:LINE and the reason, one long word
    # that the default overflow cut to "invalid (skills/broken/SK…" at 80 columns
    for column in ("name", "source", "readiness", "flags", "description"):
        table.add_column(column, overflow="fold")
    for s in catalog:
        flags = []
        if s.always:
            flags.append("always")
        if not s.model_invocable:
            flags.append("user-only")
        if not s.user_invocable:
            flags.append("model-only")
        if s.overrides:
            flags.append("overrides " + ",".join(s.overrides))
        if s.blocked:  # readiness in JSON stays available|missing|unsupported; here blocked says it all
            ready = Text(f"blocked ({s.unblock_hint})" if s.scan.untrustable
                         else f"blocked (untrusted code: run kit skills trust {s.name})", style="red")
        else:
            text = s.readiness
            if s.missing:
                text += " (" + "; ".join(f"{k}: {', '.join(v)}" for k, v in s.missing.items()) + ")"
            ready = Text(text, style=READY.get(s.readiness, ""))
        table.add_row(s.name, s.source, ready, " ".join(flags), Text(s.description))
    for p in invalid:
        table.add_row(p.details["skill"], p.details["source"], Text(f"invalid ({p})", style="bold red"), "", "")
    out = console()
    out.print(table)
    if invalid:
        out.print(f"[bold red]{plural(len(invalid), 'invalid skill file')}[/] not loaded; `kit skills check` shows every problem")
    stale = {p.path for p in catalog.errors} - {p.path for p in invalid}
    if stale:
        out.print(f"[yellow]{plural(len(stale), 'skill file')} {'has' if len(stale) == 1 else 'have'} a broken edit[/]: their last good version is in use; "
                  "`kit skills check` says why")


@skills.command("view")
@click.argument("name")
@click.argument("file", required=False)
@workspace_command
def view_cmd(name: str, file: str | None, workspace, as_json: bool) -> None:
    """Show a skill's SKILL.md and linked files, or one FILE inside it."""
    from kit import SkillFile, skill_view

    result = skill_view(open_workspace(workspace), name, file, for_model=False)
    if as_json:
        emit_json(result.to_json())
    else:
        out = console()
        if isinstance(result, SkillFile):
            if result.ok:
                click.echo(result.content, nl=not (result.content or "").endswith("\n"))
            else:  # exit 1: the message (and the files that do exist) go to stderr
                err = console(stderr=True)
                err.print(f"[red]kit: {result.error}[/]", highlight=False)
                _print_files(err, result.available_files)
        else:
            blocked = ", [red]blocked[/]" if result.blocked else ""
            out.print(f"[bold]{result.name}[/] [dim]({result.source}: {result.location})[/] — {result.readiness}{blocked}")
            if result.blocked:  # kept from the model: say why, as `kit skills list` does
                out.print(f"[red]blocked:[/] {result.blocked}", highlight=False)
            out.print(result.description, highlight=False)
            out.rule()
            click.echo(result.body.strip("\n"))
            if result.files:
                out.rule()
                _print_files(out, result.files)
    if isinstance(result, SkillFile) and not result.ok:
        sys.exit(1)


def _print_files(out, files: dict) -> None:
    for folder, paths in files.items():
        out.print(f"[bold]{folder}/[/]" if folder != "other" else "[bold]other[/]")
        for p in paths:
            out.print(f"  {p}", highlight=False)


@skills.command("new")
@click.argument("name")
@click.option("--description", "-d", default=None, help="One or two sentences: what it does and when to use it.")
@workspace_command
def new_cmd(name: str, description: str | None, workspace, as_json: bool) -> None:
    """Scaffold skills/NAME/SKILL.md in the workspace (it passes `kit skills check`).

    Without --description it writes a placeholder that `kit skills check` warns about until edited."""
    from kit import new_skill

    result = new_skill(open_workspace(workspace), name, description)
    if as_json:
        emit_json(result.to_json())
    else:
        out = console()
        out.print(f"created {result.path}; edit it, then run `kit skills check {name}`", highlight=False)
        if result.placeholder:
            out.print("[yellow]its description is a placeholder[/]: replace it with what the skill does and when "
                      f"to use it (or pass --description next time); `kit skills check {name}` warns until then",
                      highlight=False)


@skills.command("check")
@click.argument("name", required=False)
@workspace_command
def check_cmd(name: str | None, workspace, as_json: bool) -> None:
    """Validation problems and security findings; exit 1 on errors or untrusted critical code."""
    check = open_workspace(workspace).skills.check(name)
    if as_json:
        emit_json(check.to_json())
    else:
        out = console()
        for p in check.problems:
            out.print(f"[{STYLE[p.severity]}]{p.severity:<8}[/] {p}", highlight=False)
        for s in check.skills:
            for f in s.scan.findings:
                out.print(f"[{STYLE.get(f.severity, '')}]{f.severity:<8}[/] {s.name}: {f.path}:{f.line}: "
                          f"{f.message} [{f.details['rule']}]  [dim]{f.details['excerpt']}[/]", highlight=False)
            if s.scan.untrustable:  # a link out of the skill, too many files: trust cannot lift it
                out.print(f"         {s.name}: [red]blocked[/] ({s.unblock_hint})")
            elif s.scan.critical:
                state = "[green]trusted[/]" if s.trusted else "[red]blocked until trusted[/] (`kit skills trust " + s.name + "`)"
                out.print(f"         {s.name}: {state}")
        checked = f"skill '{name}'" if name else plural(len(check.skills), "skill")
        note = f" ({plural(len(check.warnings), 'warning')})" if check.warnings else ""
        # the warnings printed above are counted in the failing summary too (it said "2 errors, 0 blocked" under them)
        out.print(f"[green]✓ {checked} OK[/]{note}" if check.ok
                  else f"[bold red]✗ {plural(len(check.errors), 'error')}, {len(check.blocked)} blocked[/]{note}")
    if not check.ok:
        sys.exit(1)


@skills.command("trust")
@click.argument("name")
@workspace_command
def trust_cmd(name: str, workspace, as_json: bool) -> None:
    """Allow a skill's current code (by content hash); any later change needs trusting again."""
    from kit import trust_skill

    result = trust_skill(open_workspace(workspace), name)
    if as_json:
        emit_json(result.to_json())
    else:
        console().print(f"trusted skill '{result.name}' (code sha256 {result.digest[:12]}…, "
                        f"{plural(result.critical, 'critical finding')} accepted)", highlight=False)
