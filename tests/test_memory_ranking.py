"""Long-term recall (issue 13), each mechanism on a small exact case with the real model: relevance
first and recency as a prior, MMR and thresholds on normalised scores, no boilerplate in the index,
dates in queries and results, neighbouring context."""

from __future__ import annotations

import dataclasses
import math
from datetime import date

import pytest

import helpers_memory
from helpers_memory import write
from kit.memory.search import SearchSettings, hybrid_search, mmr, normalise, recency_prior, tokens

TODAY = date(2026, 6, 15)


@pytest.fixture(autouse=True)
def _frozen_clock(kit_now):
    kit_now("2026-06-15T09:00:00+00:00")


@pytest.fixture
def make(tmp_path, real_embedder):
    """make({rel: text}) → a synced Memory over a fresh workspace holding those files."""
    from kit.init import init_workspace
    from kit.memory.service import Memory
    from kit.workspace import Workspace

    opened = []

    def build(files: dict[str, str], name: str = "ws"):
        root = tmp_path / name
        init_workspace(root)
        for rel, text in files.items():
            write(root, rel, text)
        mem = Memory(Workspace.open(root), embedder=real_embedder)
        mem.sync()
        opened.append(mem)
        return mem

    yield build
    for mem in opened:
        mem.close()


def search(mem, query: str, settings: SearchSettings | None = None, limit: int | None = None):
    idx = mem.index()
    return hybrid_search(idx, query, settings or SearchSettings(), today=TODAY, limit=limit,
                         vectors=mem.vector_set(idx, mem.embedder.model_id), encode_query=mem.encode_query)


def note(day: str, *bullets: str) -> tuple[str, str]:
    return f"memory/{day}.md", f"# {day}\n\n" + "".join(f"- {b}\n" for b in bullets)


CABIN_ANSWER = "The wifi password at the cabin is fjord-2291."
CABIN_DRIVE = "Drove up to the cabin, the wifi was slow all evening."


# --------------------------------------------------------------------------- recency is a prior


def test_an_exact_match_400_days_old_outranks_a_weak_match_from_yesterday(make):
    mem = make(dict([note("2025-05-11", CABIN_ANSWER), note("2026-06-14", CABIN_DRIVE)]))
    result = search(mem, "cabin wifi password")
    answer, drive = result.results[:2]
    assert (answer.path, drive.path) == ("memory/2025-05-11.md", "memory/2026-06-14.md")
    assert answer.relevance > drive.relevance
    # age counts only until a later note on the same topic: nothing later says more about the
    # password (the drive note is about another thing), so 400 days cost it nothing at all
    assert answer.score == pytest.approx(answer.relevance)
    assert drive.score == pytest.approx(drive.relevance)
    # and were the drive note the same topic, the prior could take at most its 10 % share
    assert recency_prior(400, 30, 0.1) >= 0.9


def test_a_latest_query_prefers_the_newer_of_two_equally_relevant_notes(make):
    same = "The team standup is at 9:45 in the small meeting room."
    mem = make(dict([note("2026-01-10", same), note("2026-05-10", same)]))
    plain = search(mem, "team standup time")
    latest = search(mem, "latest team standup time")
    assert latest.recent and not plain.recent
    for result, weight in ((plain, 0.1), (latest, 0.35)):
        newer, older = result.results[:2]
        assert (newer.path, older.path) == ("memory/2026-05-10.md", "memory/2026-01-10.md")
        assert newer.relevance == pytest.approx(older.relevance)  # the same words, the same vector
        assert older.relative == pytest.approx(recency_prior(120, 30, weight))
    assert latest.results[1].relative < plain.results[1].relative  # "latest" lifts the newer one further


def test_a_later_line_that_says_the_value_changed_ranks_above_the_old_value(make):
    """Regression (a new-user pass, the docs' own example): three days after "The standup is at
    9:30." came "The standup moved to 10:15.", and "when is standup" ranked 9:30 first (0.778 vs
    0.721): three days of age cost the old line 0.7 %. A later line on the topic that says the
    value changed supersedes it outright (the prior's whole 10 %)."""
    mem = make(dict([note("2026-05-11", "The standup is at 9:30."), note("2026-05-14", "The standup moved to 10:15.")]))
    newer, older = search(mem, "when is standup").results[:2]
    assert (newer.path, older.path) == ("memory/2026-05-14.md", "memory/2026-05-11.md")
    assert older.relevance > newer.relevance  # the old line matches the words better …
    assert older.score == pytest.approx(older.relevance * 0.9)  # … and gives way all the same


