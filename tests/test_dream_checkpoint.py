"""A new process resumes the last dream's checkpoint (kit.dreaming.checkpoint): it reads only the
days since, and its candidates are exactly those a full rebuild of the whole log gives — every
field, every event's credit — night after night, through note edits, deleted lines, rows logged
late or dated in the past, changed junk rules; a dry run writes no checkpoint."""

from __future__ import annotations

import os
import shutil
import sqlite3

from helpers_dream import searched, set_now, write_note
from kit.dreaming import candidates, checkpoint, verdicts
from kit.dreaming.candidates import build_candidates
from kit.dreaming.claims import ClaimIndex
from kit.dreaming.junk import junk_rule
from kit.dreaming.runner import load_candidates, run_dream
from kit.memory.recall import events, record_use, searches, top_scores, uses
from kit.workspace import Workspace

FACTS = ["Alice drinks her flat white with oat milk, never dairy.",
         "Production deploys happen on Tuesdays after the 10:00 standup.",
         "The staging database needs the VPN from home.",
         "Ben's dentist appointment is on the 14th at 08:30.",
         "The laundrette on Rua Augusta changed to card payments."]
QUOTE = f"**Assistant:** From your notes: {FACTS[1]}"
BREAD = "Bought bread and eggs for the week."


def full(ws) -> list[dict]:
    """Every candidate field from a rebuild of the whole log (what `kit memory explain` reads)."""
    db = ws.open_state()
    try:
        return [vars(c) for c in build_candidates(events(db), uses(db), top_scores(db), searches(db))]
    finally:
        db.close()


def fresh(ws) -> tuple[list[dict], bool]:
    """The candidates a new process builds (a new workspace object; the checkpoint stored by the
    last applied build), and whether it resumed the checkpoint."""
    db = ws.open_state()
    try:
        ck = checkpoint.stored(db)
        new = Workspace.open(ws.root)
        built = checkpoint.build(db, lambda s: verdicts.verdicts_for(new).judge(db, s, store=False), ck)
        return [vars(c) for c in built.candidates], built.resumed
    finally:
        db.close()


def keep(ws) -> None:
    """What an applied dream does with the log: build (resuming the stored checkpoint) and keep."""
    db = ws.open_state()
    try:
        load_candidates(Workspace.open(ws.root), db, store=True)
    finally:
        db.close()


def used(ws, day: str, text: str, note_day: str, hour: int = 10, minute: int = 1) -> None:
    """memory_get of `text`'s line, a minute after that hour's search."""
    lines = (ws.root / f"memory/{note_day}.md").read_text(encoding="utf-8").split("\n")
    line = lines.index(f"- {text}") + 1
    before = os.environ.get("KIT_NOW")
    os.environ["KIT_NOW"] = f"{day}T{hour:02d}:{minute:02d}:00+00:00"
    db = ws.open_state()
    try:
        assert record_use(db, f"memory/{note_day}.md", line, line, "read")
    finally:
        db.close()
        os.environ["KIT_NOW"] = before or ""


def night(ws, day: str, i: int) -> None:
    """A day of recalls: active recall then the agent's own search, a read, a side hit, a quote."""
    searched(ws, day, f"what milk does alice take {i}", [(FACTS[0], 0.71), (FACTS[4], 0.52)],
             note_day="2026-05-01", hour=9, source="active")
    searched(ws, day, f"alice coffee order {i}", [(FACTS[0], 0.69), (FACTS[2], 0.40)],
             note_day="2026-05-01", hour=9, minute=2)
    searched(ws, day, f"when do we deploy {i % 2}", [(FACTS[1], 0.66), (FACTS[3], 0.61)],
             note_day="2026-05-01", hour=14)
    used(ws, day, FACTS[1], "2026-05-01", hour=14)
    searched(ws, day, f"deploy day question {i}", [(QUOTE, 0.7), (BREAD, 0.3)], note_day="2026-05-03", hour=16)


def seed(ws) -> None:
    write_note(ws.root, "2026-05-01", FACTS)
    write_note(ws.root, "2026-05-03", [QUOTE, BREAD])


