"""What a note line claims, offline: its identity across small rewordings, and its *values*.

A fact is known by its claim — the normalised text — not by the line range it sits at, so moving
or deleting neighbouring lines never splits its history. Two texts are the **same claim** when
they state the same values (numbers, times, dates, weekdays, months, money, names, negation) in
nearly the same words (word Jaccard ≥ SAME_WORDS): "Reminder: the staging DB needs the VPN" and
"The staging DB needs the VPN" are one claim. Texts about the same subject that state a
*different* value of the same kind ("standup at 9:30" / "standup at 10:00") are never one claim:
they are an **update**, which `relation()` describes for Deep's supersede / to-verify decision.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from kit.dreaming.tags import STOP_WORDS
from kit.lazyre import fold_ascii
from kit.memory.changes import states_change as states_change  # re-exported: Deep's word for it
from kit.memory.recall import normalise_claim

SAME_WORDS = 0.8  # word Jaccard for a rewording of the same claim (values equal)
UPDATE_SUBJECT = 0.5  # subject-word Jaccard for "the same subject" …
UPDATE_SIMILARITY = 0.6  # … together with this similarity (cosine, or Jaccard without embeddings)
UPDATE_ALONE = 0.8  # similarity that makes two lines about one subject whatever their words
CHANGE_SIMILARITY = 0.55  # a line that states the change needs only this similarity …
CHANGE_FLOOR = 0.45  # … or this one on the same subject words (new place names pull the cosine down)
CLEAR_SUBJECT = 0.75  # a newer line on this subject differing only in numbers/dates/days: clear update

_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec").split()
_MONTH_NAME = {m: m[:3] for m in _MONTHS}
_DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_NEGATION = re.compile(r"\b(?:not|never|no|none|nobody|nothing|cannot|can't|won't|don't|doesn't|didn't|isn't|"
                       r"aren't|wasn't|weren't|shouldn't|mustn't|anymore|no\s+longer)\b", re.I)
_MONEY = re.compile(r"[€$£¥]\s?\d[\d,.]*\d|[€$£¥]\s?\d|\b\d[\d,.]*\s?(?:eur|euros?|usd|gbp|pounds?|dollars?|k)\b", re.I)
_TIME = re.compile(r"\b(?P<h>\d{1,2})(?:[:h](?P<m>\d{2}))?\s?(?P<ap>am|pm)\b|\b(?P<h2>\d{1,2})[:h](?P<m2>\d{2})\b"
                   r"|\bhalf\s+(?:past\s+)?(?P<half>one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b",
                   re.I)
_MONTH_RX = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE = re.compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m>{_MONTH_RX})\b"
    rf"|\b(?P<m2>{_MONTH_RX})\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b"
    r"|\b(?P<iso>\d{4}-\d{2}-\d{2})\b|\bthe\s+(?P<nth>\d{1,2})(?:st|nd|rd|th)\b", re.I)
# an end time or date ("open until 22:00", "closes at 17:00", "8:00-18:00", "runs till 30 June") is
# another value than a start or point one ("opens at 8:00", "standup at 9:30"): a closing time that
# differs from an opening time is two facts, not a changed value (see `values`)
_END_WORD = re.compile(r"\b(?:until|till|til|through|thru|(?:closes?|closing|closed|ends?|ending|finish(?:es)?|finishing)"
                       r"(?:\s+(?:at|on|by|around))?)\s+$", re.I)
_RANGE_TO = re.compile(r"^\s*(?:to|till|until|-|–|—)\s*$", re.I)
_WEEKDAY = re.compile(r"\b(?P<w>monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b", re.I)
_MONTH_ALONE = re.compile(rf"\b(?P<m>{_MONTH_RX})\b", re.I)
_NUMBER = re.compile(r"\b\d+(?:[ .,]\d+)*\b")
# identifiers: #tags, codes mixing letters and digits (MX-20417, v2.3.1, BS6) and dotted versions:
# when only an id differs it is another thing (ticket #12 is not ticket #13), not a changed value
_ID = re.compile(r"#[\w-]+|\b(?=[\w-]*[^\W\d_])(?=[\w-]*\d)[\w][\w.-]*\w\b|\b\d+(?:\.\d+){2,}\b")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_ABBREVIATION = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|St|Prof|Jr|Sr|vs|etc|approx|No)\.\s+$")
# [^\S\n]: a line's own indent; `^\s*` under re.M ran on over the blank lines after every line start
# (quadratic: 20,000 blank lines took 40 s)
_MARKER = re.compile(r"^[^\S\n]*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?", re.M)


def _starts_sentence(before: str) -> bool:
    """A word after `before` starts a sentence: `before` is empty (or a newline), or ends in "(" and
    blanks, or in . ! ? ; : and at least one blank — not after an abbreviation ("Dr. "). Read off
    its end: a search for `(?:^|[.!?;:]\\s+|\\(\\s*)$` went over all the text before each capitalised
    word of a line (str.rstrip strips what `\\s` matches)."""
    stripped = before.rstrip()
    if before in ("", "\n") or stripped.endswith("("):
        return True  # `^$` (before a final newline too), or `\(\s*$`
    if stripped == before or not stripped.endswith((".", "!", "?", ";", ":")):
        return False  # `[.!?;:]\s+$` needs the mark and a blank after it
    # an abbreviation ends at the mark: at most its 6 letters and the mark before it (`\b` still sees
    # the character before where the search starts)
    return _ABBREVIATION.search(before, max(0, len(stripped) - 8)) is None
_EXTRA_STOP = frozenset("is are was were be been it its in on at of to a an by as or if so our we i my me".split())
_NOT_NAMES = STOP_WORDS | _EXTRA_STOP


@dataclass(frozen=True)
class Values:
    """The values a text states, by kind. Kinds: money, time, date, weekday, month, id, number,
    name, negation — and time-end, date-end: an end time or date ("until 22:00", "closes at 17:00",
    the second of "8:00-18:00"), which is compared only with end times or dates."""

    kinds: tuple[tuple[str, frozenset[str]], ...]

    def get(self, kind: str) -> frozenset[str]:
        return self._by_kind.get(kind, frozenset())

    # worked out once per object (Deep compares one line's values with hundreds of others); not
    # fields, so equality stays that of `kinds`
    @cached_property
    def _by_kind(self) -> dict[str, frozenset[str]]:
        return dict(self.kinds)

    @cached_property
    def names(self) -> frozenset[str]:
        return frozenset(kind for kind, vals in self.kinds if vals)


def _hour(h: str, m: str | None, ap: str | None) -> str:
    hour = int(h) % 12 + (12 if ap and ap.lower() == "pm" else 0) if ap else int(h)
    return f"{hour:02d}:{m or '00'}"


def _plain(text: str) -> str:
    """The text values and names are read from: NFKC, without list markers."""
    return _MARKER.sub("", unicodedata.normalize("NFKC", text))


_DIGIT = re.compile(r"\d")  # what the patterns' \d matches
_RUN = re.compile(r"\w+")  # what the patterns' \b stands between
# What every match of each pattern holds: a text without it is not searched (values() runs on every
# wording a dream groups, and most lines state no date, weekday, month, id or negation).
#
# Whole words, as the patterns have them between \b's — a run of \w, folded as re.IGNORECASE
# folds it: "note" holds no "no", nor "decided" a "dec". A negation holds one of its words or an
# "n't" (can't, won't …; "no longer" starts with "no").
_WORDS: dict[str, frozenset[str]] = {
    "weekday": frozenset(day + s for day in _DAYS for s in ("", "s")),
    "month": frozenset(_MONTHS),
    "negation": frozenset("not never no none nobody nothing cannot anymore".split()),
    "time": frozenset({"half"}),
}
# on the folded text ("1ſt" is "1st" to re.IGNORECASE): an amount holds a currency sign, or a digit
# and its unit; a time is "half …" or holds a digit, then [:h] and a digit, or am/pm; a date holds
# a digit and a month word, or is an ISO date (a digit, "-", a digit) or "the 21st"
_CURRENCY = "€$£¥"
_MONEY_HINT = re.compile(r"\d[\d,.]*\s?(?:eur|usd|gbp|pound|dollar|k)")
_TIME_HINT = re.compile(r"\d(?:[:h]\d|\s?[ap]m)")
_DATE_HINT = re.compile(r"\d-\d|\d(?:st|nd|rd|th)")
# an id is "#…", a dotted version (a digit, ".", a digit) or a word of letters, digits, "_" and "-"
# holding both a letter and a digit: then somewhere in it a letter and a digit have only "_" and
# "-" between them — a digit, then the letter, in the text or in the text reversed (patterns
# that open with \d are tried only at the digits)
_ID_HINT = re.compile(r"\d(?:[_-]*[^\W\d_]|\.\d)")
_DIGIT_THEN_LETTER = re.compile(r"\d[_-]*[^\W\d_]")


def _holding(text: str) -> set[str]:
    """The kinds `text` may have a match of."""
    folded = fold_ascii(text)
    words = set(_RUN.findall(folded))
    held = {kind for kind, needed in _WORDS.items() if not needed.isdisjoint(words)}
    if "n't" in folded:
        held.add("negation")
    if "#" in text or _ID_HINT.search(text) is not None or _DIGIT_THEN_LETTER.search(text[::-1]) is not None:
        held.add("id")
    if _DIGIT.search(text) is not None:
        held.add("number")
        if any(sign in text for sign in _CURRENCY) or _MONEY_HINT.search(folded) is not None:
            held.add("money")
        if _TIME_HINT.search(folded) is not None:
            held.add("time")
        if "month" in held or _DATE_HINT.search(folded) is not None:
            held.add("date")
    return held


def values(text: str) -> Values:
    plain = _plain(text)
    found = _stated(plain)
    names = _names(plain)
    if names:
        found["name"] = set(names)
    return Values(tuple(sorted((k, frozenset(v)) for k, v in found.items())))


def _stated(text: str) -> dict[str, set[str]]:
    """`values` of a `_plain` text but its names: the kinds read off the text's patterns (names
    read words alone, and cost the most: grouping compares these first)."""
    may = _holding(text)
    found: dict[str, set[str]] = {}
    spans: list[tuple[int, int]] = []

    last_end: dict[str, int] = {}  # where the last time / date ended: the start of a range

    def take(kind: str, value: str, m: re.Match) -> None:
        if kind in ("time", "date"):
            before = text[: m.start()]
            prev = last_end.get(kind)
            if _END_WORD.search(before) or (prev is not None and _RANGE_TO.match(text[prev : m.start()])):
                kind = f"{kind}-end"
            last_end[kind.removesuffix("-end")] = m.end()
        found.setdefault(kind, set()).add(value)
        spans.append(m.span())

    def free(m: re.Match) -> bool:
        return not any(a < m.end() and m.start() < b for a, b in spans)

    for m in _MONEY.finditer(text) if "money" in may else ():
        take("money", re.sub(r"[\s,]", "", m.group(0).lower()), m)
    for m in _DATE.finditer(text) if "date" in may else ():
        if not free(m):
            continue
        if m.group("iso"):
            take("date", m.group("iso"), m)
        elif m.group("nth"):
            take("date", f"day-{int(m.group('nth'))}", m)
        else:
            month = _MONTH_NAME[(m.group("m") or m.group("m2")).lower()]
            take("date", f"{month}-{int(m.group('d') or m.group('d2'))}", m)
    for m in _TIME.finditer(text) if "time" in may else ():
        if not free(m):
            continue
        if m.group("half"):
            take("time", f"{int(_NUMBER_WORDS[m.group('half').lower()]):02d}:30", m)
        elif m.group("h"):
            take("time", _hour(m.group("h"), m.group("m"), m.group("ap")), m)
        else:
            take("time", _hour(m.group("h2"), m.group("m2"), None), m)
    for m in _WEEKDAY.finditer(text) if "weekday" in may else ():
        take("weekday", m.group("w").lower(), m)
    for m in _MONTH_ALONE.finditer(text) if "month" in may else ():
        if free(m) and not (m.group("m").lower() == "may" and not m.group("m")[0].isupper()):
            take("month", _MONTH_NAME[m.group("m").lower()], m)
    for m in _ID.finditer(text) if "id" in may else ():
        if free(m):
            take("id", m.group(0).lower().lstrip("#"), m)
    for m in _NUMBER.finditer(text) if "number" in may else ():
        if free(m):
            take("number", re.sub(r"[ .,](?=\d)", "", m.group(0).lower()), m)
    if "negation" in may and _NEGATION.search(text):
        found["negation"] = {"not"}
    return found


def _names(text: str) -> list[str]:
    """Runs of capitalised words (not days, months or acronyms). A capitalised word that starts a
    sentence is only a name when the next word is capitalised too ("Lumen Health pays …")."""
    tokens = []
    for m in _WORD.finditer(text):
        base = m.group(0).split("'")[0]
        plain = base.lower().removesuffix("s")
        cap = (base[:1].isupper() and not base.isupper() and plain not in _DAYS and base.lower() not in _DAYS
               and base.lower() not in _MONTH_NAME and base.lower() not in _NOT_NAMES)
        # whether it starts a sentence matters only for a capitalised word (a search of all the text
        # before it: not for every word)
        tokens.append((base, m.start(), m.end(), cap, cap and _starts_sentence(text[: m.start()])))
    out: list[str] = []
    run: list[str] = []
    for i, (base, start, _end, cap, first) in enumerate(tokens):
        follows = run and text[tokens[i - 1][2] : start].strip() == ""
        if cap and first:
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            cap = nxt is not None and nxt[3] and not nxt[4] and text[_end : nxt[1]].strip() == ""
        if cap and follows:
            run.append(base)
            continue
        if run:
            out.append(" ".join(run).lower())
        run = [base] if cap else []
    if run:
        out.append(" ".join(run).lower())
    return out


def _stem(word: str) -> str:
    if word.endswith("ss"):
        return word
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> frozenset[str]:
    """Lower-cased word tokens of the normalised claim."""
    return _words_of(normalise_claim(text))


def _words_of(norm: str) -> frozenset[str]:
    return frozenset(_WORD.findall(norm))


def subject(text: str) -> frozenset[str]:
    """Content words without values, names and stop words (lightly stemmed): what it is about."""
    return _subject(words(text), _names(_plain(text)))


def _subject(text_words: frozenset[str], text_names: Iterable[str]) -> frozenset[str]:
    """`subject` from the text's words and names (`_names`: the only values it needs)."""
    names = {part for name in text_names for part in name.split()}
    out = set()
    for w in text_words:
        base = w.split("'")[0]
        if (base in STOP_WORDS or base in _EXTRA_STOP or base in names or base.removesuffix("s") in _DAYS
                or base in _MONTH_NAME
                or any(ch.isdigit() for ch in base) or _NEGATION.fullmatch(base) or len(base) < 2):
            continue
        out.add(_stem(base.rstrip("s") if base.endswith("days") else base))
    return frozenset(out)