def test_the_ranking_does_not_change_when_the_notes_age_a_year(make):
    young = make(dict([note("2025-05-11", CABIN_ANSWER), note("2026-06-14", CABIN_DRIVE),
                       note("2026-02-01", "Packed the cabin keys and the spare router.")]), "young")
    old = make(dict([note("2024-05-11", CABIN_ANSWER), note("2025-06-14", CABIN_DRIVE),
                     note("2025-02-01", "Packed the cabin keys and the spare router.")]), "old")
    a, b = search(young, "cabin wifi password"), search(old, "cabin wifi password")
    assert [h.path[12:] for h in a.results] == [h.path[12:] for h in b.results]  # same month-day order
    assert [round(h.relative, 6) for h in a.results] == [round(h.relative, 6) for h in b.results]


# --------------------------------------------------------------------------- normalised MMR and thresholds


def test_mmr_on_normalised_scores_keeps_relevance_when_every_score_is_tiny():
    match, second, unrelated = frozenset("abcd"), frozenset("abce"), frozenset("wxyz")
    raw = [0.022, 0.021, 0.001]  # what decayed scores looked like
    sets = [match, second, unrelated]
    assert mmr(raw, sets, 0.7, 2) == [0, 2]  # on raw scores the penalty wins: the unrelated one
    assert mmr(normalise(raw), sets, 0.7, 2) == [0, 1]  # normalised: the second match


def test_mmr_with_limit_10_keeps_everything_limit_5_returned(make):
    files = dict(note(f"2026-05-{d:02d}", f"Ran {d} km along the canal before work, legs felt {mood}.")
                 for d, mood in zip(range(1, 16), ["fine", "heavy", "great", "tired", "ok"] * 3, strict=True))
    files.update(dict([note("2026-04-02", "Bought new running shoes, Brooks Ghost 16."),
                       note("2026-04-09", "Signed up for the Leeds Half marathon.")]))
    mem = make(files)
    five = search(mem, "how far did I run along the canal", limit=5)
    ten = search(mem, "how far did I run along the canal", limit=10)
    assert len(five) == 5 and len(ten) == 10
    assert [h.key for h in ten.results[:5]] == [h.key for h in five.results]


def test_min_score_zero_never_returns_fewer_results(make):
    mem = make(dict([note("2025-03-01", CABIN_ANSWER), note("2026-06-14", CABIN_DRIVE),
                     note("2026-01-05", "Booked the dentist for a cleaning.")]))
    strict = search(mem, "cabin wifi password", limit=3)
    loose = search(mem, "cabin wifi password", SearchSettings(min_score=0.0, min_vector_score=0.0), limit=3)
    assert len(loose) == 3 and len(strict) <= len(loose)
    assert [h.key for h in loose.results[: len(strict)]] == [h.key for h in strict.results]


# --------------------------------------------------------------------------- facts, not boilerplate


TEMPLATE_LINE = "Long-term facts worth having in every conversation"


def test_an_untouched_template_line_is_never_a_result(make):
    mem = make(dict([note("2026-06-01", "Miso the cat likes the sunny windowsill.")]))
    assert all(h.path != "MEMORY.md" for h in search(mem, TEMPLATE_LINE, limit=10).results)
    assert mem.index().conn.execute("SELECT COUNT(*) FROM chunks WHERE path = 'MEMORY.md'").fetchone()[0] == 0


def test_the_template_paragraph_is_a_result_once_the_user_changes_it(make, real_embedder):
    from kit.paths import bundled

    template = (bundled("workspace") / "MEMORY.md").read_text(encoding="utf-8")
    edited = template.replace("Edit freely", "My partner is Sam. Edit freely")
    assert edited != template
    files = {f"memory/topics/filler-{i}.md": helpers_memory.filler_note(i) for i in range(12)}  # a corpus for BM25
    mem = make({"MEMORY.md": edited + "\n- Miso the cat is two years old.\n", **files})
    hits = search(mem, "who is my partner", limit=10).results
    assert any(h.path == "MEMORY.md" and "My partner is Sam" in h.snippet for h in hits)
    cat = [h for h in search(mem, "how old is Miso the cat").results if h.path == "MEMORY.md"]
    assert cat and cat[0].snippet.endswith("- Miso the cat is two years old.")


