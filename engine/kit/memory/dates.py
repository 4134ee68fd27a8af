"""Time words in queries and notes, in English and Chinese, resolved to periods of days.

    query_time("Which concert did we go to two weeks before the wedding?", today)
        → QueryTime(period=None, anchor=Anchor("the wedding", -17, -11), recent=False,
                    rest="Which concert did we go to")
    find_times("Yesterday Sam fixed the bike", day=date(2026, 6, 14))
        → (TimeMention("Yesterday", Period(2026-06-13, 2026-06-13)),)

Periods, not points: "in March" is 1–31 March, "last summer" June to August, "two weeks ago" the
week around that day. A query prefers the past (questions to one's notes are about what happened:
"in September" asked in June is last September); a note prefers the nearest occurrence ("MOT due
on 12 March" written in January is this March). Holidays and bare weekday names are left alone:
"Christmas" is as often a plan as a period, "Friday" as often next as last.

Why not a library: dateparser (the one that fits best on PyPI) answers with points ("in March" →
15 March), reads "we" as Wednesday, knows no seasons, takes 0.7 s to import and 10–40 ms per
query; a search takes a few ms.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from kit.lazyre import fold_ascii, lazy

MONTHS = {name: i for i, name in enumerate(calendar.month_name) if name} | {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10,
    "nov": 11, "dec": 12,
}
MONTHS = {k.lower(): v for k, v in MONTHS.items()}
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month (northern hemisphere)
EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
              "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
              "several": 4, "couple of": 2, "few": 3}
ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
ZH_SEASONS = {"春": 3, "夏": 6, "秋": 9, "冬": 12}
ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
OPEN_START, OPEN_END = date.min, date.max


@dataclass(frozen=True)
class Period:
    """Days from `start` to `end`, both included (date.min / date.max for an open side)."""

    start: date
    end: date

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and self.start <= day <= self.end

    def to_json(self) -> dict[str, str | None]:
        return {"start": None if self.start == OPEN_START else self.start.isoformat(),
                "end": None if self.end == OPEN_END else self.end.isoformat()}


@dataclass(frozen=True)
class Anchor:
    """A time named by an event: `first`..`last` days from the day `event` happened (None: open)."""

    event: str
    first: int | None
    last: int | None

    def around(self, day: date) -> Period:
        start = OPEN_START if self.first is None else day + timedelta(days=self.first)
        end = OPEN_END if self.last is None else day + timedelta(days=self.last)
        return Period(start, end)


@dataclass(frozen=True)
class TimeMention:
    text: str  # the words as written
    start: int  # character offsets in the text
    end: int
    period: Period | None  # None while an anchor's event date is unknown
    anchor: Anchor | None = None


@dataclass(frozen=True)
class QueryTime:
    """What a query says about time: a period or an event to date, whether it wants the latest,
    and the query without its time words (what the text and vector sides should look for)."""

    period: Period | None
    anchor: Anchor | None
    recent: bool
    rest: str
    mentions: tuple[TimeMention, ...] = ()


# --------------------------------------------------------------------------- calendar helpers


def month_period(year: int, month: int) -> Period:
    return Period(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def season_period(first_month: int, year: int) -> Period:
    """The three months from `first_month` of `year` (winter runs into the next year)."""
    end_year, end_month = (year + 1, first_month - 10) if first_month + 2 > 12 else (year, first_month + 2)
    return Period(date(year, first_month, 1), month_period(end_year, end_month).end)


def season_of(day: date) -> tuple[int, int]:
    """(first month, year it began) of the season `day` is in."""
    first = {12: 12, 1: 12, 2: 12}.get(day.month, (day.month - 3) // 3 * 3 + 3)
    return first, day.year - 1 if first == 12 and day.month < 12 else day.year


def week_period(day: date) -> Period:
    monday = day - timedelta(days=day.weekday())
    return Period(monday, monday + timedelta(days=6))


def shift_months(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _year_for(month: int, day_of_month: int, ref: date, prefer: str) -> int:
    """The year of a day and month without one: the latest not after `ref` (past), or the nearest."""
    if prefer == "past":
        candidate = _safe_date(ref.year, month, min(day_of_month, 28))
        return ref.year if candidate is None or candidate <= ref else ref.year - 1
    options = [(abs((d - ref).days), d.year) for y in (ref.year - 1, ref.year, ref.year + 1)
               if (d := _safe_date(y, month, min(day_of_month, 28))) is not None]
    return min(options)[1]


def _month_year(month: int, ref: date, prefer: str) -> int:
    if prefer == "past":
        return ref.year if month <= ref.month else ref.year - 1
    return _year_for(month, 15, ref, prefer)


def _last_season(first_month: int, ref: date, back: int = 1) -> Period:
    """The `back`-th season of that name that is over (1 = last summer, 2 = the summer before last)."""
    current_first, current_year = season_of(ref)
    if first_month == current_first:
        latest = current_year - 1
    else:
        latest = ref.year if date(ref.year, first_month, 1) <= ref else ref.year - 1
        if first_month == 12 and ref.month < 12:
            latest = ref.year - 1
    return season_period(first_month, latest - back + 1)


def _this_season(first_month: int, ref: date) -> Period:
    current_first, current_year = season_of(ref)
    if first_month == current_first:
        return season_period(first_month, current_year)
    return season_period(first_month, ref.year)


def _around(day: date, slack: int) -> Period:
    return Period(day - timedelta(days=slack), day + timedelta(days=slack))


def _ago(n: int, unit: str, ref: date, fuzzy: bool) -> Period:
    """"N units ago" as a period around that day: the wider the unit, the wider the window."""
    if unit == "day":
        return _around(ref - timedelta(days=n), 0 if n <= 2 and not fuzzy else 1)
    if unit == "week":
        return _around(ref - timedelta(days=7 * n), 4 if fuzzy else 3)
    if unit == "month":
        return _around(ref - timedelta(days=30 * n), 15)
    return _around(ref - timedelta(days=365 * n), 30)


def _part_of_month(part: str, period: Period) -> Period:
    start, end = period.start, period.end
    if part in ("early", "the start of", "the beginning of", "beginning of", "start of", "初", "上旬"):
        return Period(start, start.replace(day=10))
    if part in ("mid", "mid-", "the middle of", "middle of", "中", "中旬"):
        return Period(start.replace(day=11), start.replace(day=20))
    return Period(start.replace(day=21), end)  # late, the end of, 底, 末, 下旬


# --------------------------------------------------------------------------- English patterns

_NUM = r"(?P<num>\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|couple of|a few|few|several)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_MONTH = r"(?P<month>january|february|march|april|may|june|july|august|september|october|november|december|(?:jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?)"
_SEASON = r"(?P<season>spring|summer|autumn|fall|winter)"
_PART = r"(?P<part>early|mid-?|late|the start of|the beginning of|the middle of|the end of|beginning of|start of|end of)"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_DIRECT = r"(?P<dir>last|this|next|the)"
_EVENT_END = r"(?=[?!.,;:]|\s+(?:and|but|or|so|when|while|because)\s|$)"
# what every match of a month, season or year holds (lower case): see _en's `needs`
_MONTH_WORDS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_SEASON_WORDS = ("spring", "summer", "autumn", "fall", "winter")
_YEAR_WORDS = ("19", "20")
_ZH_DATE_CHARS = tuple("年月日天周星期礼拜昨今明前后春夏秋冬")  # every Chinese pattern holds one


def _num(text: str) -> tuple[int, bool]:
    """(value, fuzzy) of a number word: "a few" is about 3."""
    text = text.lower()
    if text.isdigit():
        return int(text), False
    return EN_NUMBERS[text], text in ("a couple of", "couple of", "a few", "few", "several")


Handler = Callable[[re.Match, date, str], "Period | Anchor | None"]


def _en(pattern: str, needs: tuple[str, ...]) -> Callable[[Handler], Handler]:
    """Mark a handler with its English pattern (whole words, any case) and the words (lower case)
    one of which every match holds; the tables are built below."""
    def mark(fn: Handler) -> Handler:
        # compiled at first use: most text has no date word and never needs them
        fn.pattern = lazy(r"(?<![\w-])" + pattern + r"(?![\w-])", re.IGNORECASE)  # type: ignore[attr-defined]
        # a pattern tried on text without any of these cannot match; trying it (its leading
        # look-behind at every position) cost 3–7 µs a pattern on a one-line note, a search ~1 ms
        fn.needs = needs  # type: ignore[attr-defined]
        fn.language = "en"  # type: ignore[attr-defined]
        return fn
    return mark


def _zh(pattern: str) -> Callable[[Handler], Handler]:
    def mark(fn: Handler) -> Handler:
        fn.pattern = lazy(pattern)  # type: ignore[attr-defined]
        fn.needs = _ZH_DATE_CHARS  # type: ignore[attr-defined]
        fn.language = "zh"  # type: ignore[attr-defined]
        return fn
    return mark


# anchors first: "two weeks before the wedding" holds a unit that "two weeks ago" would also want
@_en(r"(?P<off>(?:(?:about|around|roughly|some)\s+)?" + _NUM + r"\s+" + _UNIT + r"|the\s+(?P<one>day|week|weekend|month|night)|right|just|shortly|soon|long|straight)"
     r"\s+(?P<dir>before|after)\s+(?P<event>(?!(?:the\s+)?(?:last|next)\b)[^?!.,;:]+?)" + _EVENT_END, ("before", "after"))
def _en_anchor_offset(m: re.Match, ref: date, prefer: str) -> Anchor | Period | None:
    sign = -1 if m["dir"].lower() == "before" else 1
    event = m["event"].strip()
    if m["num"]:
        n, fuzzy = _num(m["num"])
        days = n * UNIT_DAYS[m["unit"].lower()]
        slack = max(1, min(days // 4, 10)) + (2 if fuzzy else 0)
        first, last = sorted((sign * (days - slack), sign * (days + slack)))
    elif m["one"]:
        span = {"day": 1, "night": 1, "weekend": 3, "week": 7, "month": 31}[m["one"].lower()]
        first, last = sorted((sign * span, sign))
    else:  # right / just / shortly / soon after: the following days; long before: more than a month
        first, last = ((-3650, -30) if m["off"].lower() == "long" else (-7, -1)) if sign < 0 else \
            ((30, 3650) if m["off"].lower() == "long" else (0, 7))
    return _event_or_period(event, Anchor(event, first, last), ref, prefer, sign)


@_en(r"(?P<dir>before|after|since|until|till|prior to)\s+(?P<event>(?:(?:the|my|our|his|her|their|we|i|you|he|she|they|it|last|this|next)\b|\d|(?-i:[A-Z]))[^?!.,;:]*?)" + _EVENT_END, ("before", "after", "since", "until", "till", "prior to"))
def _en_anchor_open(m: re.Match, ref: date, prefer: str) -> Anchor | Period | None:
    direction = m["dir"].lower()
    event = m["event"].strip()
    if event.lower() in ("last", "next", "this"):
        return None  # "the summer before last" is a season (below), not an event called "last"
    if direction in ("before", "until", "till", "prior to"):
        return _event_or_period(event, Anchor(event, None, -1), ref, prefer, -1)
    return _event_or_period(event, Anchor(event, 0 if direction == "since" else 1, None), ref, prefer, 1)


# a time of day, not an event: "before 11", "after 3pm", "until 17:30" ask about hours, not days
_CLOCK = re.compile(r"\d{1,2}(?:[:.h]\d{2})?\s*(?:[ap]\.?m\.?|o'?clock)?", re.I)


def _event_or_period(event: str, anchor: Anchor, ref: date, prefer: str, sign: int) -> Anchor | Period | None:
    """An event that is itself a time ("before March", "since last summer") gives an open period;
    a time of day ("before 11", "after 3pm") is no time a note is dated by: not a mention."""
    if _CLOCK.fullmatch(event):
        return None
    for text in (event, f"in {event}"):  # "since March" means since the start of March
        inner = [m for m in _scan(text, ref, prefer, _EN, anchors=False) if m.period is not None]
        if inner and inner[0].start == 0 and inner[0].end >= len(text.rstrip()) - 1:
            break
    else:
        inner = []
    if inner:
        p = inner[0].period
        assert p is not None
        if anchor.first is None:  # before/until P
            return Period(OPEN_START, p.start - timedelta(days=1))
        if anchor.last is None:  # after/since P
            return Period(p.start if anchor.first == 0 else p.end + timedelta(days=1), OPEN_END)
        base = p.start if sign < 0 else p.end
        return anchor.around(base)
    if len(re.findall(r"\w+", event)) == 0:
        return None
    return anchor


@_en(r"(?:in\s+|on\s+|during\s+|from\s+)?" + _YEAR + r"-(?P<m>\d{2})-(?P<d>\d{2})", _YEAR_WORDS)
def _en_iso(m: re.Match, ref: date, prefer: str) -> Period | None:
    day = _safe_date(int(m["year"]), int(m["m"]), int(m["d"]))
    return Period(day, day) if day else None


@_en(r"(?:on\s+)?(?:the\s+)?" + _DAY + r"(?:\s+of)?\s+" + _MONTH + r"(?:,?\s+" + _YEAR + r")?", _MONTH_WORDS)
def _en_day_month(m: re.Match, ref: date, prefer: str) -> Period | None:
    return _day_month(int(m["day"]), MONTHS[m["month"].lower().rstrip(".")], m["year"], ref, prefer)


@_en(r"(?:on\s+)?" + _MONTH + r"\s+" + _DAY + r"(?:,?\s+" + _YEAR + r")?", _MONTH_WORDS)
def _en_month_day(m: re.Match, ref: date, prefer: str) -> Period | None:
    return _day_month(int(m["day"]), MONTHS[m["month"].lower().rstrip(".")], m["year"], ref, prefer)


def _day_month(day: int, month: int, year: str | None, ref: date, prefer: str) -> Period | None:
    if not 1 <= day <= 31:
        return None
    found = _safe_date(int(year) if year else _year_for(month, day, ref, prefer), month, day)
    return Period(found, found) if found else None


@_en(r"(?:in\s+|during\s+|over\s+)?(?:the\s+)?" + _DIRECT + r"\s+" + _SEASON + r"(?P<before_last>\s+before\s+last)?", _SEASON_WORDS)
def _en_rel_season(m: re.Match, ref: date, prefer: str) -> Period | None:
    first = SEASONS[m["season"].lower()]
    direction = m["dir"].lower()
    if m["before_last"]:
        return _last_season(first, ref, 2)
    if direction == "last":
        return _last_season(first, ref)
    if direction == "next":
        this = _this_season(first, ref)
        return this if this.start > ref else season_period(first, this.start.year + 1)
    if direction == "this":
        return _this_season(first, ref)
    return None  # "the summer" alone: see the plain season pattern


@_en(r"(?P<n>two|three|2|3)\s+" + _SEASON + r"s\s+ago", _SEASON_WORDS)
def _en_seasons_ago(m: re.Match, ref: date, prefer: str) -> Period:
    return _last_season(SEASONS[m["season"].lower()], ref, {"two": 2, "three": 3}.get(m["n"].lower(), int(m["n"]) if m["n"].isdigit() else 2))


@_en(r"(?:in\s+|during\s+|over\s+)?(?:the\s+)?" + _SEASON + r"(?:\s+of)?\s+" + _YEAR, _SEASON_WORDS)
def _en_season_year(m: re.Match, ref: date, prefer: str) -> Period:
    return season_period(SEASONS[m["season"].lower()], int(m["year"]))


@_en(r"(?:in|during|over)\s+(?:the\s+)?" + _SEASON, _SEASON_WORDS)
def _en_season(m: re.Match, ref: date, prefer: str) -> Period:
    first = SEASONS[m["season"].lower()]
    this = _this_season(first, ref)
    if prefer == "past" and this.start > ref:
        return _last_season(first, ref)
    return this


@_en(r"(?:in\s+|during\s+)?" + _PART + r"\s*" + _MONTH + r"(?:\s+(?P<rel>last year|this year|next year)|,?\s+" + _YEAR + r")?", ("early", "mid", "late", "start of", "beginning of", "middle of", "end of"))
def _en_part_month(m: re.Match, ref: date, prefer: str) -> Period:
    whole = _month(MONTHS[m["month"].lower().rstrip(".")], m["rel"], m["year"], ref, prefer)
    return _part_of_month(m["part"].lower().rstrip("-") if m["part"].lower() != "mid-" else "mid", whole)


@_en(r"(?:in\s+|during\s+)?" + r"(?P<dir>last|this|next)\s+" + _MONTH, ("last", "this", "next"))
def _en_rel_month(m: re.Match, ref: date, prefer: str) -> Period:
    month = MONTHS[m["month"].lower().rstrip(".")]
    direction = m["dir"].lower()
    if direction == "this":
        return month_period(ref.year, month)
    if direction == "next":
        return month_period(ref.year if month > ref.month else ref.year + 1, month)
    return month_period(ref.year if month < ref.month else ref.year - 1, month)


@_en(r"(?:(?:in|during|since|from|by)\s+)" + _MONTH + r"(?:\s+(?P<rel>last year|this year|next year)|,?\s+" + _YEAR + r")?", _MONTH_WORDS)
def _en_in_month(m: re.Match, ref: date, prefer: str) -> Period:
    return _month(MONTHS[m["month"].lower().rstrip(".")], m["rel"], m["year"], ref, prefer)


@_en(r"(?P<mname>January|February|March|April|June|July|August|September|October|November|December)"
     r"(?:\s+(?P<rel>last year|this year|next year)|,?\s+" + _YEAR + r")", _MONTH_WORDS)
def _en_month_year(m: re.Match, ref: date, prefer: str) -> Period:
    return _month(MONTHS[m["mname"].lower()], m["rel"], m["year"], ref, prefer)


def _month(month: int, rel: str | None, year: str | None, ref: date, prefer: str) -> Period:
    if year:
        return month_period(int(year), month)
    if rel:
        return month_period(ref.year + {"last year": -1, "this year": 0, "next year": 1}[rel.lower()], month)
    return month_period(_month_year(month, ref, prefer), month)


@_en(r"(?:(?:in|during|since|from)\s+)" + _YEAR, _YEAR_WORDS)
def _en_year(m: re.Match, ref: date, prefer: str) -> Period:
    year = int(m["year"])
    return Period(date(year, 1, 1), date(year, 12, 31))


@_en(r"(?:in\s+|over\s+|during\s+)?the\s+(?P<last>last|past)\s+(?:(?P<num>\d{1,2}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few|several)\s+)?" + _UNIT, ("last", "past"))
def _en_past_n(m: re.Match, ref: date, prefer: str) -> Period:
    n = _num(m["num"])[0] if m["num"] else 1
    return Period(ref - timedelta(days=n * UNIT_DAYS[m["unit"].lower()]), ref)


@_en(r"this\s+past\s+(?P<unit>week|month|weekend)", ("this",))
def _en_this_past(m: re.Match, ref: date, prefer: str) -> Period:
    return Period(ref - timedelta(days={"week": 7, "month": 30, "weekend": 3}[m["unit"].lower()]), ref)


@_en(r"(?:about\s+|around\s+|roughly\s+|some\s+)?" + _NUM + r"\s+" + _UNIT + r"\s+ago", ("ago",))
def _en_ago(m: re.Match, ref: date, prefer: str) -> Period:
    n, fuzzy = _num(m["num"])
    return _ago(n, m["unit"].lower(), ref, fuzzy)


@_en(r"the\s+(?P<unit>week|month|year)\s+before\s+last", ("before",))
def _en_before_last(m: re.Match, ref: date, prefer: str) -> Period:
    return _relative_unit(m["unit"].lower(), -2, ref)


@_en(r"(?P<dir>last|this|next)\s+(?P<unit>week|month|year|weekend)", ("last", "this", "next"))
def _en_rel_unit(m: re.Match, ref: date, prefer: str) -> Period:
    return _relative_unit(m["unit"].lower(), {"last": -1, "this": 0, "next": 1}[m["dir"].lower()], ref)


def _relative_unit(unit: str, offset: int, ref: date) -> Period:
    if unit == "week":
        return week_period(ref + timedelta(days=7 * offset))
    if unit == "weekend":
        saturday = week_period(ref).start + timedelta(days=5 + 7 * offset)
        return Period(saturday, saturday + timedelta(days=1))
    if unit == "month":
        return month_period(*shift_months(ref, offset))
    return Period(date(ref.year + offset, 1, 1), date(ref.year + offset, 12, 31))


@_en(r"(?P<dir>last|next|this)\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)", ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
def _en_weekday(m: re.Match, ref: date, prefer: str) -> Period:
    target = WEEKDAYS[m["wd"].lower()]
    direction = m["dir"].lower()
    if direction == "last":
        back = (ref.weekday() - target) % 7 or 7
        day = ref - timedelta(days=back)
    elif direction == "next":
        day = ref + timedelta(days=(target - ref.weekday()) % 7 or 7)
    else:
        day = week_period(ref).start + timedelta(days=target)
    return Period(day, day)


@_en(r"(?P<w>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday|today|tonight|this\s+morning|this\s+evening|tomorrow)", ("yesterday", "today", "tonight", "tomorrow", "morning", "evening"))
def _en_day_word(m: re.Match, ref: date, prefer: str) -> Period:
    word = " ".join(m["w"].lower().split())
    offset = {"the day before yesterday": -2, "yesterday": -1, "tomorrow": 1, "the day after tomorrow": 2}.get(word, 0)
    day = ref + timedelta(days=offset)
    return Period(day, day)


# --------------------------------------------------------------------------- Chinese patterns

_ZN = r"(?P<n>\d{1,2}|十[一二]?|[一二两三四五六七八九]|几|半)"
_ZH_MONTH = r"(?P<month>\d{1,2}|十[一二]?|[一二三四五六七八九])月"
_ZH_YEAR = r"(?P<yw>去年|今年|前年|明年|(?P<y>(?:19|20)\d{2})年)"


def _zh_number(text: str) -> tuple[int, bool]:
    if text.isdigit():
        return int(text), False
    if text == "几":
        return 3, True
    if text.startswith("十"):
        return 10 + (ZH_DIGITS[text[1]] if len(text) > 1 else 0), False
    return ZH_DIGITS[text], False


def _zh_day_number(text: str) -> int:
    """1–31 written in digits or Chinese numerals (十五, 二十三)."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        return ZH_DIGITS[text]
    tens, _, ones = text.partition("十")
    return (ZH_DIGITS[tens] if tens else 1) * 10 + (ZH_DIGITS[ones] if ones else 0)