_GROWTH = 1 + SAME_WORDS


def _reachable(index: Mapping[str, list[tuple[int, int, int]]], prefix: Sequence[str], size: int) -> list[int]:
    """The indexed texts that can reach Jaccard ≥ SAME_WORDS with a text of `size` words whose
    prefix is `prefix`, ascending. Both texts list their words in one order, so the first prefix
    word they share is their first shared word: after it, at most the fewer of their words left can
    be shared, and a pair needs overlap ≥ t/(1+t)·(|a|+|b|) (a hair of slack for rounding: a pair
    kept wrongly is only compared). `index`: word → (text, its words from that word on, its words)."""
    seen: dict[int, bool] = {}
    for place, w in enumerate(prefix):
        left = size - place
        for j, rest, other in index.get(w, ()):
            if j not in seen:
                most = left if left < rest else rest  # min(), written out: ~30 entries per text
                seen[j] = most * _GROWTH >= SAME_WORDS * (size + other) - 1e-9
    return sorted([j for j, ok in seen.items() if ok])


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    a = a if isinstance(a, (set, frozenset)) else set(a)
    b = b if isinstance(b, (set, frozenset)) else set(b)
    if not a and not b:
        return 1.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def same_claim(a: str, b: str, facts: Facts | None = None) -> bool:
    """One claim in two wordings: the same values, nearly the same words."""
    f = facts or Facts()
    if f.norm(a) == f.norm(b):
        return True
    return f.values(a) == f.values(b) and jaccard(f.words(a), f.words(b)) >= SAME_WORDS