def test_headings_alone_and_comments_alone_are_no_results(make):
    mem = make({
        "memory/topics/travel.md": "# Travel\n\n## Japan trip\n\n<!-- notes about the Japan trip go here -->\n",
        "memory/topics/food.md": "# Food\n\n- Ramen in Sapporo was the best of the Japan trip.\n",
    })
    rows = mem.index().conn.execute("SELECT path FROM chunks").fetchall()
    assert [r[0] for r in rows] == ["memory/topics/food.md"]
    assert [h.path for h in search(mem, "Japan trip").results] == ["memory/topics/food.md"]


# --------------------------------------------------------------------------- dates


DENTIST = dict([
    note("2025-11-03", "Dentist cleaning booked, the hygienist was lovely."),
    note("2026-03-10", "Dentist appointment went fine, no cavities this time."),
    note("2026-05-12", "Dentist appointment: one small filling on the left."),
])


def test_a_date_in_the_query_narrows_the_results(make):
    mem = make(DENTIST)
    anytime = search(mem, "dentist appointment")
    assert {h.date for h in anytime.results} == {"2025-11-03", "2026-03-10", "2026-05-12"}
    march = search(mem, "dentist appointment in March")
    assert (march.period.start, march.period.end) == (date(2026, 3, 1), date(2026, 3, 31))
    assert march.results[0].date == "2026-03-10"
    outside = [h for h in march.results if h.date != "2026-03-10"]
    assert outside and all(h.score <= SearchSettings().outside_period * h.relevance + 1e-9 for h in outside)
    only = search(mem, "dentist appointment in March", SearchSettings(outside_period=0.0))
    assert [h.date for h in only.results] == ["2026-03-10"]  # outside_period 0: a filter
    chinese = search(mem, "去年十一月 dentist")
    assert chinese.results[0].date == "2025-11-03"


def test_an_event_in_the_query_is_dated_by_the_notes(make):
    mem = make(dict([
        note("2025-09-20", "Wedding day! Rain in the morning, sun for the photos."),
        note("2025-09-06", "Saw Fontaines D.C. at the Columbiahalle, loud and brilliant."),
        note("2026-02-27", "Concert at the Philharmonie: Mahler 5."),
    ]))
    result = search(mem, "which concert did we go to two weeks before the wedding")
    assert (result.period.start, result.period.end) == (date(2025, 9, 3), date(2025, 9, 9))
    assert result.results[0].path == "memory/2025-09-06.md"


def test_results_carry_their_date_and_the_times_their_text_names(make):
    mem = make({
        "memory/2026-06-12.md": "# 2026-06-12\n\n- Yesterday Sam fixed the bike brakes, the bike service is on 4 July.\n",
        "memory/topics/log.md": "# Log\n\n## 2026-02-03\n\n- Replaced the bike chain.\n",
    })
    hits = {h.path: h for h in search(mem, "bike repairs", limit=10).results}
    brakes = hits["memory/2026-06-12.md"]
    assert brakes.date == "2026-06-12"
    assert [t.to_json() for t in brakes.times] == [
        {"text": "Yesterday", "start": "2026-06-11", "end": "2026-06-11"},
        {"text": "on 4 July", "start": "2026-07-04", "end": "2026-07-04"},  # a day and month: the nearest one
    ]
    assert hits["memory/topics/log.md"].date == "2026-02-03"  # from the heading


# --------------------------------------------------------------------------- neighbouring context


