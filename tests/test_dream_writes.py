"""Deep's writes: idempotent re-runs, user deletions, edits during a dream, the cap, the exact format."""

from __future__ import annotations

import os
import re
from datetime import date
from pathlib import Path

import pytest

from helpers_dream import days, recall, tree, write_note
from kit.dreaming import deep, managed
from kit.dreaming.explain import explain
from kit.dreaming.runner import run_dream

FACTS = [
    "Alice drinks her flat white with oat milk, never dairy.",
    "Production deploys happen on Tuesdays after the 10:00 standup.",
    "Alice's dentist is Dr. Okafor at the Harbour Street clinic.",
    "The cabin wifi password is taped under the kitchen router.",
    "Grandma's birthday is on 3 August; she likes lilies, not roses.",
]


def seed(ws, monkeypatch, facts=FACTS, n_days=4, start="2026-05-04"):
    write_note(ws.root, "2026-05-01", list(facts))
    queries = ["what about it", "remind me", "tell me again", "details please", "once more"]
    for d_i, day in enumerate(days(start, n_days)):
        for f_i, fact in enumerate(facts):
            recall(ws, day, fact, f"{queries[d_i % 5]} {f_i}", score=0.8 + 0.01 * f_i, note_day="2026-05-01",
                   hour=8 + f_i)
    monkeypatch.setenv("KIT_NOW", f"{days(start, n_days)[-1]}T20:00:00+00:00")


def test_managed_section_format(workspace, monkeypatch):
    seed(workspace, monkeypatch, facts=FACTS[:2])
    result = run_dream(workspace)
    assert result.promoted == ("memory/2026-05-01.md:3:3", "memory/2026-05-01.md:4:4")
    text = (workspace.root / "MEMORY.md").read_text()
    section = text[text.index("## Promoted memories"):]
    scores = {r.cand.key: r.score.total for r in result.ranked}
    claim = {r.cand.key: r.cand.claim for r in result.ranked}
    k3, k4 = "memory/2026-05-01.md:3:3", "memory/2026-05-01.md:4:4"
    assert section == (
        "## Promoted memories\n\n"
        f"<!-- kit:promoted key={k3} claim={claim[k3]} score={scores[k3]:.3f} recalls=4 queries=4 date=2026-05-07 -->\n"
        f"- {FACTS[0]}\n"
        f"<!-- kit:promoted key={k4} claim={claim[k4]} score={scores[k4]:.3f} recalls=4 queries=4 date=2026-05-07 -->\n"
        f"- {FACTS[1]}\n"
    )
    assert re.fullmatch(r"[0-9a-f]{12}", claim[k3])


def test_the_deep_reports_promoted_section_lists_the_strongest_first(workspace, monkeypatch):
    """Regression (a new-user pass): the section listed keys as strings sort (`:10:10` before
    `:3:3`), neither by score nor by place."""
    facts = ["Ada keeps the spare office key in the blue drawer.", "Ben is allergic to peanuts and shellfish.",
             "The staging cluster runs Postgres on port 5433.", "Cleo's birthday dinner is booked at Tasca.",
             "The billing service exports invoices as PDF only.", "Dev prefers reviews in the morning.",
             "The Lisbon client pays within thirty days.", "Grandma likes lilies rather than roses."]
    seed(workspace, monkeypatch, facts=facts)  # later lines score higher (0.80, 0.81, …)
    result = run_dream(workspace)
    assert len(result.promoted) == len(facts)
    report = (workspace.root / "memory/dreaming/deep/2026-05-07.md").read_text()
    section = report.split("## Promoted\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^- `([^`]+)` \(score ([0-9.]+),", section, re.M)
    assert len(rows) == len(facts)
    scores = [float(score) for _, score in rows]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) > 1
    assert [key for key, _ in rows] != sorted(key for key, _ in rows)  # ":10:10" no longer comes first