@dataclass(frozen=True)
class Relation:
    """How a newer text `new` relates to an older one `old`."""

    kind: str  # same | update | unrelated
    conflicts: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()  # (kind, old values, new values)
    subject: float = 0.0  # subject-word Jaccard
    similarity: float = 0.0
    states_change: bool = False

    @property
    def only_values(self) -> bool:
        """A number, time, date, day or amount differs (names may differ with it: an address or a
        venue changes both), and not whether it is so (negation). Names alone differing — "Dr.
        Achebe" / "Dr. Okafor" — may be two people — and an id with a name ("prod-eu-1 in
        Frankfurt" / "prod-eu-2 in Paris") may be two clusters: not a clear change of value."""
        kinds = {kind for kind, _, _ in self.conflicts}
        return bool(kinds - {"name", "negation", "id"}) and "negation" not in kinds

    def describe(self) -> str:
        parts = [f"{', '.join(old) or 'none'} → {', '.join(new) or 'none'}" for _, old, new in self.conflicts]
        return "; ".join(parts)


def conflicts(old: str | Values, new: str | Values) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]:
    """Kinds of value both texts state, with different values (negation: one says not)."""
    vo = old if isinstance(old, Values) else values(old)
    vn = new if isinstance(new, Values) else values(new)
    out = []
    for kind in sorted(vo.names & vn.names):
        if kind != "negation" and vo.get(kind) != vn.get(kind):
            out.append((kind, tuple(sorted(vo.get(kind))), tuple(sorted(vn.get(kind)))))
    if ("negation" in vo.names) != ("negation" in vn.names):
        out.append(("negation", tuple(vo.get("negation")), tuple(vn.get("negation"))))
    return tuple(out)


