"""Junk verdicts kept between dreams (kit.dreaming.verdicts): judged once, read back by the next
process, re-judged when the rules change, never written by a dry run — and the same dream."""

from __future__ import annotations

import sqlite3

from helpers_dream import days, recall, set_now, write_note
from kit.dreaming import candidates, verdicts
from kit.dreaming.candidates import build_candidates
from kit.dreaming.junk import junk_rule
from kit.dreaming.runner import load_candidates, run_dream
from kit.memory.recall import events, searches, top_scores, uses
from kit.workspace import Workspace

LINES = ["Alice drinks her flat white with oat milk, never dairy.", "kubectl -n payments get pods -l app=gateway",
         "Production deploys happen on Tuesdays after the 10:00 standup."]


def seed(ws) -> None:
    write_note(ws.root, "2026-05-01", LINES)
    for d_i, day in enumerate(days("2026-05-04", 4)):
        for f_i, line in enumerate(LINES):
            recall(ws, day, line, f"question {d_i} {f_i}", note_day="2026-05-01")
    set_now("2026-05-07", 20)


def judged(monkeypatch) -> list[str]:
    """Count the snippets the rules really judge."""
    seen: list[str] = []
    real = junk_rule

    def counting(snippet):
        seen.append(snippet)
        return real(snippet)

    monkeypatch.setattr(verdicts, "junk_rules", lambda snippets: [counting(s) for s in snippets])
    monkeypatch.setattr(candidates, "junk_rule", counting)
    return seen


def stored(ws) -> list[tuple]:
    db = sqlite3.connect(ws.root / ".kit" / "state.db")
    try:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name='dream_junk'").fetchone():
            return []
        return db.execute("SELECT rules, rule FROM dream_junk ORDER BY rule").fetchall()
    finally:
        db.close()


def test_verdicts_are_judged_once_and_read_back_by_the_next_process(workspace, monkeypatch):
    seed(workspace)
    seen = judged(monkeypatch)
    dry = run_dream(workspace, dry_run=True)
    assert sorted(seen) == sorted(f"- {line}" for line in LINES)  # every distinct snippet, once
    assert stored(workspace) == []  # a dry run writes nothing
    seen.clear()
    run_dream(workspace, dry_run=True)
    assert seen == []  # the workspace object remembers them
    first = run_dream(workspace)
    assert seen == []
    version = verdicts.rules_version()
    assert stored(workspace) == [(version, None), (version, None), (version, "shell")]

    fresh = Workspace.open(workspace.root)  # another process: only state.db carries them
    again = run_dream(fresh, dry_run=True)
    assert seen == []
    rules = [c["junk_rule"] for c in dry.to_json()["deep"]["candidates"]]
    assert rules == [c["junk_rule"] for c in first.to_json()["deep"]["candidates"]] == [None, None, "shell"]
    assert [c["junk_rule"] for c in again.to_json()["deep"]["candidates"]] == rules
    db = fresh.open_state()
    try:  # the same candidates as judging every snippet from scratch
        kept = [c.to_json() for c in load_candidates(Workspace.open(workspace.root), db)]
        monkeypatch.undo()
        scratch = build_candidates(events(db), uses(db), top_scores(db), searches(db))
    finally:
        db.close()
    assert kept == [c.to_json() for c in scratch]


def test_changed_rules_judge_everything_again(workspace, monkeypatch):
    seed(workspace)
    run_dream(workspace)
    seen = judged(monkeypatch)
    monkeypatch.setattr(verdicts, "rules_version", lambda: "changed-rules")
    run_dream(Workspace.open(workspace.root))
    assert len(seen) == len(LINES)
    assert {rules for rules, _ in stored(workspace)} == {"changed-rules"}  # the old verdicts are gone


def test_a_new_recall_search_or_use_is_seen_by_the_same_workspace_object(workspace):
    """The candidates of an unchanged log are reused by the workspace object; any new row of the
    log (an event, a search without daily-note hits, a use) builds them again."""
    from kit.memory.recall import record_hits, record_use

    seed(workspace)
    db = workspace.open_state()
    try:
        def alice():
            return next(c for c in load_candidates(workspace, db) if "Alice" in c.snippet)

        before = alice()
        assert alice() is before  # reused: the log has not changed
        recall(workspace, "2026-05-07", LINES[0], "one more question", note_day="2026-05-01", hour=9)
        after = alice()
        assert after.recall_count == before.recall_count + 1
        set_now("2026-05-07", 21)
        record_hits(db, "nothing in the notes", [], "tool")  # no hits, but a search: a turn boundary
        searched = alice()
        assert searched is not after and searched == after
        record_use(db, "memory/2026-05-01.md", 3, 3, "read")
        used = alice()
        assert used is not searched
    finally:
        db.close()
