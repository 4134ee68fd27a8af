"""A candidate's fold (kit.dreaming.candidates.Fold): where the fact was last seen comes first, its
tags follow its latest wording, and folding events in batches or one by one gives the same
candidate."""

from __future__ import annotations

from kit.dreaming.candidates import Fold, build_candidates, in_time_order
from kit.memory.recall import RecallEvent, claim_hash, query_hash

FIRST = "- Alice takes her flat white with oat milk."
REWORDED = "- Alice takes her flat white with oat milk, never dairy."


def event(i: int, line: int, snippet: str = FIRST, day: str = "2026-05-01") -> RecallEvent:
    q = f"how does alice take her coffee {i}"
    return RecallEvent(i, f"memory/2026-04-30.md:{line}:{line}", "memory/2026-04-30.md", line, line, snippet,
                       claim_hash(snippet), q, query_hash(q), 0.8, day, 1_777_000_000.0 + 60 * i, "tool")


def credits(evs: list[RecallEvent]) -> list:
    return [(1.0, False, False, (e.day, "search", -e.id)) for e in evs]


def test_locations_put_the_latest_first_and_each_place_once():
    # seen at line 3, then 7 (the note was edited), then 3 again, then 5
    evs = [event(1, 3), event(2, 7), event(3, 3), event(4, 5), event(5, 5)]
    fold = Fold(claim_hash(FIRST), FIRST)
    fold.extend(evs, credits(evs))
    cand = fold.candidate([], {FIRST: None})
    assert cand.locations == (("memory/2026-04-30.md", 5, 5), ("memory/2026-04-30.md", 3, 3),
                              ("memory/2026-04-30.md", 7, 7))
    assert cand.key == "memory/2026-04-30.md:5:5"


def test_batches_and_single_events_fold_to_the_same_candidate():
    evs = [event(1, 3), event(2, 7), event(3, 3, REWORDED), event(4, 5, day="2026-05-02"), event(5, 3)]
    junk = {FIRST: None, REWORDED: None}
    one = Fold(claim_hash(FIRST), FIRST)
    for e, c in zip(evs, credits(evs), strict=True):
        one.add(e, c)
    batched = Fold(claim_hash(FIRST), FIRST)
    batched.extend(evs[:2], credits(evs[:2]))
    batched.extend(evs[2:], credits(evs[2:]))
    assert vars(one.candidate([], junk)) == vars(batched.candidate([], junk))


def test_tags_follow_the_latest_wording_through_a_checkpoint():
    # the fold's tags are computed once per wording; a new wording (and a state kept by a
    # checkpoint, then resumed) must not keep the old one's
    other = "- The Lisbon client wants invoices in Portuguese from March."
    fold = Fold(claim_hash(FIRST), FIRST)
    fold.extend([event(1, 3)], credits([event(1, 3)]))
    before = fold.candidate([], {FIRST: None}).tags
    resumed = Fold.from_state(fold.state())
    later = event(2, 3, other)
    resumed.extend([later], credits([later]))
    after = resumed.candidate([], {FIRST: None, other: None}).tags
    assert "lisbon" in " ".join(after) and after != before
    # the whole log folded at once gives the same
    whole = build_candidates([event(1, 3), later])
    assert [c.tags for c in whole if c.snippet == other] == [after]


def test_a_candidate_counts_its_quotes_without_changing_its_fold():
    """candidate(quoted) adds the quoting events' credit to what it returns, and the fold stays as
    it was: asked again, or asked without the quotes, it gives what it gave before."""
    from kit.dreaming.candidates import Quote

    evs = [event(1, 3), event(2, 3, day="2026-05-02")]
    fold = Fold(claim_hash(FIRST), FIRST)
    fold.extend(evs, credits(evs))
    plain = fold.candidate([], {FIRST: None})
    quote = Quote(9, "2026-05-03", query_hash("a quoting question"), 1.0, False, ("2026-05-03", 1))
    quoted = fold.candidate([quote], {FIRST: None})
    assert quoted.credited_days == (*plain.credited_days, "2026-05-03")
    assert quoted.credit == plain.credit + 1.0
    assert fold.candidate([quote], {FIRST: None}) == quoted
    assert fold.candidate([], {FIRST: None}) == plain


def test_a_candidates_hits_are_packed_and_read_back_exactly():
    """event_credit reads as (event id, credit, used, quoted) per hit — own hits in fold order, then
    the quotes — through a checkpoint too; it holds four byte strings, not an object per hit (the
    collector walked those after every build)."""
    import dataclasses
    import gc

    from kit.dreaming.candidates import Quote

    evs = [event(1, 3), event(2, 3), event(3, 3, day="2026-05-02")]
    given = [(0.1 + 0.2, True, False, (e.day, "search", -e.id)) if e.id == 2 else c
             for e, c in zip(evs, credits(evs), strict=True)]
    fold = Fold(claim_hash(FIRST), FIRST)
    fold.extend(evs[:1], given[:1])
    resumed = Fold.from_state(fold.state())
    resumed.extend(evs[1:], given[1:])
    quote = Quote(9, "2026-05-03", query_hash("a quoting question"), 0.5, True, ("2026-05-03", 1))
    cand = resumed.candidate([quote], {FIRST: None})
    assert list(cand.event_credit) == [(1, 1.0, False, False), (2, 0.30000000000000004, True, False),
                                       (3, 1.0, False, False), (9, 0.5, True, True)]
    assert len(cand.event_credit) == 4
    parts = [getattr(cand.event_credit, f.name) for f in dataclasses.fields(cand.event_credit)]
    assert [type(part) for part in parts] == [bytes] * 4
    assert not any(map(gc.is_tracked, parts))
    assert list(resumed.candidate([], {FIRST: None}).event_credit) == list(cand.event_credit)[:3]


def test_events_in_time_order_break_ties_by_id_whatever_order_they_come_in():
    import random

    evs = [event(i, 3)._replace(ts=1_777_000_000.0 + 60 * (i % 4)) for i in range(1, 41)]  # ten events a moment
    rng = random.Random(5)
    for _ in range(20):
        shuffled = rng.sample(evs, len(evs))
        assert in_time_order(shuffled) == sorted(evs, key=lambda e: (e.ts, e.id))