def test_a_hit_brings_its_relevant_neighbours_without_changing_its_lines(make):
    mem = make({"memory/2026-06-10.md": (
        "# 2026-06-10\n\n## Dentist\n\n"
        "- My dentist is Dr. Aydın on Sonnenallee 12.\n"
        "- Dr. Aydın's practice is open until 19:00 on Thursdays.\n"
        "\n## Groceries\n\n- Buy oat milk and rye bread.\n"
    )})
    result = search(mem, "when is Dr. Aydın's practice open", limit=1)
    hit = result.results[0]
    assert (hit.start_line, hit.end_line) == (6, 6)
    assert hit.snippet == "- Dr. Aydın's practice is open until 19:00 on Thursdays."
    assert [c.to_json() for c in hit.context] == [
        {"start_line": 5, "end_line": 5, "text": "- My dentist is Dr. Aydın on Sonnenallee 12."}]
    budget = dataclasses.replace(SearchSettings(), snippet_chars=len(hit.snippet) + 10)
    assert search(mem, "when is Dr. Aydın's practice open", budget, limit=1).results[0].context == ()


def test_tokens_still_split_cjk_into_bigrams():
    assert tokens("搬家公司") == {"搬家", "家公", "公司"}


def test_cli_text_output_shows_the_period_the_dates_the_times_and_the_context(make, cli):
    mem = make({
        "memory/2026-06-12.md": ("# 2026-06-12\n\n## Bike\n\n- Yesterday Sam fixed the bike brakes.\n"
                                 "- Sam says the pads will need replacing by August.\n"),
        "memory/topics/bike.md": "# Bike log\n\n## 2026-02-03\n\n- Replaced the bike chain at Rad & Tat.\n",
    })
    out = cli("memory", "search", "who fixed the bike brakes in June", "--limit", "1", "-w", mem.ws.root)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "period: 2026-06-01 to 2026-06-30"
    assert lines[1].startswith("memory/2026-06-12.md:5  score ")  # the date is in the path: not repeated
    assert lines[2:5] == ["- Yesterday Sam fixed the bike brakes.",
                          "  “Yesterday” = 2026-06-11",
                          "  memory/2026-06-12.md:6: - Sam says the pads will need replacing by August."]
    chain = cli("memory", "search", "bike chain", "--limit", "1", "-w", mem.ws.root).output.splitlines()
    assert chain[0].startswith("memory/topics/bike.md:1-5  2026-02-03  score "), chain  # its date: the heading


def test_a_chunk_holding_the_questions_words_is_kept_however_long():
    from kit.memory.search import holds_query_words

    archive = ("# Retired promoted memories\n\nEntries Kit's dreaming moved out of MEMORY.md when it grew.\n\n"
               "- Alice drinks her flat white with oat milk, never dairy.\n")
    assert holds_query_words(archive, "does Alice take oat milk in her flat white")  # 5 of 6 content words
    assert not holds_query_words(archive, "does Alice take soy milk in her tea")  # 2 of 5
    assert holds_query_words("the cabin wifi", "cabin wifi") and not holds_query_words("the cabin", "cabin wifi")
    assert not holds_query_words("cabin", "cabin")  # one word: the text side's own score decides


