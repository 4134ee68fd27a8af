"""The dream's hook events: `dream:start`, one `memory:promoted` per entry, `dream:end`.

Fired by `run_dream` around a real run (a dry run is a preview and fires nothing):

    dream:start      {phases, day}                                     the lock is held, nothing read yet
    memory:promoted  {key, text, score, path, start_line, end_line,   each entry written to MEMORY.md,
                      day}                                             after the write
    dream:end        {phases, day, ok, promoted, retired, demoted,     after everything (reports,
                      changed, light, rem, deep, notes, git, error}    diary, commit, re-index)

`light`, `rem` and `deep` are each phase's summary (null for a phase that did not run):
light {considered, staged}, rem {considered, themes, truths}, deep {candidates, promoted,
retired, demoted}. A dream that fails fires `dream:end` with `ok: false` and `error`.
"""

from __future__ import annotations

from typing import Any

from kit.core import WorkspaceCore


def _fire(ws: WorkspaceCore, event: str, data: dict[str, Any]) -> None:
    from kit.hooks.registry import fire_hook

    fire_hook(ws, event, data)


def started(ws: WorkspaceCore, phases: tuple[str, ...], day: str) -> None:
    _fire(ws, "dream:start", {"phases": list(phases), "day": day})


def summary(result: Any) -> dict[str, Any]:
    """The phase summary dream:end carries (counts and keys, not the whole report)."""
    light = result.light
    rem = result.rem
    return {
        "light": None if light is None else {"considered": light.considered, "staged": len(light.staged)},
        "rem": None if rem is None else {"considered": rem.considered, "themes": len(rem.themes),
                                         "truths": len(rem.truths)},
        "deep": None if "deep" not in result.phases else {
            "candidates": len(result.ranked), "promoted": len(result.promoted),
            "retired": len(result.retired), "demoted": len(result.demoted)},
    }


def finished(ws: WorkspaceCore, result: Any) -> None:
    day = result.day.isoformat()
    for decision in result.decisions:
        if decision.action != "promoted":
            continue
        cand = decision.ranked.cand
        live = decision.live
        _fire(ws, "memory:promoted", {
            "key": cand.key, "text": live.text if live is not None else cand.snippet,
            "score": round(float(decision.ranked.score.total), 6), "path": cand.path,
            "start_line": live.start_line if live is not None else cand.start_line,
            "end_line": live.end_line if live is not None else cand.end_line, "day": day,
        })
    _fire(ws, "dream:end", {
        "phases": list(result.phases), "day": day, "ok": True,
        "promoted": list(result.promoted), "retired": list(result.retired), "demoted": list(result.demoted),
        "changed": list(result.changed), **summary(result), "notes": list(result.notes), "git": result.git,
        "error": None,
    })


def failed(ws: WorkspaceCore, phases: tuple[str, ...], day: str, exc: BaseException) -> None:
    _fire(ws, "dream:end", {
        "phases": list(phases), "day": day, "ok": False, "promoted": [], "retired": [], "demoted": [],
        "changed": [], "light": None, "rem": None, "deep": None, "notes": [], "git": None,
        "error": f"{type(exc).__name__}: {exc}",
    })
