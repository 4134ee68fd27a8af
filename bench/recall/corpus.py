"""The deterministic generator: a year of daily notes per persona, and its questions with the exact
lines that answer them.

    build(persona, root, shift_years=0) -> Built

Days without a fact get a note on about 70 % of days; every note holds 2–6 ordinary lines drawn
from the persona's templates (seeded by the persona's name, so every run writes the same files),
with the day's facts put among them at seeded places. Some days are split into `## topic`
sections, some open with a short paragraph. Nothing here knows how Kit searches.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from personas import PARAPHRASES, Fact, Persona, Question

TODAY = date(2026, 6, 15)  # the day every question is asked (KIT_NOW)
BASE_START = date(2025, 6, 15)  # the base corpus covers BASE_START .. TODAY - 1
NOTE_RATE = 0.7
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
ZH_NUM = ("", "一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二")
SEASONS = {"spring": (3, 4, 5), "summer": (6, 7, 8), "autumn": (9, 10, 11), "winter": (12, 1, 2)}
ZH_SEASON = {"spring": "春天", "summer": "夏天", "autumn": "秋天", "winter": "冬天"}
ZH_COUNT = {1: "一", 2: "两", 3: "三", 4: "四", 5: "五", 6: "六"}
EN_COUNT = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


@dataclass(frozen=True)
class Line:
    path: str
    line: int  # 1-based


@dataclass(frozen=True)
class AskedQuestion:
    persona: str
    kind: str
    text: str
    needs: tuple[tuple[Line, ...], ...]
    stale: tuple[Line, ...]


@dataclass(frozen=True)
class Built:
    persona: str
    root: Path
    questions: tuple[AskedQuestion, ...]
    notes: int
    lines: int


def shifted(day: date, years: int) -> date:
    return day.replace(year=day.year - years)


def _rng(*parts: object) -> random.Random:
    return random.Random(zlib.crc32("/".join(map(str, parts)).encode()))


def _fill(template: str, fillers: dict[str, tuple[str, ...]], rng: random.Random) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: rng.choice(fillers[m.group(1)]), template)


def _day_lines(persona: Persona, day: date, facts: list[Fact], rng: random.Random) -> list[tuple[str | None, str, str | None]]:
    """(topic, text, fact id) for one day: the facts among 2–6 ordinary lines."""
    ordinary = [_fill(rng.choice(persona.noise), persona.fillers, rng) for _ in range(rng.randint(2, 6))]
    ordinary = list(dict.fromkeys(ordinary))  # a person does not write the same line twice in a day
    split = bool(persona.topics) and rng.random() < 0.3
    entries: list[tuple[str | None, str, str | None]] = [
        ((rng.choice((None, *persona.topics)) if split else None), text, None) for text in ordinary
    ]
    for fact in facts:
        entries.insert(rng.randint(0, len(entries)), (fact.topic if split or fact.topic else None, fact.text, fact.id))
    return entries


def _render(day: date, entries: list[tuple[str | None, str, str | None]], rng: random.Random) -> tuple[list[str], dict[str, int]]:
    lines = [f"# {day.isoformat()}", ""]
    where: dict[str, int] = {}
    preamble = [e for e in entries if e[0] is None]
    if preamble and preamble[0][2] is None and rng.random() < 0.15:  # a short paragraph first
        lines += [preamble[0][1], ""]
        preamble = preamble[1:]
    for _, text, fid in preamble:
        if fid:
            where[fid] = len(lines) + 1
        lines.append(f"- {text}")
    topics = list(dict.fromkeys(e[0] for e in entries if e[0] is not None))
    for topic in topics:
        if lines[-1] != "":
            lines.append("")
        lines += [f"## {topic}", ""]
        for t, text, fid in entries:
            if t == topic:
                if fid:
                    where[fid] = len(lines) + 1
                lines.append(f"- {text}")
    return lines, where


def build(persona: Persona, root: Path, shift_years: int = 0) -> Built:
    """Write `persona`'s year into a fresh workspace at `root` (created with `kit init`)."""
    from kit.init import init_workspace

    init_workspace(root)
    if persona.memory_md is not None:
        (root / "MEMORY.md").write_text(persona.memory_md, encoding="utf-8")
    (root / "memory").mkdir(exist_ok=True)
    by_day: dict[date, list[Fact]] = {}
    for fact in persona.facts:
        by_day.setdefault(date.fromisoformat(fact.day), []).append(fact)
    located: dict[str, Line] = {}
    notes = total = 0
    day = BASE_START
    while day < TODAY:
        rng = _rng(persona.name, day.isoformat())  # per day: one edit to the story moves nothing else
        facts = by_day.get(day, [])
        if facts or rng.random() < NOTE_RATE:
            real = shifted(day, shift_years)
            lines, where = _render(real, _day_lines(persona, day, facts, rng), rng)
            rel = f"memory/{real.isoformat()}.md"
            (root / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
            located.update({fid: Line(rel, n) for fid, n in where.items()})
            notes += 1
            total += sum(1 for ln in lines if ln.startswith("- "))
        day += timedelta(days=1)
    missing = {f.id for f in persona.facts} - set(located)
    assert not missing, f"facts not written: {missing}"
    fact_days = {f.id: shifted(date.fromisoformat(f.day), shift_years) for f in persona.facts}
    asked = tuple(_ask(persona.name, q, located, fact_days) for q in persona.questions)
    facts = {f.id: f.text for f in persona.facts}
    paraphrased = []
    for q in persona.questions:
        if q.kind == "single":
            assert q.text in PARAPHRASES, f"no paraphrase for {q.text!r}"
            text, names = PARAPHRASES[q.text]
            check_paraphrase(text, [facts[f] for group in q.needs for f in group], names)
            paraphrased.append(AskedQuestion(persona.name, "paraphrase", text,
                                             tuple(tuple(located[f] for f in group) for group in q.needs), ()))
    return Built(persona.name, root, asked + tuple(paraphrased), notes, total)


_STOP = frozenset("""a an the and or but of to in on at for with by from into about as is are was were be been am i
me my we us our you your he him his she her it its they them their this that these those what which who whom whose
when where why how do does did have has had can could will would should shall may might must not no so than then
there here s t d ll re ve m just also any some get""".split())


def _stems(text: str) -> set[str]:
    """FTS5's porter tokens of `text` (as Kit's index stems them), stop words aside."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, row)")
    words = [w for w in re.findall(r"[^\W_]+", text.lower()) if w not in _STOP and not re.search(r"[\u3400-\u9fff]", w)]
    conn.execute("INSERT INTO t(x) VALUES (?)", (" ".join(words),))
    return {r[0] for r in conn.execute("SELECT term FROM v")}


def _bigrams(text: str, names: tuple[str, ...]) -> set[str]:
    for name in names:
        text = text.replace(name, " ")
    return {run[i : i + 2] for run in re.findall(r"[\u3400-\u9fff]+", text) for i in range(len(run) - 1)}


def check_paraphrase(question: str, evidence: list[str], names: tuple[str, ...]) -> None:
    """The PARAPHRASES rule: no word stem (stop words aside) and no CJK bigram shared with the
    evidence, except names (capitalised words, and `names`)."""
    for line in evidence:
        capitalised = {w.lower() for w in re.findall(r"\b[A-Z][\w'’-]*", line)}
        shared = (_stems(question) & _stems(line)) - _stems(" ".join(capitalised)) - {""}
        shared |= _bigrams(question, names) & _bigrams(line, names)
        assert not shared, f"paraphrase {question!r} shares {sorted(shared)} with {line!r}"


def _ask(name: str, q: Question, located: dict[str, Line], days: dict[str, date]) -> AskedQuestion:
    text = q.text
    if q.when is not None:
        style, fid = q.when
        text = text.replace("{when}", describe(style, days[fid], TODAY))
    needs = tuple(tuple(located[f] for f in group) for group in q.needs)
    return AskedQuestion(name, q.kind, text, needs, tuple(located[f] for f in q.stale))


# --------------------------------------------------------------------------- how a person says when


def _season_of(day: date) -> tuple[str, int]:
    """(season, the year it began in): December belongs to the winter of its year."""
    for name, months in SEASONS.items():
        if day.month in months:
            return name, day.year - (1 if name == "winter" and day.month < 12 else 0)
    raise AssertionError(day)


def describe(style: str, day: date, today: date) -> str:
    """The words someone asking on `today` would use for `day` (English or Chinese)."""
    months_back = (today.year - day.year) * 12 + today.month - day.month
    years_back = today.year - day.year
    if style in ("month", "month_zh"):
        zh = style == "month_zh"
        if months_back == 1:
            return "上个月" if zh else "last month"
        if zh:
            prefix = {0: "", 1: "去年", 2: "前年"}.get(years_back, f"{day.year}年")
            return f"{prefix}{ZH_NUM[day.month]}月" + ("份" if not prefix else "")
        name = MONTHS[day.month - 1]
        return {0: f"in {name}", 1: f"in {name} last year"}.get(years_back, f"in {name} {day.year}")
    if style in ("season", "season_zh"):
        season, began = _season_of(day)
        if style == "season_zh":  # Chinese names the year: 去年夏天, 前年秋天
            year_word = {0: "今年", 1: "去年", 2: "前年"}.get(today.year - began, f"{began}年")
            return f"{year_word}{ZH_SEASON[season]}"
        if (season, began) == _season_of(today):
            return f"this {season}"
        now_season, now_began = _season_of(today)
        if season == now_season:
            latest = now_began - 1
        else:
            latest = today.year if date(today.year, SEASONS[season][0], 1) <= today else today.year - 1
        back = latest - began + 1  # 1: the last one that is over, 2: the one before it
        return {1: f"last {season}", 2: f"the {season} before last"}.get(back, f"in the {season} of {began}")
    if style in ("ago", "ago_zh"):
        days = (today - day).days
        zh = style == "ago_zh"
        if days <= 45:
            weeks = round(days / 7)
            if weeks <= 1:
                return f"{ZH_COUNT.get(days, days)}天前" if zh else f"{EN_COUNT.get(days, days)} days ago"
            return f"{ZH_COUNT[weeks]}个星期前" if zh else f"{EN_COUNT[weeks]} weeks ago"
        part = "early" if day.day <= 10 else ("mid" if day.day <= 20 else "late")
        if zh:
            prefix = {0: "", 1: "去年", 2: "前年"}.get(years_back, f"{day.year}年")
            return f"{prefix}{ZH_NUM[day.month]}月{dict(early='初', mid='中', late='底')[part]}"
        tail = {0: "", 1: " last year"}.get(years_back, f" {day.year}")
        return f"in {part} {MONTHS[day.month - 1]}{tail}"
    raise ValueError(style)
