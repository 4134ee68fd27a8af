"""Time words in queries (past-leaning) and in notes (nearest), English and Chinese, as exact periods."""

from __future__ import annotations

from datetime import date

import pytest

from kit.memory.dates import Anchor, find_times, query_time

TODAY = date(2026, 6, 15)  # a Monday in summer


def period(q: str) -> tuple[str, str] | None:
    p = query_time(q, TODAY).period
    return None if p is None else (p.start.isoformat(), p.end.isoformat())


@pytest.mark.parametrize("query, expected", [
    ("which restaurant did we try in March?", ("2026-03-01", "2026-03-31")),
    ("what happened in September?", ("2025-09-01", "2025-09-30")),  # a question looks back
    ("in March last year", ("2025-03-01", "2025-03-31")),
    ("March 2024", ("2024-03-01", "2024-03-31")),
    ("last March", ("2026-03-01", "2026-03-31")),
    ("in early June last year", ("2025-06-01", "2025-06-10")),
    ("mid-March", ("2026-03-11", "2026-03-20")),
    ("late May last year", ("2025-05-21", "2025-05-31")),
    ("what was I reading last summer", ("2025-06-01", "2025-08-31")),  # this summer has just begun
    ("the summer before last", ("2024-06-01", "2024-08-31")),
    ("two summers ago", ("2024-06-01", "2024-08-31")),
    ("last autumn", ("2025-09-01", "2025-11-30")),
    ("last winter", ("2025-12-01", "2026-02-28")),
    ("in the summer of 2024", ("2024-06-01", "2024-08-31")),
    ("last month", ("2026-05-01", "2026-05-31")),
    ("last week", ("2026-06-08", "2026-06-14")),
    ("the week before last", ("2026-06-01", "2026-06-07")),
    ("last weekend", ("2026-06-13", "2026-06-14")),
    ("two weeks ago", ("2026-05-29", "2026-06-04")),
    ("a couple of weeks ago", ("2026-05-28", "2026-06-05")),
    ("three days ago", ("2026-06-11", "2026-06-13")),
    ("yesterday", ("2026-06-14", "2026-06-14")),
    ("last Friday", ("2026-06-12", "2026-06-12")),
    ("in the last three weeks", ("2026-05-25", "2026-06-15")),
    ("on 14 November", ("2025-11-14", "2025-11-14")),
    ("November 14th, 2025", ("2025-11-14", "2025-11-14")),
    ("on 2026-03-01", ("2026-03-01", "2026-03-01")),
    ("in 2025", ("2025-01-01", "2025-12-31")),
    ("anything since March?", ("2026-03-01", "9999-12-31")),
    ("before 2026-03-01", ("0001-01-01", "2026-02-28")),
    ("上个月我看了什么电影？", ("2026-05-01", "2026-05-31")),
    ("去年五月", ("2025-05-01", "2025-05-31")),
    ("三月份钢琴课学了什么", ("2026-03-01", "2026-03-31")),
    ("去年夏天我去哪里旅行了", ("2025-06-01", "2025-08-31")),
    ("前年夏天", ("2024-06-01", "2024-08-31")),
    ("两个星期前和谁一起吃的饭", ("2026-05-29", "2026-06-04")),
    ("去年六月初", ("2025-06-01", "2025-06-10")),
    ("上周三去了哪", ("2026-06-10", "2026-06-10")),
    ("十二月二十三日", ("2025-12-23", "2025-12-23")),
    ("昨天", ("2026-06-14", "2026-06-14")),
])
def test_time_words_in_a_query_name_a_period(query, expected):
    assert period(query) == expected


@pytest.mark.parametrize("query", [
    "what's the wifi password at the cabin?",
    "Have I been here before?",  # no event after "before"
    "What did Sam say before leaving?",  # lower-case words after "before": not taken as an event
    "may I see the notes",  # "may" is a verb
    "I march on",
    "我以前住在上海",  # 以前 here means "used to"
    "Which band did we see at the Columbiahalle",
    # a time of day is no day: "before 11" was an event called "11", so the lunch line that answers
    # scored 0.20 (a new-user pass), and "before 11:00" left ":00" in the query's words
    "lunch orders before 11",
    "lunch orders before 11:00",
    "deploys before 5pm",
    "is the office open after 7.30 p.m.",
    "quiet hours until 9 o'clock",
])
def test_words_that_only_look_like_time_name_none(query):
    when = query_time(query, TODAY)
    assert when.period is None and when.anchor is None
    assert when.rest == query


