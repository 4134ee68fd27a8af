"""Phase reports under memory/dreaming/{light,rem,deep}/YYYY-MM-DD.md and the DREAMS.md diary.

Reports are for people and are a pure function of the day's state, so re-running a day rewrites
its report byte for byte. The diary entry comes from a Jinja2 template (StrictUndefined); a
workspace `templates/dream-diary.md.j2` replaces the built-in one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import date
from typing import Any

from kit.core import WorkspaceCore
from kit.dreaming import managed
from kit.dreaming.light import LightResult
from kit.dreaming.ranking import Ranked
from kit.dreaming.rem import RemResult
from kit.dreaming.store import Promotion, VerifyItem
from kit.templating import templates_for
from kit.wording import count_text, plural

DIARY_TEMPLATE = "dream-diary.md.j2"
REPORT_TOP = 25
HELD_BACK_TOP = 100  # a busy night holds back hundreds: the rest are counted (a report a night is kept)


def report_path(phase: str, day: date) -> str:
    return f"memory/dreaming/{phase}/{day.isoformat()}.md"


def _short(text: str, n: int = 120) -> str:
    return managed.one_line(text, n)


def _section(title: str, lines: list[str]) -> list[str]:
    """A `## title` section of these lines, or nothing when there are none."""
    return [f"## {title}", "", *lines, ""] if lines else []


def _candidate_line(r: Ranked, notes: Mapping[str, str]) -> str:
    """A candidate with the counts its gates compare — the credited ones (a hit counts when it
    answered) — beside the raw ones: "3 recalls" next to "recalled on too few days" read as a
    contradiction when none of the three was credited. The fact, then why in brackets: a reason
    that quotes another line ("stale: a newer value is in …: <that line>") ran into the fact."""
    c = r.cand
    why = notes.get(c.id) or ("passed" if r.passed else "blocked: " + "; ".join(r.blocked_reasons))
    return (f"- `{c.key}` score {r.score.total:.3f}, {count_text(c.credited)} of {plural(c.recall_count, 'recall')} "
            f"credited, on {len(c.credited_days)} of {plural(c.recall_days, 'day')}, by {len(c.credited_queries)} "
            f"of {plural(c.unique_queries, 'query')} — {_short(c.snippet, 80)} ({why})")


def light_report(day: date, r: LightResult) -> str:
    out = [f"# Light sleep — {day.isoformat()}", "",
           f"Candidates recalled in the last {plural(r.lookback_days, 'day')}: {r.considered}. Staged: {len(r.staged)}.", ""]
    out += _section("Staged", [f"- `{c.key}` — {plural(c.recall_count, 'recall')}, {plural(c.unique_queries, 'query')}, "
                                f"{plural(c.recall_days, 'day')}: {_short(c.snippet)}" for c in r.staged])
    out += _section("Near-duplicates dropped", [f"- `{d.key}` repeats `{k.key}`" for d, k in r.duplicates])
    return "\n".join(out).rstrip("\n") + "\n"


def rem_report(day: date, r: RemResult) -> str:
    out = [f"# REM sleep — {day.isoformat()}", "",
           f"Candidates recalled in the last {plural(r.lookback_days, 'day')}: {r.considered}.", ""]
    out += ["## Themes", ""]
    if r.themes:
        for t in r.themes:
            out.append(f"- **{t.name}** (strength {t.strength:.3f}, {plural(len(t.members), 'note')})")
    else:
        out.append("- none strong enough")
    out += ["", "## Candidate truths", ""]
    if r.truths:
        out += [f"- {_short(t.cand.snippet)} (confidence {t.confidence:.3f}, `{t.cand.key}`)" for t in r.truths]
    else:
        out.append("- none confident enough")
    return "\n".join(out).rstrip("\n") + "\n"


def deep_report(day: date, ranked: Sequence[Ranked], promoted_today: Sequence[Promotion],
                notes: Mapping[str, str], retired_today: Sequence[Promotion],
                demoted_today: Sequence[Promotion], superseded_today: Sequence[Promotion] = (),
                to_verify: Sequence[VerifyItem] = (), held_back: Collection[str] = frozenset()) -> str:
    """`held_back`: the ids of the candidates Deep held back tonight (not to verify: their section)."""
    out = [f"# Deep sleep — {day.isoformat()}", ""]
    out += [f"Promoted to MEMORY.md today: {len(promoted_today)}.", ""]
    # strongest first, as the other candidates below (the rows come from state.db by key, where
    # ":13:13" sorts before ":4:4")
    out += _section("Promoted", [
        f"- `{p.key}` (score {p.score:.3f}, {plural(p.recalls, 'recall')}, {plural(p.queries, 'query')}): {_short(p.snippet)}"
        + (f" — {p.note}" if p.note else "") for p in sorted(promoted_today, key=lambda p: (-p.score, p.key))])
    out += _section("Superseded by a newer value (moved to memory/archive/promoted.md)",
                    [f"- `{p.key}`: {_short(p.snippet)} — {p.note}" for p in superseded_today])
    out += _section("To verify (`kit memory verify`)",
                    [f"- #{v.id or '?'} `{v.key}`: {_short(v.text)} — {v.reason}" for v in to_verify])
    out += _section("Removed by you (never promoted again)",
                    [f"- `{p.key}`: {_short(p.snippet)}" for p in demoted_today])
    out += _section("Retired to memory/archive/promoted.md (over memory_max_chars)",
                    [f"- `{p.key}`: {_short(p.snippet)}" for p in retired_today])
    # what passed the gates and Deep held back (stale, duplicate, over today's limit …), strongest
    # first: `kit dream` lists the first few and sends the reader here for the rest
    held = [r for r in ranked if r.cand.id in held_back]
    more = len(held) - HELD_BACK_TOP
    out += _section(f"Held back by Deep ({len(held)})", [_candidate_line(r, notes) for r in held[:HELD_BACK_TOP]]
                    + ([f"- … and {more} more"] if more > 0 else []))
    done = {(p.key, p.claim) for p in promoted_today}
    rest = [r for r in ranked if (r.cand.key, r.cand.claim) not in done and r.cand.id not in held_back][:REPORT_TOP]
    out += _section(f"Other candidates (top {REPORT_TOP} by score)", [_candidate_line(r, notes) for r in rest])
    return "\n".join(out).rstrip("\n") + "\n"


def render_diary(ws: WorkspaceCore, context: Mapping[str, Any]) -> tuple[str, str | None]:
    """The diary entry for one run and a problem note. A workspace template that cannot be
    rendered falls back to its last good version or the built-in one (the note names file and
    line): a diary must never break a dream that has already written MEMORY.md."""
    rendered = templates_for(ws).render(DIARY_TEMPLATE, **context)
    problem = f"diary: {rendered.problem}; used {rendered.fallback}" if rendered.problem else None
    return rendered.text.strip("\n") + "\n", problem


LLM_SYSTEM = "diary-llm-system.md.j2"  # the instructions of the retelling call (dreaming.diary: llm)


def llm_diary(ws: WorkspaceCore, entry: str) -> tuple[str, str | None]:
    """`dreaming.diary: llm`: the configured model retells the template entry; on any failure the
    template entry stands and the reason is returned (a diary must never break a dream)."""
    heading, _, body = entry.partition("\n")
    try:
        from kit.providers.registry import resolve
        from kit.providers.script import positions_for

        provider, model = resolve(ws.config.agent.model, ws.config, positions=positions_for(ws),
                                  root=ws.root)
        reply = provider.complete(
            [{"role": "system", "content": templates_for(ws).render(LLM_SYSTEM).text},
             {"role": "user", "content": body.strip()}], [], model=model
        )
    except Exception as exc:  # noqa: BLE001 - any provider failure falls back to the template
        return entry, f"diary: llm failed ({exc}); used the template"
    text = (reply.text or "").strip()
    if not text:
        return entry, "diary: llm returned nothing; used the template"
    return f"{heading}\n\n{text}\n", None


def append_diary(current: str, entry: str) -> str:
    return current.rstrip("\n") + "\n\n" + entry