def test_second_dream_same_day_changes_nothing(workspace, monkeypatch):
    seed(workspace, monkeypatch)
    first = run_dream(workspace)
    assert first.promoted and first.diary
    before = tree(workspace.root, skip_kit=True)
    reports = {p: (workspace.root / p).read_bytes() for p in before if p.startswith("memory/dreaming/")}
    assert len(reports) == 3
    monkeypatch.setenv("KIT_NOW", "2026-05-07T21:30:00+00:00")
    second = run_dream(workspace)
    assert second.promoted == () and second.changed == () and second.diary is False
    assert tree(workspace.root, skip_kit=True) == before
    assert {p: (workspace.root / p).read_bytes() for p in reports} == reports
    db = workspace.open_state()
    rows = db.execute("SELECT phase, COUNT(*), COUNT(DISTINCT cand) FROM dream_phase_hits GROUP BY phase").fetchall()
    db.close()
    assert {r[0]: (r[1], r[2]) for r in rows} == {"light": (5, 5), "rem": (3, 3)}


def test_deleted_entry_is_demoted_for_good(workspace, monkeypatch):
    seed(workspace, monkeypatch, facts=FACTS[:2])
    run_dream(workspace)
    mem = workspace.root / "MEMORY.md"
    text = mem.read_text()
    # the user removes the oat-milk entry (comment and bullet)
    kept = re.sub(r"<!-- kit:promoted key=memory/2026-05-01.md:3:3 [^\n]*\n- [^\n]*\n", "", text)
    assert kept != text
    mem.write_text(kept)
    for day in days("2026-05-08", 3):
        recall(workspace, day, FACTS[0], f"milk again {day}", note_day="2026-05-01")
        monkeypatch.setenv("KIT_NOW", f"{day}T20:00:00+00:00")
        result = run_dream(workspace)
        assert FACTS[0] not in mem.read_text()
        assert "memory/2026-05-01.md:3:3" not in result.promoted
    first = run_dream(workspace)
    assert first.demoted == ()
    db = workspace.open_state()
    status = db.execute("SELECT status FROM dream_promotions WHERE key='memory/2026-05-01.md:3:3'").fetchone()[0]
    db.close()
    assert status == "demoted"
    # the diary never lists it as true lately — not in the entry that says it will not come back,
    # nor after (a new-user pass saw "You removed 1 promoted entry" above that very fact)
    diary = (workspace.root / "DREAMS.md").read_text()
    nights = diary.split("\n## ")[1:]
    assert "You removed 1 promoted entry" in diary
    after = [n for n in nights if n >= "2026-05-08"]
    assert len(after) == 3 and all(FACTS[0] not in n for n in after)
    assert FACTS[1] in after[0]  # the other fact is still true lately


def test_a_dream_stopped_after_memory_md_before_recording_is_settled_and_a_deletion_sticks(workspace, monkeypatch):
    """Regression (interruption pass): Ctrl-C between MEMORY.md's swap and the promotion rows left
    entries state.db did not know; deleting them was no demotion, and the next dream put them back."""
    from kit.dreaming import store

    seed(workspace, monkeypatch, facts=FACTS[:2])
    real = store.upsert_promotion

    def stopped(db, row):  # the first row's write: MEMORY.md has been swapped in already
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "upsert_promotion", stopped)
    with pytest.raises(KeyboardInterrupt):
        run_dream(workspace)
    monkeypatch.setattr(store, "upsert_promotion", real)
    mem = workspace.root / "MEMORY.md"
    assert FACTS[0] in mem.read_text() and FACTS[1] in mem.read_text()
    assert store.promotions(workspace.open_state()) == []

    again = run_dream(workspace)  # the same night, run again
    assert again.promoted == ()
    assert "recorded 2 promotions MEMORY.md holds under Kit's marker that state.db did not know (a dream " \
           "stopped before recording them, an import, a new .kit/)" in again.notes
    rows = store.promotions(workspace.open_state())
    assert [(r.key, r.status, r.promoted_day, r.recalls) for r in rows] == [
        ("memory/2026-05-01.md:3:3", "active", "2026-05-07", 4), ("memory/2026-05-01.md:4:4", "active", "2026-05-07", 4)]

    mem.write_text(re.sub(r"<!-- kit:promoted key=memory/2026-05-01.md:3:3 [^\n]*\n- [^\n]*\n", "", mem.read_text()))
    for day in days("2026-05-08", 2):
        recall(workspace, day, FACTS[0], f"milk again {day}", note_day="2026-05-01")
        monkeypatch.setenv("KIT_NOW", f"{day}T20:00:00+00:00")
        result = run_dream(workspace)
        assert "memory/2026-05-01.md:3:3" not in result.promoted and FACTS[0] not in mem.read_text()
    assert {r.key: r.status for r in store.promotions(workspace.open_state())}["memory/2026-05-01.md:3:3"] == "demoted"