def test_an_event_names_a_time_relative_to_its_day():
    when = query_time("Which concert did we go to two weeks before the wedding?", TODAY)
    assert when.anchor == Anchor("the wedding", -17, -11)
    assert when.rest == "Which concert did we go to ?"
    assert when.anchor.around(date(2025, 9, 20)).start == date(2025, 9, 3)
    assert query_time("the week before the Leeds Half", TODAY).anchor == Anchor("the Leeds Half", -7, -1)
    assert query_time("What was the plan before we switched to Hokkaido?", TODAY).anchor == Anchor(
        "we switched to Hokkaido", None, -1)
    assert query_time("搬家前两周我在赶哪个项目？", TODAY).anchor == Anchor("搬家", -17, -11)
    assert query_time("收到杭州的 offer 之前，我对工作是怎么打算的？", TODAY).anchor == Anchor("收到杭州的 offer", None, -1)


def test_recency_words_ask_for_the_latest():
    for q in ("Which gym am I a member of now?", "where did we end up going", "current address",
              "latest standup time", "钢琴课现在是什么时候上？", "最近喝的是什么咖啡豆？"):
        assert query_time(q, TODAY).recent, q
    for q in ("What time is the standup?", "who knows the wifi password"):
        assert not query_time(q, TODAY).recent, q


def test_a_note_resolves_its_own_relative_dates_against_its_day():
    found = find_times("Yesterday Sam fixed the bike; last Friday we met; dentist on 4 February; "
                       "the day before yesterday it rained", date(2026, 1, 20))
    assert [(t.text, t.period.start.isoformat()) for t in found] == [
        ("Yesterday", "2026-01-19"), ("last Friday", "2026-01-16"), ("on 4 February", "2026-02-04"),
        ("the day before yesterday", "2026-01-18")]
    chinese = find_times("昨天加班到十一点，上周五和阿杰吃饭，10月3号是妈妈生日", date(2025, 9, 20))
    assert [(t.text, t.period.start.isoformat()) for t in chinese] == [
        ("昨天", "2025-09-19"), ("上周五", "2025-09-12"), ("10月3号", "2025-10-03")]
    assert find_times("Standup ran long again.", date(2026, 1, 20)) == ()


# ---------------------------------------------------------------- the word gates (speed, same results)

def test_every_english_pattern_declares_words_each_of_its_matches_holds():
    """The gate skips a pattern on text without any of its `needs`; that is only safe when every
    match holds one of them. The words each match must hold are read off the pattern's parse tree
    (the threat scanner's reading); each must contain a declared word."""
    import re

    from kit.memory import dates
    from kit.threats import _words

    for pattern, handler in dates._EN:
        derived, _ = _words(pattern.pattern, re.IGNORECASE)
        assert derived, handler.__name__
        uncovered = [w for w in derived if not any(need in w for need in handler.needs)]
        assert uncovered == [], f"{handler.__name__}: {uncovered}"


def _random_texts(seed: int, count: int) -> list[str]:
    import random

    rng = random.Random(seed)
    words = ("the a in on during over from since until till prior to before after ago last this next past early "
             "mid mid- late start of beginning middle end day days week weeks weekend month months year years two "
             "three 2 3 12 1st 21st 2024 1999 2025-03-04 January Feb. march Apr may June jul. Aug sept Sep oct Nov "
             "December spring summers autumn fall winter monday Tuesday friday Sunday yesterday today tonight "
             "tomorrow morning evening about around some couple few several one wedding trip I we my Alice , . ; ? "
             "and but ſince LAST Ago TOMORROW İ").split()
    chinese = [*"去年今明前后三月五日号上这本下个星期礼拜周末一二十几半天之以春夏秋冬季大昨晚的婚礼，。", "2024年", "12月"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 12))) for _ in range(count)]
    texts += ["".join(rng.choice(chinese + words[:20]) for _ in range(rng.randint(2, 14))) for _ in range(count)]
    return texts


def test_the_word_gates_change_no_result(monkeypatch):
    """find_times and query_time give what trying every pattern gives, on random English and Chinese
    text full of time words (the empty word is in every text: no gate closes)."""
    from kit.memory import dates

    texts = _random_texts(5, 3000)
    gated = [(find_times(t, TODAY), query_time(t, TODAY)) for t in texts]
    monkeypatch.setattr(dates, "_GATE_WORDS", ("",))
    for _, handler in (*dates._EN, *dates._ZH):
        monkeypatch.setattr(handler, "needs", ("",))
    every = [(find_times(t, TODAY), query_time(t, TODAY)) for t in texts]
    assert sum(bool(found) for found, _ in every) > 1000  # the texts do name times
    assert gated == every