def relation(old: str, new: str, similarity: float, facts: Facts | None = None) -> Relation:
    """Same claim, an update of the same subject (a different value of a kind both state), or
    unrelated. `similarity`: embedding cosine of the two texts (token Jaccard without a model).
    `facts`: a memo of what each text states, when the same texts are compared again and again."""
    f = facts or Facts()
    if same_claim(old, new, f):
        return Relation("same", subject=1.0, similarity=similarity)
    subj = jaccard(f.subject(old), f.subject(new))
    found = conflicts(f.values(old), f.values(new))
    change = f.states_change(new)
    # Only an id differs ("Ticket #12 is blocked" / "Ticket #13 is blocked"): another ticket, booking,
    # code — two things, not a changed value. Not when the line says it changed ("We moved the
    # cluster to prod-eu-2"), nor when a name changed with the id on the same subject ("prod-eu-1 in
    # Frankfurt" / "prod-eu-2 in Paris"): the thing the line is about kept its words, its values moved.
    kinds = {kind for kind, _, _ in found}
    if kinds == {"id"} and not change:
        return Relation("unrelated", found, subj, similarity, change)
    if found:
        negation_only = all(kind == "negation" for kind, _, _ in found)
        about_it = ((subj >= UPDATE_SUBJECT and similarity >= (CHANGE_FLOOR if change else UPDATE_SIMILARITY))
                    or (similarity >= UPDATE_ALONE and subj > 0)
                    or (change and similarity >= CHANGE_SIMILARITY and not negation_only))
        if negation_only:
            about_it = about_it and subj >= CLEAR_SUBJECT
        if about_it:
            return Relation("update", found, subj, similarity, change)
    return Relation("unrelated", found, subj, similarity, change)


