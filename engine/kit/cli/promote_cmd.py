"""`kit memory promote [--apply] [--json]`, `kit memory explain KEY|TEXT [--json]` and
`kit memory verify [list|accept N|reject N|keep-both N] [--json]`."""

from __future__ import annotations

from functools import partial

import click

from kit import action_words, count_text, plural
from kit.cli.common import (
    console,
    emit_json,
    handle_errors,
    json_option,
    open_workspace,
    stacked,
    workspace_option,
)

# accept, reject and keep-both take the same arguments
verify_options = stacked(workspace_option, click.argument("item_id", metavar="N", type=int), json_option,
                         handle_errors)

FACT_CHARS = 60  # the fact column: one line, cut at a word


def _num(value, *, score: bool) -> str:
    """Scores with 3 decimals in human output; counts and days as whole numbers when they are, and
    credited counts (fractions of a recall) with 2, as the credit line shows them."""
    if score:
        return f"{float(value):.3f}"
    return count_text(value) if isinstance(value, float) else str(value)


@click.command("promote")
@workspace_option
@click.option("--apply", "apply", is_flag=True, help="Write the promotions (default: only rank them).")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="Rows to show (text output).")
@json_option
@handle_errors
def promote(workspace, apply: bool, limit: int, as_json: bool) -> None:
    """Rank promotion candidates (Deep only); with --apply, promote them to MEMORY.md."""
    ws = open_workspace(workspace)
    result = ws.dream(phases=("deep",), dry_run=not apply)
    if as_json:
        data = result.to_json()
        emit_json({"now": data["now"], "applied": data["applied"], **data["deep"], "changed": data["changed"],
                   "git": data["git"]})
        return
    from kit import one_line

    out = console()
    if not result.ranked:  # a header with no rows read like a failure
        out.print("no candidates yet: nothing from the daily notes has been recalled (searches by the agent, "
                  "and `kit memory search --record`, log what they find)", markup=False)
        return
    decided = {d.ranked.cand.id: d.action for d in result.decisions}
    rows = []
    for r in result.ranked[:limit]:
        c = r.cand
        action = decided.get(c.id)
        status = (action_words(action, applied=apply) if action else
                  "passed" if r.passed else "blocked: " + "; ".join(r.blocked_reasons))
        # the counts the gates compare: credited (a hit counts when it answered), as explain's credit line
        rows.append((f"{r.score.total:.3f}", f"{_num(c.credited, score=False)}/{len(c.credited_queries)}/"
                     f"{len(c.credited_days)}", c.key, one_line(c.snippet, FACT_CHARS), status))
    # plain aligned lines, not a table: the fact is cut to FACT_CHARS and comes before the status,
    # which goes last, unpadded (a blocked line's reasons run long: padding every row to them made
    # rows of 220 characters)
    head = ("score", "r/q/d", "key", "fact", "status")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(4)]
    say = partial(out.print, markup=False, highlight=False)
    for row in [head, *rows] if rows else ():  # (--limit 0: no header over no rows)
        say("  ".join([row[0].rjust(widths[0]), row[1].rjust(widths[1]), row[2].ljust(widths[2]),
                       row[3].ljust(widths[3]), row[4]]).rstrip())
    if len(result.ranked) > limit:  # the rows stop at --limit: say so, or the list reads as all there is
        rest = len(result.ranked) - limit
        say(f"… {plural(rest, 'more candidate' if rows else 'candidate')}; --limit {len(result.ranked)} shows all "
            f"{len(result.ranked)}", style="dim")
    say("r/q/d = credited recalls / queries / days, what the gates count (`kit memory explain KEY`: raw counts too)",
        style="dim")
    # Deep alone: a nightly `kit dream` runs Light and REM first, whose hits add the phase boost, so
    # its scores (and MEMORY.md's score=) can be higher than these
    say("score = Deep's alone: `kit dream` runs Light and REM first, and their hits can raise it", style="dim")
    verb = "promoted" if apply else "would promote (run with --apply)"
    out.print(f"{verb}: {len(result.promoted)}")