def test_topic_ages_count_only_until_a_later_note_on_the_same_topic():
    import numpy as np

    from kit.memory.index import ChunkRow
    from kit.memory.search import Candidate, topic_ages

    def cand(i: int, path: str, text: str, day: str | None) -> Candidate:
        return Candidate(ChunkRow(i, path, 1, 1, "", text, day), 0.5, 0.0, False, 0.5)

    kept = [cand(1, "memory/2026-01-01.md", "the team standup is at 9:30 daily", "2026-01-01"),
            cand(2, "memory/2026-03-01.md", "the team standup is at 10:15 daily", "2026-03-01"),
            cand(3, "memory/2026-02-01.md", "bought a new kettle for the office", "2026-02-01"),
            cand(4, "MEMORY.md", "the team standup is at 9:30 daily", "2026-04-01"),  # evergreen, even dated
            cand(5, "memory/topics/work.md", "the team standup is at 9:30 daily", None)]
    sim = np.full((5, 5), 0.1)
    sim[0, 1] = sim[1, 0] = sim[0, 3] = sim[3, 0] = sim[0, 4] = sim[4, 0] = 0.9
    np.fill_diagonal(sim, 1.0)
    assert topic_ages(kept, sim, 0.6) == [59, 0, 0, None, None]
    assert topic_ages(kept, None, 0.6) == [59, 0, 0, None, None]  # token Jaccard without vectors
    assert topic_ages(kept, sim, 0.95) == [0, 0, 0, None, None]  # nothing close enough: no one ages
    assert topic_ages([], None, 0.6) == []
    # a later line on the topic that says the value changed supersedes the older one outright,
    # whatever the days between: 3 days cost "is at 9:30" 0.7 % of its score, and it kept first place
    moved = [cand(1, "memory/2026-05-11.md", "the team standup is at 9:30 daily", "2026-05-11"),
             cand(2, "memory/2026-05-14.md", "the team standup moved to 10:15", "2026-05-14"),
             cand(3, "memory/2026-05-15.md", "bought a new kettle for the office", "2026-05-15")]
    near = np.full((3, 3), 0.1)
    near[0, 1] = near[1, 0] = 0.9
    np.fill_diagonal(near, 1.0)
    assert topic_ages(moved, near, 0.6) == [math.inf, 0, 0]  # the kettle is "new", but on another topic
    assert recency_prior(math.inf, 30, 0.1) == pytest.approx(0.9)  # still never more than the prior's share
    same = [moved[0], cand(2, "memory/2026-05-14.md", "the team standup is at 10:15 daily", "2026-05-14")]
    assert topic_ages(same, near[:2, :2], 0.6) == [3, 0]  # restated, not said to change: aged by days


def test_for_chinese_text_the_topic_is_the_words_two_lines_share_not_their_cosine():
    """MiniLM gives unrelated Chinese lines cosine 0.6–0.9: for a pair where either text is CJK,
    "same topic" is token Jaccard ≥ same_topic / 2 (CJK as bigrams), as without vectors; a pair of
    Latin-script lines keeps its cosine, whatever the Jaccard."""
    import numpy as np

    from kit.memory.index import ChunkRow
    from kit.memory.search import Candidate, same_topic_pairs, topic_ages

    def cand(i: int, day: str, text: str) -> Candidate:
        return Candidate(ChunkRow(i, f"memory/{day}.md", 1, 1, "", text, day), 0.5, 0.0, False, 0.5)

    kept = [cand(1, "2026-01-25", "钢琴课改到周日上午十点了。"),
            cand(2, "2026-06-10", "晚上早早睡了。"),  # unrelated, cosine 0.88 to the piano line
            cand(3, "2026-03-01", "钢琴课改到周六上午十点了。"),  # the same fact restated
            cand(4, "2026-01-01", "the team standup is at 9:30 daily"),
            cand(5, "2026-03-01", "standup moved to ten"),  # Jaccard 0.1, cosine 0.9: same topic
            cand(6, "2026-04-01", "the team standup is at 9:30 daily as ever")]  # Jaccard 0.78, cosine 0.1
    sim = np.full((6, 6), 0.1)
    for a, b in ((0, 1), (0, 2), (1, 2), (3, 4), (0, 3), (1, 4)):
        sim[a, b] = sim[b, a] = 0.88
    np.fill_diagonal(sim, 1.0)
    pairs = same_topic_pairs(kept, sim, 0.6)
    assert [[int(x) for x in row] for row in pairs] == [
        [1, 0, 1, 0, 0, 0],
        [0, 1, 0, 0, 0, 0],
        [1, 0, 1, 0, 0, 0],
        [0, 0, 0, 1, 1, 0],
        [0, 0, 0, 1, 1, 0],
        [0, 0, 0, 0, 0, 1]]
    # (the later English line says it moved: the 9:30 line is superseded outright, `math.inf`)
    assert topic_ages(kept, sim, 0.6) == [35, 0, 0, math.inf, 0, 0]
    latin = [kept[3], kept[4], kept[5]]
    assert (same_topic_pairs(latin, sim[3:, 3:], 0.6) == (sim[3:, 3:] >= 0.6)).all()  # the cosine alone


