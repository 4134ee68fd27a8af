"""Issue 16: recall credit follows relevance, spacing beats volume, a claim keeps its identity.

Searches are recorded through the real `kit.memory.recall.record_hits` (rank and top score as
memory_search logs them); the dream is the real one.
"""

from __future__ import annotations

import pytest

from helpers_dream import days, searched, set_now, write_note
from kit.dreaming.explain import explain
from kit.dreaming.runner import run_dream

LAUNCH = "The card payments launch is planned for 14 April."
LAUNDRETTE = "The laundrette on Oak Street changed to card payments only."
FILLER = ["Lunch at the Vietnamese place, the pho was great.", "Rain all day, took the tram.",
          "Printer on the second floor jammed again."]
QUERIES = ["when do card payments go live", "payments launch date", "are we on track for the launch",
           "card payments launch", "launch plan for payments", "go-live date card payments", "payments go live"]


def test_a_side_hit_is_never_promoted(workspace):
    write_note(workspace.root, "2026-05-01", [LAUNCH, *FILLER, LAUNDRETTE])
    for i, day in enumerate(days("2026-05-02", 7)):
        # the answer first; the laundrette line fifth, next to it in every search, on seven days
        searched(workspace, day, QUERIES[i], [(LAUNCH, 0.58), (FILLER[0], 0.47), (FILLER[1], 0.45),
                                               (FILLER[2], 0.44), (LAUNDRETTE, 0.43)], note_day="2026-05-01")
    set_now("2026-05-08", 20)
    result = run_dream(workspace)
    assert result.promoted == ("memory/2026-05-01.md:3:3",)
    side = next(r for r in result.ranked if r.cand.snippet == f"- {LAUNDRETTE}")
    assert (side.cand.recall_count, side.cand.unique_queries, side.cand.recall_days) == (7, 7, 7)  # raw
    # rank 4, 0.43/0.58 of the top: ((0.741 − 0.5)/0.5)² / 5 = 0.0465 a day
    per_day = (((0.43 / 0.58 - 0.5) / 0.5) ** 2) / 5
    assert side.cand.credited == pytest.approx(7 * per_day)
    assert side.cand.credited_days == () and side.cand.credited_queries == frozenset()
    assert side.blocked_by == ["min_score", "min_recall_count", "min_recall_days", "min_unique_queries"]
    shown = explain(workspace, LAUNDRETTE).to_json()
    assert shown["recalls"] == {"raw": 7, "credited": pytest.approx(7 * per_day, abs=1e-6),
                                "credit": pytest.approx(7 * per_day, abs=1e-6), "raw_days": 7, "credited_days": 0,
                                "raw_queries": 7, "credited_queries": 0, "used": 0, "counts_from": 0.5}
    assert [h["rank"] for h in shown["history"]] == [4] * 7
    answer = explain(workspace, LAUNCH).to_json()
    assert answer["recalls"]["credited"] == 7.0 and [h["credit"] for h in answer["history"]] == [1.0] * 7


def test_a_hit_the_agent_used_earns_extra_credit(workspace):
    from kit.memory.recall import record_use

    write_note(workspace.root, "2026-05-01", [LAUNCH, *FILLER, LAUNDRETTE])
    searched(workspace, "2026-05-02", "laundrette payments", [(LAUNCH, 0.58), (LAUNDRETTE, 0.55)],
             note_day="2026-05-01")
    set_now("2026-05-02", 10)
    with workspace.open_state() as db:
        assert record_use(db, "memory/2026-05-01.md", 7, 7, "read")  # memory_get of the laundrette line
        assert not record_use(db, "memory/2026-05-01.md", 1, 60, "read")  # a whole note is not a hit
        assert not record_use(db, "MEMORY.md", 1, 2, "reply")  # only daily notes are candidates
    set_now("2026-05-02", 20)
    shown = explain(workspace, LAUNDRETTE).to_json()
    # rank 1, 0.55/0.58: ((0.948 − 0.5)/0.5)² / 2 = 0.4019, + 0.75 for the read, capped at 1
    assert [(h["rank"], h["credit"], h["used"]) for h in shown["history"]] == [(1, 1.0, True)]
    assert shown["recalls"]["used"] == 1