def test_resumed_candidates_equal_a_full_rebuild_night_after_night(workspace):
    seed(workspace)
    resumed = []
    for i, day in enumerate(["2026-05-04", "2026-05-05", "2026-05-06", "2026-05-07", "2026-05-08"]):
        night(workspace, day, i)
        got, was_resumed = fresh(workspace)
        assert got == full(workspace), day
        resumed.append(was_resumed)
        keep(workspace)
    assert resumed == [False, True, True, True, True]  # the first night has no checkpoint yet
    got = full(workspace)
    assert any(e[3] for c in got for e in c["event_credit"])  # the quote reached its fact
    assert any(c["used"] for c in got) and len(got) == 7


def test_events_logged_after_the_dream_on_the_same_day(workspace):
    """The checkpoint's cut is the log's last day, which may still grow: the day is read again."""
    seed(workspace)
    night(workspace, "2026-05-04", 0)
    night(workspace, "2026-05-05", 1)
    keep(workspace)
    searched(workspace, "2026-05-05", "alice milk again", [(FACTS[4], 0.9), (FACTS[0], 0.5)],
             note_day="2026-05-01", hour=22)
    got, was_resumed = fresh(workspace)
    assert was_resumed and got == full(workspace)


def test_a_row_dated_before_the_cut_rebuilds(workspace):
    """A use (or search) logged now but dated on a day the checkpoint folded changes that day's
    credit: the next build reads the whole log again."""
    seed(workspace)
    for i, day in enumerate(["2026-05-04", "2026-05-05", "2026-05-06"]):
        night(workspace, day, i)
    keep(workspace)
    used(workspace, "2026-05-04", FACTS[2], "2026-05-01", hour=9, minute=3)  # a side hit, read after all
    got, was_resumed = fresh(workspace)
    assert not was_resumed
    assert got == full(workspace)
    staging = next(c for c in got if "staging" in c["snippet"])
    assert staging["used"] == 1


def test_a_note_edited_between_dreams_gives_the_dream_a_rebuild_gives(workspace):
    """Notes are not in the checkpoint: a line deleted above a fact and a reworded line change
    the next night's keys and wordings; the dream is the one a workspace without a checkpoint dreams."""
    seed(workspace)
    for i, day in enumerate(["2026-05-04", "2026-05-05", "2026-05-06"]):
        night(workspace, day, i)
        set_now(day, 23)
        run_dream(Workspace.open(workspace.root))
    edited = [FACTS[0].replace("never dairy", "never any dairy"), *FACTS[2:]]  # FACTS[1] deleted, one reworded
    write_note(workspace.root, "2026-05-01", edited)
    searched(workspace, "2026-05-07", "alice milk", [(edited[0], 0.8), (edited[1], 0.6)], note_day="2026-05-01")
    searched(workspace, "2026-05-07", "staging vpn", [(edited[1], 0.8)], note_day="2026-05-01", hour=11)
    twin = workspace.root.parent / "twin"
    shutil.copytree(workspace.root, twin)
    db = sqlite3.connect(twin / ".kit" / "state.db")
    db.execute("DELETE FROM dream_checkpoint")
    db.commit()
    db.close()
    got, was_resumed = fresh(workspace)
    assert was_resumed and got == full(workspace)
    alice = next(c for c in got if "oat milk" in c["snippet"])
    assert len(alice["claims"]) == 2 and alice["key"] == "memory/2026-05-01.md:3:3"  # one claim, its new line
    set_now("2026-05-07", 23)
    mine = run_dream(Workspace.open(workspace.root)).to_json()
    theirs = run_dream(Workspace.open(twin)).to_json()
    assert mine["deep"] == theirs["deep"] and mine["light"] == theirs["light"] and mine["rem"] == theirs["rem"]
    assert (workspace.root / "MEMORY.md").read_bytes() == (twin / "MEMORY.md").read_bytes()