def test_an_unrelated_later_chinese_line_does_not_age_the_answer(make):
    """The real model: "晚上早早睡了。" ("went to bed early") scores cosine 0.88 to the question and
    0.6+ to the answer; it must not mark the answer superseded (bench/recall's lina persona)."""
    mem = make(dict([note("2026-01-25", "钢琴课改到周日上午十点了。"),
                     note("2025-06-26", "钢琴老师姓周，每周六下午三点上课。"),
                     *(note(f"2026-{m:02d}-{d:02d}", "晚上早早睡了。", "晚上画了会儿插画。")
                       for m in (2, 3, 4, 5, 6) for d in (3, 10))]))
    hits = search(mem, "钢琴课现在是什么时候上？").results
    assert hits[0].path == "memory/2026-01-25.md"
    assert [h.path for h in hits].index("memory/2026-01-25.md") < [h.path for h in hits].index("memory/2025-06-26.md")


def test_the_second_hop_follows_names_not_weekdays_or_months():
    from kit.memory.search import bridge_terms

    text = "- Met Ben from Finance on Thursday in March about the Lupa booking."
    assert bridge_terms(text, "who did I meet about the booking") == ["met", "ben", "finance", "lupa"]


def test_the_second_hop_skips_a_name_that_many_notes_hold(make):
    from kit.memory.search import Candidate, second_hop

    files = dict(note(f"2026-03-{d:02d}", f"Alice watered the plants, round {d}") for d in range(1, 26))
    files.update([note("2026-04-01", "Tomasz fixed the bike brakes"), note("2026-04-02", "Alice and Tomasz planned the trip")])
    mem = make(files)
    idx = mem.index()
    best = next(r for r in idx.chunk_rows(range(1, 200)).values() if "planned the trip" in r.text)
    found = second_hop(idx, Candidate(best, None, 1.0, True, 1.0), "who planned the trip", 40, None,
                       (0.0, 1.0), 0.8, {best.id})
    # "alice" is in 26 of 27 notes (> 20 and > 5 %): only the rare name bridges
    assert [c.row.text for c in found] == ["- Tomasz fixed the bike brakes"]


# --------------------------------------------------------------------------- keep rules relative to the query's best


LOCKER = "My locker code at school is 3381."
SIDE = "The bakery near work is open on Sundays, open early."


def _locker_workspace(make):
    files = dict(note(f"2026-0{m}-02", SIDE) for m in (3, 4, 5))
    files.update({f"memory/topics/filler-{i}.md": helpers_memory.filler_note(i) for i in range(12)})  # for BM25
    files.update(dict([note("2025-06-20", LOCKER), note("2026-01-05", "Booked the dentist for a cleaning."),
                       note("2026-02-11", "Took the bins out, recycling week.")]))
    return make(files)


def test_the_querys_best_semantic_match_is_kept_beside_keyword_side_hits(make):
    """A paraphrase shares no word with its answer: the answer is vector-only, and its relevance (0.7
    × cosine 0.354 = 0.248) is under min_score × the best relevance (0.7 × 0.367, a keyword side
    hit's). It is the query's best semantic match, so it is kept, and MMR puts it above the other
    copies of the side hit."""
    mem = _locker_workspace(make)
    hits = search(mem, "Which digits open my storage cubby at work?", limit=10).results
    assert [h.snippet for h in hits] == [f"- {SIDE}", f"- {LOCKER}", f"- {SIDE}", f"- {SIDE}"]
    answer, side = hits[1], hits[0]
    assert answer.text_score == 0.0 and answer.vector_score > max(h.vector_score for h in hits if h is not answer)
    assert 0.3 < answer.vector_score < 0.4 and answer.relevance < SearchSettings().min_score * side.relevance
    # the same question in the notes' own words finds it by keyword too, first
    assert search(mem, "what is my locker code", limit=3).results[0].snippet == f"- {LOCKER}"


def test_an_unrelated_query_keeps_no_vector_only_junk(make):
    """Nothing is about lattice QCD: the best cosine is under min_vector_score (0.3), so the vector
    side keeps nothing, although every candidate is at 100 % of a tiny best. Without that floor the
    relative rules keep the least unrelated notes."""
    mem = _locker_workspace(make)
    query = "lattice quantum chromodynamics simulations"
    assert search(mem, query, limit=10).results == ()
    junk = search(mem, query, SearchSettings(min_vector_score=0.0), limit=10).results
    assert len(junk) >= 3 and all(h.vector_score < 0.3 for h in junk)