def test_a_stray_second_query_does_not_unlock_a_burst(workspace):
    hotel = "The conference hotel is the Midland; booking reference MX-20417."
    write_note(workspace.root, "2026-05-01", [hotel, *FILLER])
    asks = ["hotel booking reference", "which hotel for the conference", "Midland booking ref",
            "did I book the hotel", "where am I staying", "hotel confirmation number", "hotel near the venue",
            "hotel booked under which name", "hotel for the trip"]
    for i, q in enumerate(asks):  # nine wordings, one afternoon
        searched(workspace, "2026-05-02", q, [(hotel, 0.7), (FILLER[0], 0.3)], note_day="2026-05-01", hour=14,
                 minute=i)
    set_now("2026-05-02", 20)
    burst = next(r for r in run_dream(workspace).ranked if r.cand.snippet == f"- {hotel}")
    assert (burst.cand.recall_count, burst.cand.unique_queries) == (9, 9)
    assert burst.cand.credited == 1.0  # a day counts at most one recall
    assert burst.blocked_by == ["min_score", "min_recall_count", "min_recall_days"]

    # six days later, one stray question: two days and ten queries now, but still two credited recalls
    searched(workspace, "2026-05-08", "conference hotel again?", [(hotel, 0.66)], note_day="2026-05-01")
    set_now("2026-05-08", 20)
    result = run_dream(workspace)
    burst = next(r for r in result.ranked if r.cand.snippet == f"- {hotel}")
    assert (burst.cand.recall_days, len(burst.cand.credited_days), len(burst.cand.credited_queries)) == (2, 2, 10)
    assert burst.cand.credited == 2.0
    assert burst.blocked_by == ["min_recall_count"]
    assert result.promoted == ()


def test_a_deleted_neighbour_keeps_the_history(workspace):
    fact = "Production deploys happen on Tuesdays after standup."
    write_note(workspace.root, "2026-05-01", ["Rain all day, took the tram.", fact, FILLER[0]])
    asks = ["deploy day", "when do we ship", "release day", "production deploy schedule", "can I deploy today",
            "next release window"]
    for i, day in enumerate(days("2026-05-02", 3)):
        searched(workspace, day, asks[i], [(fact, 0.61)], note_day="2026-05-01")  # line 4
    note = workspace.root / "memory/2026-05-01.md"
    note.write_text(note.read_text().replace("- Rain all day, took the tram.\n", ""))  # the line above goes
    for i, day in enumerate(days("2026-05-05", 3), start=3):
        searched(workspace, day, asks[i], [(fact, 0.61)], note_day="2026-05-01")  # now line 3
    set_now("2026-05-07", 20)
    result = run_dream(workspace)
    mine = [r for r in result.ranked if r.cand.snippet == f"- {fact}"]
    assert len(mine) == 1  # one candidate, not two halves
    assert (mine[0].cand.recall_count, mine[0].cand.recall_days, mine[0].cand.credited) == (6, 6, 6.0)
    assert mine[0].cand.locations == (("memory/2026-05-01.md", 3, 3), ("memory/2026-05-01.md", 4, 4))
    assert result.promoted == ("memory/2026-05-01.md:3:3",)
    assert "<!-- kit:promoted key=memory/2026-05-01.md:3:3 " in (workspace.root / "MEMORY.md").read_text()


def test_provenance_points_at_the_line_where_it_is_now(workspace):
    fact = "Ben is allergic to peanuts; his EpiPen is in the blue kitchen drawer."
    write_note(workspace.root, "2026-05-01", [fact, *FILLER])
    for i, day in enumerate(days("2026-05-02", 3)):
        searched(workspace, day, ["epipen", "ben allergy", "babysitter notes"][i], [(fact, 0.7)],
                 note_day="2026-05-01")
    note = workspace.root / "memory/2026-05-01.md"
    lines = note.read_text().split("\n")
    note.write_text("\n".join([lines[0], "", "## Kids", ""] + lines[3:-1] + [lines[2], ""]))  # moved to the end
    set_now("2026-05-04", 20)
    result = run_dream(workspace)
    assert result.promoted == ("memory/2026-05-01.md:8:8",)
    assert note.read_text().split("\n")[7] == f"- {fact}"


def test_a_small_rewording_is_the_same_claim_a_new_value_is_not(workspace):
    fact = "Invoices go out on the 1st of the month with 30-day payment terms."
    reworded = "Invoices go out on the 1st of each month with 30-day payment terms."
    changed = "Invoices go out on the 1st of the month with 45-day payment terms."
    write_note(workspace.root, "2026-05-01", [fact])
    write_note(workspace.root, "2026-05-05", [reworded, changed])
    searched(workspace, "2026-05-02", "invoice terms", [(fact, 0.6)], note_day="2026-05-01")
    searched(workspace, "2026-05-06", "payment terms", [(reworded, 0.6), (changed, 0.59)], note_day="2026-05-05")
    set_now("2026-05-06", 20)
    result = run_dream(workspace, dry_run=True)
    texts = sorted(r.cand.snippet for r in result.ranked)
    assert texts == [f"- {reworded}", f"- {changed}"]  # the latest wording stands for the first
    same = next(r.cand for r in result.ranked if r.cand.snippet == f"- {reworded}")
    assert (same.recall_count, same.recall_days, same.first_snippet) == (2, 2, f"- {fact}")