RESTATE_SIMILARITY = 0.75


def restates(old: str, new: str, similarity: float, facts: Facts | None = None) -> bool:
    """`new` says nothing `old` does not: same subject, no value of its own ("Team standup is at
    10:00 in Kelvin" after "Standup moves to 10:00 from Monday, still in Kelvin")."""
    f = facts or Facts()
    vo, vn = f.values(old), f.values(new)
    if not vn.names or conflicts(vo, vn) or similarity < RESTATE_SIMILARITY:
        return False
    if jaccard(f.subject(old), f.subject(new)) < 0.34:
        return False
    return all(vn.get(kind) <= vo.get(kind) for kind in vn.names)


class Facts:
    """What texts state — values, subject words, words, whether they say a value changed — each
    worked out once per text. One Deep plan owns one (it compares the same few hundred lines with
    each other over and over); without one, each call works them out afresh."""

    def __init__(self) -> None:
        self._values: dict[str, Values] = {}
        self._subject: dict[str, frozenset[str]] = {}
        self._words: dict[str, frozenset[str]] = {}
        self._norm: dict[str, str] = {}
        self._change: dict[str, bool] = {}

    def values(self, text: str) -> Values:
        if text not in self._values:
            self._values[text] = values(text)
        return self._values[text]

    def words(self, text: str) -> frozenset[str]:
        if text not in self._words:
            self._words[text] = _words_of(self.norm(text))  # `words`, on the memoised norm
        return self._words[text]

    def norm(self, text: str) -> str:
        if text not in self._norm:
            self._norm[text] = normalise_claim(text)
        return self._norm[text]

    def subject(self, text: str) -> frozenset[str]:
        if text not in self._subject:
            # the names only, not every value: most lines a plan looks at fail on their subject
            known = self._values.get(text)
            names = known.get("name") if known is not None else _names(_plain(text))
            self._subject[text] = _subject(self.words(text), names)
        return self._subject[text]

    def states_change(self, text: str) -> bool:
        if text not in self._change:
            self._change[text] = states_change(text)
        return self._change[text]