def test_a_dream_stopped_after_the_archive_write_records_the_retirements_not_demotions(workspace, monkeypatch):
    """Regression (review): a dream stopped between the archive write and its state transaction left
    the retired rows active; the next dream took their missing entries for the user's deletions and
    demoted them, blocking the lines for good where they were only retired for room."""
    from kit.dreaming import store

    seed(workspace, monkeypatch)
    assert len(run_dream(workspace).promoted) == 5
    workspace.write_text("kit.yaml", "dreaming:\n  memory_max_chars: 420\n")
    monkeypatch.setenv("KIT_NOW", "2026-05-08T20:00:00+00:00")
    real = store.set_status

    def stopped(db, key, claim, status, day, note=None):
        if status == "retired":  # the archive has been written already
            raise KeyboardInterrupt
        real(db, key, claim, status, day, note)

    monkeypatch.setattr(store, "set_status", stopped)
    with pytest.raises(KeyboardInterrupt):
        run_dream(workspace)
    monkeypatch.setattr(store, "set_status", real)
    archive = (workspace.root / "memory/archive/promoted.md").read_text()
    assert archive.count("retired=2026-05-08") == 3
    assert {r.status for r in store.promotions(workspace.open_state())} == {"active"}

    again = run_dream(workspace)  # the same night, run again
    assert (again.demoted, again.retired) == ((), ())
    assert "recorded 3 entries the archive holds as retired or superseded that state.db still had as promoted " \
           "(a dream stopped before recording them)" in again.notes
    rows = {r.key: (r.status, r.status_day) for r in store.promotions(workspace.open_state())}
    assert sorted(rows.values()) == [("active", "2026-05-07")] * 2 + [("retired", "2026-05-08")] * 3
    assert (workspace.root / "memory/archive/promoted.md").read_text() == archive


def test_the_archive_is_written_before_memory_md_so_a_dream_stopped_between_loses_nothing(workspace, monkeypatch):
    """Regression (review): MEMORY.md was swapped first; a dream stopped before the archive write
    had taken the retired entries out of MEMORY.md and put them nowhere."""
    from kit.dreaming import runner, store

    seed(workspace, monkeypatch)
    assert len(run_dream(workspace).promoted) == 5
    workspace.write_text("kit.yaml", "dreaming:\n  memory_max_chars: 420\n")
    monkeypatch.setenv("KIT_NOW", "2026-05-08T20:00:00+00:00")
    mem = workspace.root / "MEMORY.md"
    before = mem.read_text()

    def stopped(*args, **kwargs):  # the archive is written, MEMORY.md not yet
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "write_memory", stopped)
    with pytest.raises(KeyboardInterrupt):
        run_dream(workspace)
    monkeypatch.undo()
    monkeypatch.setenv("KIT_NOW", "2026-05-08T20:00:00+00:00")
    archive = workspace.root / "memory/archive/promoted.md"
    assert mem.read_text() == before and archive.read_text().count("retired=2026-05-08") == 3
    for fact in FACTS[:3]:  # every entry is in one file or the other at every moment
        assert fact in before and fact in archive.read_text()

    again = run_dream(workspace)
    assert len(again.retired) == 3 and again.demoted == ()
    assert archive.read_text().count("retired=2026-05-08") == 3  # not appended twice
    assert all(fact not in mem.read_text() for fact in FACTS[:3])
    assert sorted(r.status for r in store.promotions(workspace.open_state())) == ["active"] * 2 + ["retired"] * 3