def test_same_inputs_give_a_byte_identical_memory(workspace, tmp_path):
    from kit.init import init_workspace
    from kit.workspace import Workspace

    other = Workspace.open(init_workspace(tmp_path / "twin").root)
    for ws in (workspace, other):
        write_note(ws.root, "2026-05-01", [LAUNCH, *FILLER, LAUNDRETTE])
        for i, day in enumerate(days("2026-05-02", 4)):
            searched(ws, day, QUERIES[i], [(LAUNCH, 0.58), (LAUNDRETTE, 0.5)], note_day="2026-05-01")
        set_now("2026-05-05", 20)
        run_dream(ws)
    assert (workspace.root / "MEMORY.md").read_bytes() == (other.root / "MEMORY.md").read_bytes()
    assert LAUNCH in (workspace.root / "MEMORY.md").read_text()


ADDRESS = "Our address is 22 Cotham Road, Bristol BS6 6DP."
TESCO = "Tesco delivery came without the bread."


def _tesco_month(ws, *, passed_over: bool) -> None:
    """Bench tom's Tesco pattern: one real question about the delivery, then on three days the
    delivery-address question, where the Tesco line trails the address in active recall and again in
    the agent's own search — or (passed_over) tops active recall, and the agent searches on and
    answers with the address."""
    from kit.memory.recall import record_use

    where = write_note(ws.root, "2026-05-01", [ADDRESS, *FILLER, TESCO])
    searched(ws, "2026-05-02", "did the Tesco order come", [(TESCO, 0.7)], note_day="2026-05-01", source="active")
    searched(ws, "2026-05-02", "Tesco delivery", [(TESCO, 0.75)], note_day="2026-05-01")
    for day in days("2026-05-03", 3):
        first = [(TESCO, 0.5), (ADDRESS, 0.45)] if passed_over else [(ADDRESS, 0.6), (TESCO, 0.55)]
        for hour in (10,) if passed_over else (10, 15):  # without uses: asked twice, morning and afternoon
            searched(ws, day, "where do we live, for the delivery", first, note_day="2026-05-01", source="active",
                     hour=hour)
            searched(ws, day, "delivery address", [(ADDRESS, 0.62), (TESCO, 0.58)], note_day="2026-05-01", hour=hour)
        if passed_over:
            set_now(day, 10)
            with ws.open_state() as db:
                record_use(db, "memory/2026-05-01.md", where[ADDRESS], where[ADDRESS], "reply")


def test_side_hits_of_one_question_do_not_add_up_to_a_recall(workspace):
    """Tesco trails the address twice a turn (active recall 0.347, the agent's search 0.379), two
    turns a day: summed, they credited each day (and each query), so three such days and one real
    question promoted it. A turn counts once, at its best hit, and a day or a query only when one
    hit there answered (reached 0.5)."""
    _tesco_month(workspace, passed_over=False)
    set_now("2026-05-05", 20)
    result = run_dream(workspace, dry_run=True)
    tesco = next(r for r in result.ranked if r.cand.snippet == f"- {TESCO}")
    side = ((((0.58 / 0.62) - 0.5) / 0.5) ** 2) / 2  # the better of the turn's two side hits
    assert tesco.cand.credited_days == ("2026-05-02",)
    assert tesco.cand.credited == pytest.approx(1 + 3 * 2 * side)  # two turns a day, still under 1
    assert len(tesco.cand.credited_queries) == 2  # the two Tesco queries of 05-02, not the address ones
    assert "min_recall_days" in tesco.blocked_by and "min_unique_queries" not in tesco.blocked_by
    assert result.promoted == ("memory/2026-05-01.md:3:3",)