def test_a_changed_junk_rule_never_resumes_a_checkpoint_made_under_the_old_one(workspace, monkeypatch):
    """A rule that now calls the top hit junk moves the fact below it up to rank 0 in past
    searches: only a rebuild credits that."""
    seed(workspace)
    for i, day in enumerate(["2026-05-04", "2026-05-05"]):
        night(workspace, day, i)
    keep(workspace)
    was = next(c for c in full(workspace) if "laundrette" in c["snippet"])["event_credit"]
    real = junk_rule

    def stricter(snippet):
        if "oat milk" in snippet:
            from kit.dreaming.junk import Junk

            return Junk("question", "a new rule")
        return real(snippet)

    monkeypatch.setattr(verdicts, "junk_rules", lambda snippets: [stricter(s) for s in snippets])
    monkeypatch.setattr(candidates, "junk_rule", stricter)
    monkeypatch.setattr(verdicts, "rules_version", lambda: "a-newer-rule")
    checkpoint.version.cache_clear()
    try:
        db = workspace.open_state()
        assert checkpoint.stored(db) is None
        db.close()
        got, was_resumed = fresh(workspace)
        assert not was_resumed and got == full(workspace)
        laundrette = next(c for c in got if "laundrette" in c["snippet"])
        assert laundrette["event_credit"] != was  # rank 0 in the searches where the oat milk line led
    finally:
        checkpoint.version.cache_clear()


def test_a_dry_run_writes_no_checkpoint_but_reads_one(workspace):
    seed(workspace)
    night(workspace, "2026-05-04", 0)
    set_now("2026-05-04", 23)
    run_dream(workspace, dry_run=True)
    db = sqlite3.connect(workspace.root / ".kit" / "state.db")
    has = db.execute("SELECT 1 FROM sqlite_master WHERE name='dream_checkpoint'").fetchone()
    assert has is None or db.execute("SELECT COUNT(*) FROM dream_checkpoint").fetchone()[0] == 0
    db.close()
    run_dream(Workspace.open(workspace.root))
    db = sqlite3.connect(workspace.root / ".kit" / "state.db")
    before = db.execute("SELECT data FROM dream_checkpoint").fetchall()
    night(workspace, "2026-05-05", 1)
    set_now("2026-05-05", 23)
    dry = run_dream(Workspace.open(workspace.root), dry_run=True)
    assert db.execute("SELECT data FROM dream_checkpoint").fetchall() == before
    db.close()
    applied = run_dream(Workspace.open(workspace.root))
    assert dry.to_json()["deep"]["candidates"] == applied.to_json()["deep"]["candidates"]


def test_an_applied_dream_after_a_preview_in_the_same_process_keeps_the_checkpoint(workspace):
    # a dry run's build makes no checkpoint; the applied dream that follows it in the same
    # workspace object (`kit serve`, a preview then the real dream) must still keep one
    seed(workspace)
    night(workspace, "2026-05-04", 0)
    set_now("2026-05-04", 23)
    run_dream(workspace, dry_run=True)
    run_dream(workspace)
    db = sqlite3.connect(workspace.root / ".kit" / "state.db")
    assert db.execute("SELECT COUNT(*) FROM dream_checkpoint").fetchone()[0] == 1
    db.close()
    night(workspace, "2026-05-05", 1)
    cands, resumed = fresh(workspace)
    assert resumed and cands == full(workspace)


def test_a_wording_joins_the_earliest_claim_it_matches():
    """Two claims one word apart, and a wording that matches both: it joins the first, whatever
    word the lookup reaches first — so grouping only the new wordings against the known claims
    (`known`) gives what grouping every wording does."""
    common = "shared drive keeps signed contracts safely"
    first = f"{common} zebra"  # without "aardvark"
    second = f"aardvark {common}"  # without "zebra": 6 of 8 words shared with `first`, another claim
    both = f"aardvark {common} zebra"  # 7 of 8 words with each
    index = ClaimIndex([first, second, both])
    assert index.groups() == [0, 1, 0]
    assert ClaimIndex([first, second, both]).groups(known=2) == [0, 1, 0]


