"""`kit dream [--phase light|rem|deep|all] [--dry-run] [--limit N] [--json]`."""

from __future__ import annotations

from collections import Counter
from functools import partial

import click

from kit import action_words, one_line, plural
from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    interactive,
    json_option,
    open_workspace,
    progress_display,
    workspace_option,
)

FACT_CHARS = 100  # a promoted fact on its line, cut at a word
# a nightly cron log entry listed every candidate Deep held back: on a busy log, 600 of them (1,200
# lines) around the ten promotions; the strongest few say what Deep did, the rest are counted
HELD_BACK_SHOWN = 10


@click.command("dream")
@workspace_option
@click.option("--phase", type=click.Choice(["light", "rem", "deep", "all"]), default="all", show_default=True,
              help="Which phase to run.")
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing at all.")
@click.option("--limit", type=click.IntRange(min=0), default=HELD_BACK_SHOWN, show_default=True,
              help="Candidates Deep held back to list, in rank order (text output); the rest are counted.")
@json_option
@handle_errors
def dream(workspace, phase: str, dry_run: bool, limit: int, as_json: bool) -> None:
    """Consolidate what the agent keeps recalling into MEMORY.md (light, REM, deep).

    Runs whether or not dreaming.enabled is set: that key only governs the schedule.
    """
    ws = open_workspace(workspace)
    with progress_display(interactive() and not as_json) as show:
        result = ws.dream(phases=phase, dry_run=dry_run, progress=show)
    if as_json:
        emit_json(result.to_json())
        return
    render(result, held_back_shown=limit)


def _held_back_count(rest: list, *, more: bool, total: int, result) -> str:
    """One line for the held-back candidates not listed: how many, why, and where to read more.
    After an applied run the pointer is the Deep report, never a command: run again, `kit dream`
    would dream again (the same evening: with today's limit used up; the next morning: a new night)."""
    counts = Counter(action_words(d.action) for d in rest)
    if len(counts) == 1:  # "3 more held back (3 stale)" says the number twice
        why = next(iter(counts))
    else:
        why = ", ".join(f"{n} {words}" for words, n in sorted(counts.items(), key=lambda c: (-c[1], c[0])))
    line = f"… {len(rest)}{' more' if more else ''} held back ({why})"
    if not result.applied:  # a preview may be run again as it is
        return f"{line}; `kit dream --dry-run --limit {total}` lists all {total}"
    report = next((rel for rel in result.changed if rel.startswith("memory/dreaming/deep/")), None)
    return f"{line}; more in {report}" if report else line


def render(result, *, held_back_shown: int = HELD_BACK_SHOWN) -> None:
    out = console()
    say = partial(out.print, markup=False)  # keys, theme names and notes come from user text
    verb = "would promote" if not result.applied else "promoted"
    head = f"dream {result.day.isoformat()}" + (" (dry run: nothing written)" if not result.applied else "")
    say(head, style="bold")
    if result.light is not None:
        say(f"light: staged {len(result.light.staged)} of {plural(result.light.considered, 'recent candidate')}")
    if result.rem is not None:
        say(f"rem:   {plural(len(result.rem.themes), 'theme')}, {plural(len(result.rem.truths), 'candidate truth')}")
        for t in result.rem.themes:
            say(f"       theme: {t.name} ({t.strength:.3f})")
    if "deep" in result.phases:
        say(f"deep:  {verb} {len(result.promoted)}; ranked {plural(len(result.ranked), 'candidate')}")
        if result.ranked and not result.promoted and not result.to_verify:
            if all(not r.gates["not_promoted"] for r in result.ranked):
                # a second dream the same day: nothing is held back, everything is in already
                say("       nothing new: every candidate is already in MEMORY.md")
            elif not result.decisions:
                # "promoted 0" alone reads like a failure: it is the gates, and they can be read
                say("       none passed the promotion gates yet; `kit memory promote` shows which gate "
                    "holds each back")
        for d in result.decisions:
            if d.writes:  # the fact itself: a key alone sends the reader to the note
                say(f"  + {d.ranked.cand.key}  score {d.ranked.score.total:.3f}  {one_line(d.ranked.cand.snippet, FACT_CHARS)}")
                if d.action == "superseded":  # a replaced value is part of the night: it left MEMORY.md
                    say(f"    {d.detail}")
        held_back = [d for d in result.decisions if d.held_back]  # (to verify: its own line below)
        for d in held_back[:held_back_shown]:
            say(f"  · {d.ranked.cand.key}  {action_words(d.action)}  {one_line(d.ranked.cand.snippet, FACT_CHARS)}")
            say(f"    {d.detail}")
        if rest := held_back[held_back_shown:]:
            say("  " + _held_back_count(rest, more=held_back_shown > 0, total=len(held_back), result=result))
        for key in result.retired:
            say(f"  > retired {key} to memory/archive/promoted.md")
        for key in result.demoted:
            say(f"  - {key} was removed by you; it will not come back")
        if result.to_verify:
            # a contradiction is never promoted: it waits for the person, who must hear of it here
            # (a dry run queues nothing: "review with kit memory verify" found nothing to review)
            then = ("would be queued for `kit memory verify` by a dream" if not result.applied
                    else "queued; review with `kit memory verify`")
            say(f"to verify: {plural(len(result.to_verify), 'contradiction')} with MEMORY.md {then}", style="yellow")
    if result.changed:
        say("changed: " + ", ".join(result.changed))
    elif result.applied and not result.ranked and not any(
            phase is not None and phase.considered for phase in (result.light, result.rem)):
        # "every run writes reports" is what people read first: an idle night is said to write none
        say("nothing to report: no recalls in the lookback window, so no report or diary entry was written")
    if result.git:
        say(f"git: {result.git['note']}")
    for note in result.notes:
        say(f"note: {note}")
