"""`kit dream [--phase light|rem|deep|all] [--dry-run] [--json]`."""

from __future__ import annotations

import click

from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    interactive,
    json_option,
    open_workspace,
    workspace_option,
)


@click.command("dream")
@workspace_option
@click.option("--phase", type=click.Choice(["light", "rem", "deep", "all"]), default="all", show_default=True,
              help="Which phase to run.")
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing at all.")
@json_option
@handle_errors
def dream(workspace, phase: str, dry_run: bool, as_json: bool) -> None:
    """Consolidate what the agent keeps recalling into MEMORY.md (light, REM, deep).

    Runs whether or not dreaming.enabled is set: that key only governs the schedule.
    """
    from kit.dreaming.runner import run_dream

    ws = open_workspace(workspace)
    result = run_dream(ws, phases=phase, dry_run=dry_run, progress=interactive() and not as_json)
    if as_json:
        emit_json(result.to_json())
        return
    render(result)


def render(result) -> None:
    out = console()
    verb = "would promote" if not result.applied else "promoted"
    head = f"dream {result.day.isoformat()}" + (" (dry run: nothing written)" if not result.applied else "")
    out.print(f"[bold]{head}[/bold]", markup=True)
    if result.light is not None:
        out.print(f"light: staged {len(result.light.staged)} of {result.light.considered} recent candidates")
    if result.rem is not None:
        out.print(f"rem:   {len(result.rem.themes)} themes, {len(result.rem.truths)} candidate truths")
        for t in result.rem.themes:
            out.print(f"       theme: {t.name} ({t.strength:.2f})")
    if "deep" in result.phases:
        out.print(f"deep:  {verb} {len(result.promoted)}; ranked {len(result.ranked)} candidates")
        for d in result.decisions:
            if d.action == "promoted":
                out.print(f"  + {d.ranked.cand.key}  score {d.ranked.score.total:.3f}")
        for key in result.retired:
            out.print(f"  > retired {key} to memory/archive/promoted.md")
        for key in result.demoted:
            out.print(f"  - {key} was removed by you; it will not come back")
    if result.changed:
        out.print("changed: " + ", ".join(result.changed))
    if result.git:
        out.print(f"git: {result.git['note']}")