def test_a_transcript_recalled_before_the_line_it_quotes_rebuilds(workspace):
    """The transcript quoting a fact is junk on its own until the fact is first recalled; from
    then on it stands for the fact in every search that found it, past ones too: a rebuild."""
    seed(workspace)
    for i, day in enumerate(["2026-05-04", "2026-05-05"]):
        searched(workspace, day, f"deploy day question {i}", [(BREAD, 0.75), (QUOTE, 0.7)], note_day="2026-05-03")
    keep(workspace)
    searched(workspace, "2026-05-06", "when do we deploy", [(FACTS[1], 0.66)], note_day="2026-05-01")
    got, was_resumed = fresh(workspace)
    assert not was_resumed and got == full(workspace)
    deploys = next(c for c in got if "deploys" in c["snippet"])
    assert [quoted for *_, quoted in deploys["event_credit"]] == [False, True, True]


def test_an_event_whose_time_sorts_before_the_folded_ones_rebuilds(workspace):
    """A candidate folds its events in time order; one dated on the cut day but timed before an
    event already folded (a clock in another time zone) cannot be appended: a rebuild."""
    from datetime import datetime

    from kit.memory.recall import candidate_key, claim_hash, query_hash

    seed(workspace)
    for i, day in enumerate(["2026-05-04", "2026-05-05", "2026-05-06"]):
        night(workspace, day, i)
    keep(workspace)
    early = datetime.fromisoformat("2026-05-04T08:00:00+00:00").timestamp()  # before every folded event
    snippet = f"- {FACTS[0]}"
    db = workspace.open_state()
    db.execute("INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, query_hash,"
               " score, day, ts, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
               (candidate_key("memory/2026-05-01.md", 3, 3), "memory/2026-05-01.md", 3, 3, snippet,
                claim_hash(snippet), "oat milk?", query_hash("oat milk?"), 0.8, "2026-05-06", early, "tool"))
    db.close()
    got, was_resumed = fresh(workspace)
    assert not was_resumed and got == full(workspace)
    alice = next(c for c in got if "oat milk" in c["snippet"])
    assert alice["queries"][0] == "oat milk?"  # first in time


def _asked(ws, day: str, query: str, score: float) -> None:
    searched(ws, day, query, [(FACTS[2], score)], note_day="2026-05-01")


def test_a_better_score_for_a_line_resumes_and_keeps_the_folded_days(workspace):
    """A hit's credit is measured against its line's best score up to it (scoring.OWN_FLOOR), so a
    better score the next night changes no folded credit: resumed, equal to a full rebuild, and
    the weaker earlier hits keep their queries."""
    seed(workspace)
    _asked(workspace, "2026-05-04", "staging access", 0.40)
    _asked(workspace, "2026-05-05", "vpn for staging", 0.60)  # 0.40 came first: on topic then
    _asked(workspace, "2026-05-06", "database from home", 0.35)  # 0.35 / 0.60: on topic
    keep(workspace)
    _asked(workspace, "2026-05-07", "the staging database", 0.90)  # 0.40 / 0.90 would be off topic
    got, was_resumed = fresh(workspace)
    assert was_resumed and got == full(workspace)
    staging = next(c for c in got if "staging" in c["snippet"])
    from kit.memory.recall import query_hash

    assert {query_hash("staging access"), query_hash("database from home")} <= staging["credited_queries"]
    assert len(staging["credited_queries"]) == 4


def test_a_hit_is_measured_against_its_lines_best_score_so_far_on_the_re_read_day(workspace):
    """The checkpoint's cut day is read again the next night: its hits go on from the line's best
    score *before* the cut, not from one that includes the day itself (a 0.30 at 10:00 before a
    0.80 at 11:00 on the same day stays on topic: 0.35 / 0.60)."""
    seed(workspace)
    _asked(workspace, "2026-05-04", "staging access", 0.60)
    searched(workspace, "2026-05-05", "database from home", [(FACTS[2], 0.35)], note_day="2026-05-01", hour=10)
    searched(workspace, "2026-05-05", "the staging database", [(FACTS[2], 0.80)], note_day="2026-05-01", hour=11)
    keep(workspace)
    _asked(workspace, "2026-05-06", "vpn for staging", 0.70)
    got, was_resumed = fresh(workspace)
    assert was_resumed and got == full(workspace)
    staging = next(c for c in got if "staging" in c["snippet"])
    from kit.memory.recall import query_hash

    assert query_hash("database from home") in staging["credited_queries"]
    assert len(staging["credited_queries"]) == 4