@click.command("explain")
@workspace_option
@click.argument("target")
@json_option
@handle_errors
def explain(workspace, target: str, as_json: bool) -> None:
    """Explain one candidate (KEY = path:start:end, or some of its TEXT): signals, gates, history."""
    from kit import gate_reason, one_line

    ws = open_workspace(workspace)
    data = ws.explain(target).to_json()
    if as_json:
        emit_json(data)
        return
    out = console()
    say = partial(out.print, markup=False)  # snippets and queries are user text: "[/x]" is not markup
    say(f"{data['key']} (claim {data['claim']}, status {data['status'] or 'candidate'})", style="bold")
    say(f"  {data['snippet']}")
    if data["also_matched"]:  # the text given is in other candidates too: say which one this is
        others = data["also_matched"]
        say(f"also matched {plural(len(others), 'other candidate')} (explain one by its key):")
        for o in others[:5]:
            say(f"  {o['key']}  {one_line(o['snippet'], FACT_CHARS)}")
        if len(others) > 5:
            say(f"  … and {len(others) - 5} more")
    s = data["signals"]
    r = data["recalls"]
    say(f"signals: {plural(s['recall_count'], 'recall')}, {plural(s['unique_queries'], 'query')}, "
        f"{plural(s['recall_days'], 'day')} "
        f"({s['first_day']} .. {s['last_day']}), tags: {', '.join(s['concept_tags'])}")
    say(f"credit:  {r['credited']:.2f} credited recalls (of {r['raw']} raw; one day counts at most 1), "
        f"{plural(r['credited_queries'], 'credited query')}, {plural(r['credited_days'], 'credited day')}, "
        f"{r['used']} used by the agent")
    if r["credited_days"] < r["raw_days"] or r["credited_queries"] < r["raw_queries"]:
        # "3.31 credited recalls … 0 credited days" read as a contradiction without the rule
        say(f"         a day or a query counts when one hit there earned {r['counts_from']:.2f} or more")
    say(f"         light hits {s['light_hits']}, REM hits {s['rem_hits']}")
    for name, value in data["components"].items():
        say(f"  {name:<14} {value:.3f} × {data['weights'][name]:.3f}")
    say(f"  phase boost    {data['phase_boost']:.3f}")
    say(f"score {data['score']:.3f}")
    for name, gate in data["gates"].items():
        mark = "pass" if gate["passed"] else "FAIL"
        score = name == "min_score"
        # the setting's name beside its number: what to change in kit.yaml (dreaming.deep.<name>)
        extra = (f" ({_num(gate['value'], score=score)} vs {name} {_num(gate['threshold'], score=score)})"
                 if "threshold" in gate else "")
        junk = gate["value"] if name == "not_junk" else None
        say(f"  {mark} {gate_reason(name, junk, passed=gate['passed'])}{extra}")
    if data["tonight"]:
        t = data["tonight"]
        words, detail = action_words(t["action"], applied=False), t["detail"]
        say(f"tonight's Deep: {detail if detail.startswith(words) else f'{words} ({detail})'}")
    if data["verify"]:
        v = data["verify"]
        say(f"to verify #{v['id']} ({v['status']}): {v['reason']}")
    say("history (score, rank, credit):")
    for h in data["history"]:
        rank = "-" if h["rank"] is None else str(h["rank"] + 1)
        used = " used" if h["used"] else ""
        via = f" (quoted by {h['quoted_by']})" if h["quoted_by"] else ""
        say(f"  {h['day']}  {h['score']:.3f}  #{rank:<2} {h['credit']:.2f}{used}  [{h['source']}] {h['query']}{via}")


def _say_item(say, v) -> None:
    where = f"MEMORY.md entry {v['old_key']}" if v["old_key"] else "a line of yours in MEMORY.md"
    say(f"#{v['id']}  {v['day']}  {v['key']}  ({v['status']})", style="bold")
    say(f"    new: {v['text']}")
    say(f"    was: {v['old_text']}  ({where})")
    say(f"    why: {v['reason']}")


@click.group("verify", invoke_without_command=True)
@workspace_option
@click.option("--all", "everything", is_flag=True, help="Also list items already accepted, rejected or kept both.")
@json_option
@click.pass_context
@handle_errors
def verify(ctx: click.Context, workspace, everything: bool, as_json: bool) -> None:
    """Contradictions waiting for you: list them; `accept N` takes the new value, `reject N` keeps MEMORY.md,
    `keep-both N`: both are true."""
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"workspace": workspace}  # `kit memory verify -w PATH accept 1` means that workspace
        return
    queue = [v.to_json() for v in open_workspace(workspace).to_verify(everything=everything)]
    if as_json:
        emit_json({"items": queue})
        return
    out = console()
    say = partial(out.print, markup=False, highlight=False)
    if not queue:
        say("nothing to verify")
        return
    for v in queue:
        _say_item(say, v)
    say("accept N: promote the new value, the old one goes to memory/archive/promoted.md; "
        "reject N: keep MEMORY.md as it is; keep-both N: both are true, two facts", style="dim")


def _verify_step(action: str, workspace, item_id: int, as_json: bool) -> None:
    parent = click.get_current_context().obj or {}
    outcome = open_workspace(workspace or parent.get("workspace")).verify(action, item_id)
    if as_json:
        emit_json(outcome.to_json())
        return
    say = partial(console().print, markup=False, highlight=False)
    v = outcome.item.to_json()
    if outcome.action == "accepted":
        say(f"accepted #{item_id}: MEMORY.md now says: {v['text']}")
        if outcome.archived:
            say(f"  retired to memory/archive/promoted.md: {outcome.archived}")
    elif outcome.action == "kept_both":
        say(f"kept both #{item_id}: MEMORY.md keeps: {v['old_text']}; the new text is a candidate again "
            "and a dream promotes it when it passes the gates")
    else:
        say(f"rejected #{item_id}: MEMORY.md keeps: {v['old_text']}; the new text will not be promoted")
    if outcome.git:
        say(f"git: {outcome.git['note']}")


@verify.command("accept")
@verify_options
def verify_accept(workspace, item_id: int, as_json: bool) -> None:
    """Promote item N's new value; the entry or line it contradicts goes to the archive."""
    _verify_step("accept", workspace, item_id, as_json)


@verify.command("reject")
@verify_options
def verify_reject(workspace, item_id: int, as_json: bool) -> None:
    """Keep MEMORY.md as it is; item N's text is never promoted or queued again."""
    _verify_step("reject", workspace, item_id, as_json)


@verify.command("keep-both")
@verify_options
def verify_keep_both(workspace, item_id: int, as_json: bool) -> None:
    """Both are true: MEMORY.md keeps its line; a dream promotes item N's text too.

    Two facts, not one fact with two values: the pair is never queued again, and item N's text is a
    candidate again, promoted by the next dream that finds it passing the gates."""
    _verify_step("keep-both", workspace, item_id, as_json)