def test_an_active_recall_hit_the_agent_passed_over_earns_side_credit_only(workspace):
    """Tesco tops active recall for the address question; the agent searches on and answers with
    the address. Rank 0 or not, it did not answer: SIDE_CREDIT at most, never a day."""
    from kit.dreaming.scoring import SIDE_CREDIT

    _tesco_month(workspace, passed_over=True)
    set_now("2026-05-05", 20)
    result = run_dream(workspace, dry_run=True)
    tesco = next(r for r in result.ranked if r.cand.snippet == f"- {TESCO}")
    assert tesco.cand.credited_days == ("2026-05-02",)
    assert tesco.cand.credited == pytest.approx(1 + 3 * SIDE_CREDIT)
    assert "min_recall_days" in tesco.blocked_by and result.promoted == ("memory/2026-05-01.md:3:3",)
    history = explain(workspace, TESCO).to_json()["history"]
    assert [(h["source"], h["rank"], h["credit"]) for h in history if h["day"] == "2026-05-03"] == [
        ("active", 0, SIDE_CREDIT), ("tool", 1, SIDE_CREDIT)]


def test_an_active_recall_hit_the_agent_searched_past_does_not_unlock_a_burst(workspace):
    """Bench maya's hotel: a one-day burst, one stray question a week later, and in between the
    hotel line tops active recall for "what book am I reading" (booking ≈ book); the agent searches
    on, finds nothing and uses nothing. That top hit did not answer: no third credited recall."""
    from kit.dreaming.scoring import SIDE_CREDIT
    from kit.memory.recall import record_hits

    hotel = "The conference hotel is the Midland; booking reference MX-20417."
    write_note(workspace.root, "2026-05-01", [hotel, *FILLER])
    for i, q in enumerate(["hotel booking reference", "which hotel for the conference", "Midland booking ref"]):
        searched(workspace, "2026-05-02", q, [(hotel, 0.7)], note_day="2026-05-01", hour=14, minute=i)
    searched(workspace, "2026-05-05", "what book am I reading", [(hotel, 0.3)], note_day="2026-05-01",
             source="active")
    set_now("2026-05-05", 10)
    with workspace.open_state() as db:
        assert record_hits(db, "book I am reading", [], "tool") == 0  # logged all the same
        assert db.execute("SELECT results, source FROM recall_searches ORDER BY id DESC").fetchone()[:] == (0, "tool")
    searched(workspace, "2026-05-08", "conference hotel again?", [(hotel, 0.66)], note_day="2026-05-01",
             source="active")
    set_now("2026-05-08", 20)
    result = run_dream(workspace, dry_run=True)
    burst = next(r for r in result.ranked if r.cand.snippet == f"- {hotel}")
    assert burst.cand.credited_days == ("2026-05-02", "2026-05-08")
    assert burst.cand.credited == pytest.approx(2 + SIDE_CREDIT)
    assert burst.blocked_by == ["min_recall_count"] and result.promoted == ()


HOTEL = "The conference hotel is the Midland; booking reference MX-20417."
BOOK = "Dana shared a good podcast about engineering management."


@pytest.mark.parametrize("shape", ["only hit", "lesser hit"])
def test_an_off_topic_hit_the_agent_quoted_does_not_unlock_a_burst(workspace, shape):
    """Bench maya's hotel with the relative keep rules: a one-day burst, a stray question a week
    later, and in between "what book am I reading" (no answer in the notes yet) finds the hotel
    *booking* line at 0.30 — the only hit, or one kept below another — and the agent, with nothing
    better, quotes it. At 0.30 against the 0.70 it scores when asked about, it was found for
    something else: side credit, no third credited day, whatever search kept around it."""
    from kit.dreaming.scoring import SIDE_CREDIT
    from kit.memory.recall import record_use

    where = write_note(workspace.root, "2026-05-01", [HOTEL, *FILLER, BOOK])
    for i, q in enumerate(["hotel booking reference", "which hotel for the conference", "Midland booking ref"]):
        searched(workspace, "2026-05-02", q, [(HOTEL, 0.7)], note_day="2026-05-01", hour=14, minute=i)
    off = [(HOTEL, 0.3)] if shape == "only hit" else [(BOOK, 0.32), (HOTEL, 0.3)]
    searched(workspace, "2026-05-05", "what book am I reading", off, note_day="2026-05-01", source="active")
    searched(workspace, "2026-05-05", "book distributed systems", off, note_day="2026-05-01")
    set_now("2026-05-05", 10)
    with workspace.open_state() as db:
        assert record_use(db, "memory/2026-05-01.md", where[HOTEL], where[HOTEL], "reply")  # quoted it
    searched(workspace, "2026-05-08", "conference hotel again?", [(HOTEL, 0.66)], note_day="2026-05-01",
             source="active")
    set_now("2026-05-08", 20)
    result = run_dream(workspace, dry_run=True)
    burst = next(r for r in result.ranked if r.cand.snippet == f"- {HOTEL}")
    assert (burst.cand.recall_days, burst.cand.used) == (3, 2)  # raw: three days, quoted twice
    assert burst.cand.credited_days == ("2026-05-02", "2026-05-08")
    assert burst.cand.credited == pytest.approx(2 + SIDE_CREDIT)
    assert burst.blocked_by == ["min_recall_count"] and result.promoted == ()
    history = explain(workspace, HOTEL).to_json()["history"]
    assert [(h["rank"], h["credit"], h["used"]) for h in history if h["day"] == "2026-05-05"] == [
        (0 if shape == "only hit" else 1, SIDE_CREDIT, True)] * 2