class ClaimIndex:
    """Groups texts into claims (`same_claim`), in the order they are added, without comparing
    every pair: two texts can only be one claim when they share one of their rarer words (prefix
    filtering for Jaccard ≥ SAME_WORDS), and where the first word they share sits in each text
    bounds how many they can share (positional filtering, PPJoin): most pairs end there.

    A text joins the *earliest* claim it matches (not the first one a word lookup happens to
    reach), so a text's claim depends only on the texts before it: adding texts never changes the
    claim of one already grouped, and a dream can group only the wordings logged since the last
    one (`known`)."""

    def __init__(self, texts: Sequence[str]):
        self.texts = list(texts)
        self._norms = [normalise_claim(t) for t in self.texts]
        self._words = [_words_of(n) for n in self._norms]  # `words`, on the norms grouping reads too
        # each text's values, computed when first compared: its stated values (`_stated`), then
        # its names only when the stated ones match (the synthetic and real logs alike are full of
        # lines that differ in a number alone)
        self._stated: list[dict[str, set[str]] | None] = [None] * len(self.texts)
        self._named: list[frozenset[str] | None] = [None] * len(self.texts)
        self.words = [sorted(w) for w in self._words]
        freq: dict[str, int] = {}
        for ws in self.words:
            for w in ws:
                freq[w] = freq.get(w, 0) + 1
        # by (frequency, word): the words are in word order already, and the sort is stable
        self.order = [sorted(ws, key=freq.__getitem__) for ws in self.words]

    def groups(self, known: int = 0) -> list[int]:
        """For each text, the index of the first text of its claim. The first `known` texts are
        claims of their own already (distinct claims grouped before: they are not compared)."""
        parent = list(range(len(self.texts)))
        # word → (claim, how many of its words from that one on, how many words): see _reachable
        index: dict[str, list[tuple[int, int, int]]] = {}
        norms = self._norms
        by_norm: dict[str, int] = {}
        for i, ws in enumerate(self.order):
            if norms[i] in by_norm:
                parent[i] = by_norm[norms[i]]
                continue
            by_norm[norms[i]] = i
            # a prefix this long shares a word with every text it can match (any one word order
            # serves, as long as the index and the lookups use the same)
            prefix = ws[: max(1, len(ws) - math.ceil(SAME_WORDS * len(ws)) + 1)]
            if i >= known:
                for j in _reachable(index, prefix, len(ws)):  # only claims are indexed
                    if self._same(j, i):
                        parent[i] = j
                        break
            if parent[i] == i:
                size = len(ws)
                for place, w in enumerate(prefix):
                    index.setdefault(w, []).append((i, size - place, size))
        return parent

    def _stated_of(self, i: int) -> dict[str, set[str]]:
        found = self._stated[i]
        if found is None:
            found = self._stated[i] = _stated(_plain(self.texts[i]))
        return found

    def _names_of(self, i: int) -> frozenset[str]:
        named = self._named[i]
        if named is None:
            named = self._named[i] = frozenset(_names(_plain(self.texts[i])))
        return named

    def _same(self, i: int, j: int) -> bool:
        """`same_claim` on precomputed words and values (the words first: they rule out most pairs).
        No size test: Jaccard ≤ smaller / larger, so the Jaccard test rejects whatever it would
        (and `_reachable` has left out such pairs already). Two texts state the same `values` when
        they state the same values but names, and the same names."""
        a, b = self._words[i], self._words[j]
        shared = len(a & b)  # `jaccard`, on two sets that are never both empty (a prefix word is shared)
        return (shared / (len(a) + len(b) - shared) >= SAME_WORDS and self._stated_of(i) == self._stated_of(j)
                and self._names_of(i) == self._names_of(j))