def test_entries_the_cap_retires_because_you_saved_memory_md_meanwhile_reach_the_archive(workspace, monkeypatch):
    """The archive is planned from MEMORY.md as read before the swap; a note of yours saved between
    that read and the swap makes the cap take one more entry, which is archived after the swap —
    never only taken out of MEMORY.md."""
    from kit.dreaming import runner

    seed(workspace, monkeypatch)
    assert len(run_dream(workspace).promoted) == 5
    workspace.write_text("kit.yaml", "dreaming:\n  memory_max_chars: 420\n")
    monkeypatch.setenv("KIT_NOW", "2026-05-08T20:00:00+00:00")
    mem = workspace.root / "MEMORY.md"
    real = runner.write_memory

    def saved_meanwhile(*args, **kwargs):  # your save lands after the archive's plan, before the swap
        mem.write_text(mem.read_text() + "\n- My own note: the office plants get watered on Mondays and Fridays.\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "write_memory", saved_meanwhile)
    result = run_dream(workspace)
    archive = (workspace.root / "memory/archive/promoted.md").read_text()
    assert len(result.retired) == 4 and archive.count("retired=2026-05-08") == 4
    text = mem.read_text()
    assert "office plants" in text
    for fact in FACTS:  # every entry is in one file or the other
        assert fact in text or f"- {fact}" in archive, fact


def test_archived_exits_before_a_promotion_are_an_older_life():
    """`deep.archived`: the archive's last word on an active row missing from MEMORY.md, unless it
    came before the row's promotion (the line was promoted again since: now the user deleted it)."""
    from kit.dreaming.store import Promotion

    def row(key, promoted):
        return Promotion(key=key, claim=f"c-{key}", snippet="x", score=1.0, recalls=1, queries=1,
                         promoted_day=promoted, last_recall_day=promoted, status="active", status_day=promoted)

    rows = [row("a", "2026-05-01"), row("b", "2026-05-01"), row("c", "2026-05-09"), row("d", "2026-05-01")]
    archive = "\n".join([
        "# Retired promoted memories", "",
        "<!-- kit:promoted key=a claim=c-a date=2026-05-01 retired=2026-05-03 -->", "- one",
        "<!-- kit:promoted key=a claim=c-a date=2026-05-01 superseded_by=z superseded=2026-05-04 -->", "- one",
        "<!-- kit:promoted key=b claim=c-b date=2026-05-01 retired=never -->", "- two",
        "<!-- kit:promoted key=c claim=c-c date=2026-05-01 retired=2026-05-05 -->", "- three",
        "<!-- kit:promoted key=d claim=c-d date=2026-05-01 retired=2026-05-06 -->", "- four", ""])
    memory = "# Memory\n\n## Promoted memories\n\n<!-- kit:promoted key=d claim=c-d date=2026-05-01 -->\n- four\n"
    found = deep.archived(memory, archive, rows)
    assert [(p.key, status, day, note) for p, status, day, note in found] == [
        ("a", "superseded", "2026-05-04", "superseded by z")]


@pytest.mark.parametrize("snippet_stored", [True, False])
def test_a_paraphrase_of_a_deleted_entry_is_blocked_by_not_demoted(workspace, monkeypatch, snippet_stored):
    seed(workspace, monkeypatch, facts=FACTS[:2])
    run_dream(workspace)
    if not snippet_stored:  # a promotion row without its text: the demotion stores the candidate's
        db = workspace.open_state()
        db.execute("UPDATE dream_promotions SET snippet = '' WHERE key = 'memory/2026-05-01.md:3:3'")
        db.close()
    mem = workspace.root / "MEMORY.md"
    mem.write_text(re.sub(r"<!-- kit:promoted key=memory/2026-05-01.md:3:3 [^\n]*\n- [^\n]*\n", "", mem.read_text()))
    paraphrase = "Alice still drinks her flat white with oat milk and never dairy."
    write_note(workspace.root, "2026-05-08", [paraphrase])
    for i, day in enumerate(days("2026-05-08", 3)):
        recall(workspace, day, paraphrase, f"milk question {i}", score=0.9, note_day="2026-05-08")
    monkeypatch.setenv("KIT_NOW", "2026-05-10T20:00:00+00:00")
    result = run_dream(workspace)
    assert result.demoted == ("memory/2026-05-01.md:3:3",)
    assert result.promoted == ()
    twin = next(r for r in result.ranked if r.cand.key == "memory/2026-05-08.md:3:3")
    assert twin.blocked_by == ["not_demoted"]
    assert paraphrase not in mem.read_text()
    # a fact unlike the deleted one still passes
    other = next(r for r in result.ranked if r.cand.key == "memory/2026-05-01.md:4:4")
    assert other.gates["not_demoted"] is True
    db = workspace.open_state()
    row = db.execute("SELECT status, snippet FROM dream_promotions WHERE key = 'memory/2026-05-01.md:3:3'").fetchone()
    db.close()
    assert tuple(row) == ("demoted", FACTS[0])
    explained = explain(workspace, "memory/2026-05-08.md:3:3").to_json()
    assert explained["blocked_by"] == ["not_demoted"] and explained["gates"]["not_demoted"]["passed"] is False


def test_user_edit_of_entry_text_is_kept(workspace, monkeypatch):
    seed(workspace, monkeypatch, facts=FACTS[:2])
    run_dream(workspace)
    mem = workspace.root / "MEMORY.md"
    mem.write_text(mem.read_text().replace(f"- {FACTS[0]}", "- Alice: oat milk only (checked with her)."))
    seed(workspace, monkeypatch, facts=FACTS[:2] + [FACTS[3]], start="2026-05-08")
    run_dream(workspace)
    text = mem.read_text()
    assert "- Alice: oat milk only (checked with her)." in text
    assert FACTS[3] in text


def test_user_edit_during_dream_is_kept(workspace, monkeypatch):
    seed(workspace, monkeypatch, facts=FACTS[:2])
    mem = workspace.root / "MEMORY.md"
    real_plan = deep.plan

    def plan_then_user_edits(*args, **kwargs):
        decided = real_plan(*args, **kwargs)
        # between Deep's read of MEMORY.md and its write, the user saves an edit
        mem.write_text(mem.read_text().replace("Edit freely", "Edit freely (I do, often)") + "- I moved to Lisbon.\n")
        return decided

    monkeypatch.setattr(deep, "plan", plan_then_user_edits)
    result = run_dream(workspace)
    text = mem.read_text()
    assert "Edit freely (I do, often)" in text
    assert "- I moved to Lisbon.\n\n## Promoted memories" in text
    assert len(result.promoted) == 2
    assert FACTS[0] in text and FACTS[1] in text


def staggered(ws, facts):
    """Fact i is recalled on four days starting 2026-05-02 + i, so its last recall is 05-05 + i."""
    write_note(ws.root, "2026-05-01", list(facts))
    for f_i, fact in enumerate(facts):
        for d_i, day in enumerate(days("2026-05-02", 4 + f_i)[f_i:]):
            recall(ws, day, fact, f"q{d_i}", score=0.85, note_day="2026-05-01")
    os.environ["KIT_NOW"] = "2026-05-09T20:00:00+00:00"


def test_cap_retires_oldest_recalled_to_archive(workspace, monkeypatch):
    monkeypatch.setenv("KIT_NOW", "2026-05-09T20:00:00+00:00")
    # five facts, each last recalled on a different day: fact i last on day i
    staggered(workspace, FACTS)
    workspace.write_text("kit.yaml", "dreaming:\n  memory_max_chars: 420\n")
    assert workspace.config.get("dreaming.memory_max_chars") == 420
    result = run_dream(workspace)
    assert len(result.promoted) == 5
    # oldest last recall first: fact 0 (last 05-05), then fact 1 (05-06), …
    assert result.retired == ("memory/2026-05-01.md:3:3", "memory/2026-05-01.md:4:4", "memory/2026-05-01.md:5:5")
    text = (workspace.root / "MEMORY.md").read_text()
    assert managed.section_chars(text) <= 420
    assert FACTS[3] in text and FACTS[4] in text and FACTS[0] not in text
    archive = (workspace.root / "memory" / "archive" / "promoted.md").read_text()
    assert archive.startswith("# Retired promoted memories\n")
    for fact in FACTS[:3]:
        assert f"- {fact}" in archive
    assert "retired=2026-05-09" in archive
    # retired is not demoted and not promoted again
    monkeypatch.setenv("KIT_NOW", "2026-05-10T20:00:00+00:00")
    again = run_dream(workspace)
    assert again.promoted == () and again.demoted == ()


def test_cap_archive_is_searchable(workspace, monkeypatch):
    from kit.memory.service import memory_for

    monkeypatch.setenv("KIT_NOW", "2026-05-09T20:00:00+00:00")
    staggered(workspace, FACTS[:3])
    workspace.write_text("kit.yaml", "dreaming:\n  memory_max_chars: 300\n")
    result = run_dream(workspace)
    assert result.retired == ("memory/2026-05-01.md:3:3", "memory/2026-05-01.md:4:4")
    assert FACTS[0] not in (workspace.root / "MEMORY.md").read_text()
    hits = memory_for(workspace).search("does Alice take oat milk in her flat white").results
    assert any(h.path == "memory/archive/promoted.md" and FACTS[0] in h.snippet for h in hits)


def test_semantic_duplicate_of_memory_is_skipped(workspace, monkeypatch):
    mem = workspace.root / "MEMORY.md"
    mem.write_text(mem.read_text() + "\n- Alice drinks her flat white with oat milk and never dairy.\n")
    seed(workspace, monkeypatch, facts=FACTS[:2])
    result = run_dream(workspace)
    assert result.promoted == ("memory/2026-05-01.md:4:4",)
    dup = [d for d in result.decisions if d.action == "duplicate"]
    assert [d.ranked.cand.key for d in dup] == ["memory/2026-05-01.md:3:3"]
    assert result.similarity == "embeddings"


def test_junk_is_never_promoted_and_limit_applies_per_day(workspace, monkeypatch):
    junk = ["$ docker compose up -d --build api", "| 12 | 34 | 56 |\n| 78 | 90 | 11 |", "ok thanks"]
    write_note(workspace.root, "2026-05-01", FACTS + junk[:1] + junk[2:])
    workspace.write_text("kit.yaml", "dreaming:\n  deep: {limit: 2}\n")
    for d_i, day in enumerate(days("2026-05-02", 4)):
        for fact in FACTS + [junk[0], junk[2]]:
            recall(workspace, day, fact, f"q{d_i}", score=0.9, note_day="2026-05-01")
    monkeypatch.setenv("KIT_NOW", "2026-05-05T20:00:00+00:00")
    first = run_dream(workspace)
    # the two best facts, in rank order; the limit stops the rest
    best = [r.cand.key for r in first.ranked if r.passed][:2]
    assert first.promoted == tuple(best)
    assert [d.action for d in first.decisions] == ["promoted", "promoted", "over_limit", "over_limit", "over_limit"]
    assert run_dream(workspace).promoted == ()  # the limit is per day
    # each junk line is blocked by the junk gate alone (it was recalled as often as the facts), and
    # the reason names the rule that matched
    blocked = {r.cand.snippet: (r.blocked_by, r.cand.junk_rule) for r in first.ranked if not r.passed}
    assert blocked == {f"- {junk[0]}": (["not_junk"], "shell"), "- ok thanks": (["not_junk"], "too-short")}
    monkeypatch.setenv("KIT_NOW", "2026-05-06T20:00:00+00:00")
    assert len(run_dream(workspace).promoted) == 2
    text = (workspace.root / "MEMORY.md").read_text()
    assert "docker compose" not in text and "ok thanks" not in text
    assert text.count("<!-- kit:promoted") == 4


def test_idle_workspace_dream_writes_nothing(workspace, monkeypatch):
    monkeypatch.setenv("KIT_NOW", "2026-05-07T03:00:00+00:00")
    before = tree(workspace.root, skip_kit=True)
    result = run_dream(workspace)
    assert result.changed == () and result.promoted == () and result.diary is False
    assert tree(workspace.root, skip_kit=True) == before


def test_vectors_persist_between_nights(workspace, monkeypatch):
    from kit.memory.service import memory_for

    seed(workspace, monkeypatch)
    calls: list[int] = []
    memory = memory_for(workspace)

    class Counting:
        def __init__(self, inner):
            self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim

        def encode(self, texts):
            calls.append(len(texts))
            return self.inner.encode(texts)

    memory.use_embedder(Counting(memory.embedder))  # dreaming uses the workspace's memory embedder
    run_dream(workspace)
    first = sum(calls)
    assert first >= 5  # every candidate's text, once
    calls.clear()
    monkeypatch.setenv("KIT_NOW", "2026-05-08T20:00:00+00:00")
    run_dream(workspace, dry_run=True)
    run_dream(workspace)
    assert sum(calls) == 0  # the next night embeds nothing it has seen
    db = workspace.open_state()
    days_kept = db.execute("SELECT DISTINCT day FROM dream_vectors").fetchall()
    db.close()
    assert [r[0] for r in days_kept] == ["2026-05-08"]


def test_a_dream_takes_the_vectors_the_memory_index_has(workspace, monkeypatch):
    """A recalled note line is a chunk the memory index embedded already — the same text, the same
    model — so a dream reads its vector from the index's embedding cache and never sends it to the
    model; a dry run does so without writing anything (index.db's bytes and files are unchanged)."""
    from kit.memory.service import memory_for

    seed(workspace, monkeypatch)
    memory = memory_for(workspace)
    memory.sync()  # as in any workspace whose recall log came from searching its notes
    memory.close()
    encoded: list[str] = []

    class Counting:
        def __init__(self, inner):
            self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim

        def encode(self, texts):
            encoded.extend(texts)
            return self.inner.encode(texts)

    memory.use_embedder(Counting(memory.embedder))
    lines = {f"- {fact}" for fact in FACTS}
    template = (workspace.root / "MEMORY.md").read_text().splitlines()[2:4]  # kit init's two lines of prose
    files = {p.name: p.read_bytes() for p in workspace.kit_dir.iterdir() if p.name.startswith("index.db")}
    assert list(files) == ["index.db"]
    dry = run_dream(workspace, dry_run=True)
    assert {p.name: p.read_bytes() for p in workspace.kit_dir.iterdir() if p.name.startswith("index.db")} == files
    result = run_dream(workspace)
    assert dry.similarity == result.similarity == "embeddings" and len(result.promoted) == len(FACTS)
    # REM and Deep compared the note lines by the index's vectors; the model saw only texts the index
    # never embedded (Deep's one-line forms, MEMORY.md's entries under its heading), then the sync
    # after the dream embedded MEMORY.md's new entries
    assert not lines & set(encoded)
    own = [t for t in encoded if not t.startswith("Memory > Promoted memories\n")]
    assert set(own) == set(FACTS) | set(template)
    assert len(own) == 2 * len(set(own))  # once by the dry run, once by the dream (a dry run keeps none)


def test_unreadable_memory_md_stops_the_dream_before_any_write(workspace, monkeypatch, cli):
    """A MEMORY.md that is not UTF-8 is never rewritten: one line naming file and line, exit 1."""
    seed(workspace, monkeypatch)
    (workspace.root / "MEMORY.md").write_bytes(b"# Memory\n\nCaf\xe9 notes in Latin-1\n")
    before = tree(workspace.root, skip_kit=True)
    res = cli("dream", "--json", "-w", workspace.root)
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr == "kit: MEMORY.md:3: not valid UTF-8 (byte 13)\n"
    assert tree(workspace.root, skip_kit=True) == before


def test_a_note_that_is_not_utf8_is_skipped_not_fatal(workspace, monkeypatch):
    seed(workspace, monkeypatch)
    note = workspace.root / "memory/2026-05-01.md"
    note.write_bytes(note.read_bytes().replace(b"never dairy", b"never \xff dairy"))
    result = run_dream(workspace)  # before: UnicodeDecodeError was caught, but a symlink out raised
    assert result.promoted == () and len(result.decisions) == len(FACTS)
    assert {d.action for d in result.decisions} == {"gone"}
    note.unlink()
    note.symlink_to(workspace.root.parent / "elsewhere.md")
    (workspace.root.parent / "elsewhere.md").write_text("\n".join(f"- {f}" for f in FACTS), encoding="utf-8")
    escaped = run_dream(workspace)  # a note that escapes the workspace is never read
    assert escaped.promoted == () and {d.action for d in escaped.decisions} == {"gone"}


def test_deep_reads_each_note_once_per_night(workspace, monkeypatch):
    """Five candidates of one note: Deep re-reads their lines (rehydration) from one read of it, not
    one each — every read resolved the whole path again, a tenth of a busy night's Deep."""
    from kit import fsutil

    seed(workspace, monkeypatch)
    reads = []
    real = fsutil.read_text
    monkeypatch.setattr(fsutil, "read_text", lambda path, *a, **k: reads.append(Path(path).name) or real(path, *a, **k))
    result = run_dream(workspace, phases=("deep",))
    assert len(result.promoted) == len(FACTS)
    assert reads.count("2026-05-01.md") == 1


def test_a_model_that_cannot_load_falls_back_to_lexical_similarity(workspace, monkeypatch):
    from kit.memory.embeddings import EmbeddingError
    from kit.memory.service import memory_for

    class Broken:
        model_id = "broken-model"

        @property
        def dim(self):
            raise EmbeddingError("cannot load embedding model 'broken-model' offline")

        def encode(self, texts):  # as the real backend fails (the index after the dream meets it too)
            raise EmbeddingError("cannot load embedding model 'broken-model' offline")

    seed(workspace, monkeypatch)
    memory_for(workspace).use_embedder(Broken())
    result = run_dream(workspace)
    assert result.similarity == "lexical" and len(result.promoted) == len(FACTS)
    assert result.notes == ("embeddings unavailable, similarity is lexical: "
                            "cannot load embedding model 'broken-model' offline",)


def test_a_model_not_on_disk_means_lexical_similarity_and_says_why(workspace, monkeypatch):
    workspace.write_text("kit.yaml", "memory:\n  embedding:\n    model: ./no-such-model\n")
    seed(workspace, monkeypatch)
    result = run_dream(workspace)
    assert result.similarity == "lexical" and len(result.promoted) == len(FACTS)
    assert result.notes == ("embeddings unavailable, similarity is lexical: "
                            "model folder './no-such-model' does not exist; Kit never downloads",)


def test_the_plan_writes_nothing_and_apply_writes_what_it_planned(workspace, monkeypatch):
    from kit.dreaming import store
    from kit.dreaming.candidates import build_candidates
    from kit.dreaming.ranking import DeepSettings
    from kit.memory.recall import events

    seed(workspace, monkeypatch, facts=FACTS[:3])
    before = tree(workspace.root)
    with workspace.open_state() as db:
        cands = build_candidates(events(db))
        promos = store.promotions(db)
    plan = deep.plan(cands, today=date(2026, 5, 7), settings=DeepSettings.from_config(workspace.config),
                     memory_text=(workspace.root / "MEMORY.md").read_text(), promotions=promos, light={}, rem={},
                     root=workspace.root, embedder=None)
    assert tree(workspace.root) == before  # a plan is a decision, not a write
    assert [d.action for d in plan.decisions] == ["promoted"] * 3
    assert [e.key for e in plan.entries()] == [d.live.key for d in plan.chosen]
    result = run_dream(workspace)
    assert result.promoted == tuple(e.key for e in plan.entries())