def _zh_year(m: re.Match, ref: date) -> int | None:
    if not m["yw"]:
        return None
    if m["y"]:
        return int(m["y"])
    return ref.year + {"去年": -1, "今年": 0, "前年": -2, "明年": 1}[m["yw"]]


@_zh(r"(?P<event>[^，。？！,.?!；;：:]*?[^\s，。？！,.?!；;：:前后])\s*(?:的)?(?P<dir>前|后|之前|之后|以前|以后)" + _ZN + r"(?:个)?(?P<unit>天|日|周|星期|礼拜|月|年)")
def _zh_anchor_offset(m: re.Match, ref: date, prefer: str) -> Anchor | Period | None:
    sign = -1 if "前" in m["dir"] else 1
    n, fuzzy = _zh_number(m["n"]) if m["n"] != "半" else (1, False)
    unit = {"天": 1, "日": 1, "周": 7, "星期": 7, "礼拜": 7, "月": 30, "年": 365}[m["unit"]]
    days = n * unit if m["n"] != "半" else unit // 2
    slack = max(1, min(days // 4, 10)) + (2 if fuzzy else 0)
    first, last = sorted((sign * (days - slack), sign * (days + slack)))
    event = m["event"].strip()
    return _zh_event(event, Anchor(event, first, last), ref, prefer)


@_zh(r"(?P<event>[^，。？！,.?!；;：:]*?[^\s，。？！,.?!；;：:])\s*(?P<dir>之前|以前|之后|以后)")
def _zh_anchor_open(m: re.Match, ref: date, prefer: str) -> Anchor | Period | None:
    event = m["event"].strip()
    if re.fullmatch(_ZN + r"(?:个)?(?:天|星期|礼拜|周|月|年)", event):
        return None  # "三天之前" is three days ago (the pattern below), not an event
    if "前" in m["dir"]:
        return _zh_event(event, Anchor(event, None, -1), ref, prefer)
    return _zh_event(event, Anchor(event, 1, None), ref, prefer)


def _zh_event(event: str, anchor: Anchor, ref: date, prefer: str) -> Anchor | Period | None:
    inner = [m for m in _scan(event, ref, prefer, _ZH, anchors=False) if m.period is not None]
    if inner and inner[-1].end == len(event):
        p = inner[-1].period
        assert p is not None
        if anchor.first is None:
            return Period(OPEN_START, p.start - timedelta(days=1))
        if anchor.last is None:
            return Period(p.end + timedelta(days=1), OPEN_END)
        return anchor.around(p.start if (anchor.first or 0) < 0 else p.end)
    # a pronoun or a question word is no event ("我以前住在上海": I used to live in Shanghai)
    if len(event) < 2 or event in ("我", "我们", "你", "他", "她", "他们", "很久", "不久", "之"):
        return None
    return anchor


@_zh(_ZH_YEAR + r"?" + _ZH_MONTH + r"(?P<d>\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])(?:日|号)")
def _zh_day(m: re.Match, ref: date, prefer: str) -> Period | None:
    month = _zh_number(m["month"])[0]
    day = _zh_day_number(m["d"])
    year = _zh_year(m, ref) or _year_for(month, day, ref, prefer)
    found = _safe_date(year, month, day) if 1 <= month <= 12 else None
    return Period(found, found) if found else None


@_zh(_ZH_YEAR + r"?" + _ZH_MONTH + r"(?:份)?(?P<part>初|中旬|上旬|下旬|中|底|末)?")
def _zh_month(m: re.Match, ref: date, prefer: str) -> Period | None:
    month = _zh_number(m["month"])[0]
    if not 1 <= month <= 12:
        return None
    year = _zh_year(m, ref)
    whole = month_period(year if year is not None else _month_year(month, ref, prefer), month)
    return _part_of_month(m["part"], whole) if m["part"] else whole


@_zh(_ZH_YEAR + r"?(?P<s>[春夏秋冬])(?:天|季)")
def _zh_season(m: re.Match, ref: date, prefer: str) -> Period:
    first = ZH_SEASONS[m["s"]]
    year = _zh_year(m, ref)
    if year is None:
        this = _this_season(first, ref)
        return _last_season(first, ref) if prefer == "past" and this.start > ref else this
    return season_period(first, year)


@_zh(r"(?P<w>去年|今年|前年|明年)")
def _zh_year_word(m: re.Match, ref: date, prefer: str) -> Period:
    year = ref.year + {"去年": -1, "今年": 0, "前年": -2, "明年": 1}[m["w"]]
    return Period(date(year, 1, 1), date(year, 12, 31))


@_zh(r"(?<![晚早马])(?P<dir>上|这|本|下)(?:个)?(?:星期|礼拜|周)(?P<wd>[一二三四五六日天])")
def _zh_weekday(m: re.Match, ref: date, prefer: str) -> Period:
    offset = {"上": -1, "这": 0, "本": 0, "下": 1}[m["dir"]]
    day = week_period(ref + timedelta(days=7 * offset)).start + timedelta(days=ZH_WEEKDAYS[m["wd"]])
    return Period(day, day)


@_zh(r"(?<![晚早马])(?P<dir>上上|上|这|本|下)(?:个)?(?P<unit>星期|礼拜|周末|周|月)")
def _zh_rel_unit(m: re.Match, ref: date, prefer: str) -> Period:
    offset = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1}[m["dir"]]
    unit = {"星期": "week", "礼拜": "week", "周": "week", "周末": "weekend", "月": "month"}[m["unit"]]
    return _relative_unit(unit, offset, ref)


@_zh(_ZN + r"(?:个)?(?P<unit>天|星期|礼拜|周|月|年)(?:以|之)?前")
def _zh_ago(m: re.Match, ref: date, prefer: str) -> Period:
    unit = {"天": "day", "星期": "week", "礼拜": "week", "周": "week", "月": "month", "年": "year"}[m["unit"]]
    if m["n"] == "半":
        return _ago(15, "day", ref, True) if unit == "month" else _ago(182, "day", ref, True)
    n, fuzzy = _zh_number(m["n"])
    return _ago(n, unit, ref, fuzzy)


@_zh(r"(?P<w>大前天|前天|昨天|今天|明天|后天|今晚|昨晚)")
def _zh_day_word(m: re.Match, ref: date, prefer: str) -> Period:
    offset = {"大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "明天": 1, "后天": 2}.get(m["w"], 0)
    day = ref + timedelta(days=offset)
    return Period(day, day)


# --------------------------------------------------------------------------- scanning


def _table(language: str) -> tuple[tuple[re.Pattern, Handler], ...]:
    """The handlers of one language in the order they are defined: earlier patterns win overlaps."""
    return tuple((fn.pattern, fn) for fn in list(globals().values())
                 if callable(fn) and getattr(fn, "language", None) == language)


_EN = _table("en")
_ZH = _table("zh")

_RECENT_EN = re.compile(
    r"(?<!\w)(latest|newest|most recent(?:ly)?|recent(?:ly)?|lately|current(?:ly)?|now|nowadays|these days|"
    r"at the moment|right now|any ?more|still|in the end|end(?:ed)? up|final(?:ly)?|the last time|so far|"
    r"up to date)(?!\w)", re.IGNORECASE)
_RECENT_ZH = re.compile(r"最近|最新|现在|目前|当前|如今|这几天|近来|最后|还在|至今")


# every word a pattern needs (see _en's `needs`): the handful a text holds are found once, so a
# pattern whose words it lacks is skipped at the cost of a set lookup. (One alternation of them all
# under IGNORECASE took ~50 µs on a line of a hundred characters: a try at every position.)
_GATE_WORDS = tuple(sorted({word for _, fn in (*_EN, *_ZH) for word in fn.needs}))  # type: ignore[attr-defined]


def _scan(text: str, ref: date, prefer: str, table: tuple[tuple[re.Pattern, Handler], ...], *,
          anchors: bool = True) -> list[TimeMention]:
    folded = fold_ascii(text)
    present = {word for word in _GATE_WORDS if word in folded}
    if not present:
        return []
    taken: list[tuple[int, int]] = []
    found: list[TimeMention] = []
    for pattern, handler in table:
        if not anchors and handler.__name__.startswith(("_en_anchor", "_zh_anchor")):
            continue
        if present.isdisjoint(handler.needs):  # type: ignore[attr-defined]
            continue
        for m in pattern.finditer(text):
            if any(m.start() < b and a < m.end() for a, b in taken):
                continue
            result = handler(m, ref, prefer)
            if result is None:
                continue
            taken.append((m.start(), m.end()))
            if isinstance(result, Anchor):
                found.append(TimeMention(m.group(0), m.start(), m.end(), None, result))
            else:
                found.append(TimeMention(m.group(0), m.start(), m.end(), result))
    return sorted(found, key=lambda t: t.start)


def _tables(text: str) -> Iterator[tuple[tuple[re.Pattern, Handler], ...]]:
    yield _EN
    if re.search(r"[\u3400-\u9fff]", text):
        yield _ZH


def find_times(text: str, day: date, *, prefer: str = "nearest") -> tuple[TimeMention, ...]:
    """The times a note written on `day` names ("yesterday", "last Friday", "12 March"), resolved."""
    found: list[TimeMention] = []
    for table in _tables(text):
        found.extend(m for m in _scan(text, day, prefer, table, anchors=False) if m.period is not None)
    return tuple(sorted(found, key=lambda t: t.start))


def query_time(query: str, today: date) -> QueryTime:
    """What `query` says about time (see the module docstring), resolved against `today`."""
    mentions: list[TimeMention] = []
    for table in _tables(query):
        mentions.extend(_scan(query, today, "past", table))
    mentions.sort(key=lambda t: t.start)
    recent = bool(_RECENT_EN.search(query) or _RECENT_ZH.search(query))
    period = next((m.period for m in mentions if m.period is not None), None)
    anchor = next((m.anchor for m in mentions if m.anchor is not None), None)
    rest = query
    for m in sorted(mentions, key=lambda t: -t.start):
        rest = rest[: m.start] + " " + rest[m.end :]
    rest = " ".join(rest.split())
    return QueryTime(period, anchor, recent, rest, tuple(mentions))