def test_a_weak_hit_counts_when_its_line_never_scored_much_better(workspace):
    """The off-topic cap measures a hit against its own line, not an absolute floor: a fact only
    ever found by weak matches (a paraphrase, 0.27–0.30) still earns its days."""
    fact = "Our address is 22 Cotham Road, Bristol BS6 6DP."
    write_note(workspace.root, "2026-05-01", [fact, *FILLER])
    for i, day in enumerate(days("2026-05-02", 3)):
        searched(workspace, day, ["home postcode", "where do we live", "what do I put for the delivery"][i],
                 [(fact, [0.27, 0.3, 0.28][i]), (FILLER[0], 0.21)], note_day="2026-05-01")
    set_now("2026-05-04", 20)
    cand = next(r.cand for r in run_dream(workspace, dry_run=True).ranked if r.cand.snippet == f"- {fact}")
    assert cand.credited_days == ("2026-05-02", "2026-05-03", "2026-05-04") and cand.credited == 3.0


def test_an_answer_that_quotes_a_fact_credits_the_fact(workspace):
    # the archived reply "**Assistant:** From your notes: <fact>" is junk itself, but a search that
    # found it found the fact: its credit goes to the fact's day and query (quoted_wordings)
    fact = "The Lisbon office wifi password is tram-2291."
    write_note(workspace.root, "2026-05-01", [fact, *FILLER])
    write_note(workspace.root, "2026-05-03", [f"**Assistant:** From your notes: {fact}", FILLER[1]])
    for i, day in enumerate(days("2026-05-02", 2)):
        searched(workspace, day, ["lisbon wifi password", "office wifi"][i], [(fact, 0.7), (FILLER[0], 0.3)],
                 note_day="2026-05-01")
    searched(workspace, "2026-05-04", "what's the wifi code at the office",
             [(f"**Assistant:** From your notes: {fact}", 0.72), (FILLER[1], 0.3)], note_day="2026-05-03")
    set_now("2026-05-04", 20)
    result = run_dream(workspace)
    mine = next(r for r in result.ranked if r.cand.snippet == f"- {fact}")
    assert mine.cand.recall_count == 2  # raw: its own hits only
    assert mine.cand.credited_days == ("2026-05-02", "2026-05-03", "2026-05-04")
    assert len(mine.cand.credited_queries) == 3 and mine.cand.credited == 3.0
    assert [quoted for *_, quoted in mine.cand.event_credit] == [False, False, True]
    assert result.promoted == ("memory/2026-05-01.md:3:3",)


def test_asking_for_a_fact_directly_later_never_takes_back_its_days(workspace):
    # review finding R1: measured against its line's best score in the whole log, a fact first
    # found by weak paraphrases (the top hit on three days) lost those days to one direct question
    fact = "The boiler service is booked with Hartley Heating every October."
    write_note(workspace.root, "2026-05-01", [fact, *FILLER])
    for day, q, score in (("2026-05-02", "who looks after the heating", 0.29),
                          ("2026-05-03", "annual maintenance for the house", 0.27),
                          ("2026-05-04", "which company comes in autumn", 0.30)):
        searched(workspace, day, q, [(fact, score), (FILLER[0], 0.12)], note_day="2026-05-01")
    searched(workspace, "2026-05-05", "boiler service Hartley Heating", [(fact, 0.80)], note_day="2026-05-01")
    set_now("2026-05-05", 20)
    result = run_dream(workspace)
    mine = next(r for r in result.ranked if r.cand.snippet == f"- {fact}")
    assert mine.cand.credited_days == ("2026-05-02", "2026-05-03", "2026-05-04", "2026-05-05")
    assert len(mine.cand.credited_queries) == 4 and mine.cand.credited == 4.0
    assert result.promoted == ("memory/2026-05-01.md:3:3",)
