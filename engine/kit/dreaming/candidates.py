"""Candidates (§8): recall events aggregated per *claim*, each hit weighted by its recall credit.

A candidate is a claim — the normalised text of a note passage, with small rewordings of the same
values folded in (`claims.same_claim`) — not a line range: moving, reordering or deleting the lines
around a fact never splits or resets its history, and the same sentence recalled from two notes is
one candidate. A rewrite that changes a value ("9:30" → "10:00") is a new claim.

Each event earns `scoring.recall_credit` from its rank and score among the promotable hits of its
search, plus a bonus when the agent used it (`recall_uses`). Candidates keep the raw counts (what
happened) next to the credited ones (what counts): credited recalls saturate at one per day, and a
day or a query counts only when a hit there earned at least `scoring.CREDITED`.
"""

from __future__ import annotations

import base64
import operator
from array import array
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from kit.dreaming import scoring
from kit.dreaming.claims import ClaimIndex
from kit.dreaming.junk import Junk, junk_rule
from kit.dreaming.tags import concept_tags
from kit.memory.recall import (
    USE_WINDOW_S,
    RecallEvent,
    RecallSearch,
    RecallUse,
    claim_hash,
    normalise_claim,
)


@dataclass(frozen=True, slots=True)
class EventCredits:
    """Each hit a candidate counts, as (event id, credit, used, quoted) when iterated — kept as four
    packed columns: a busy line counts thousands of hits, and a tuple each was most of what the
    collector walked after a build (`kit.gcpause`), for `kit memory explain` alone to read.
    quoted: a junk hit that quotes this claim (see quoted_wordings). Equal when the bytes are: a
    credit compares by its bits (-0.0 is not 0.0), as a resumed fold must give the same ones."""

    ids: bytes = b""  # array("q")
    credits: bytes = b""  # array("d"): exact floats
    used: bytes = b""  # 0 or 1 per hit
    quoted: bytes = b""  # 0 or 1 per hit

    def __iter__(self) -> Iterator[tuple[int, float, bool, bool]]:
        return zip(array("q", self.ids), array("d", self.credits), map(bool, self.used), map(bool, self.quoted),
                   strict=True)

    def __len__(self) -> int:
        return len(self.used)


@dataclass(frozen=True)
class Candidate:
    key: str  # where its latest recall found it: path:start:end
    path: str
    start_line: int
    end_line: int
    claim: str  # identity: the claim hash of the first wording recalled
    snippet: str  # the latest wording
    recall_count: int  # raw: every event
    total_score: float  # raw: summed search scores
    max_score: float
    query_hashes: frozenset[str]  # raw distinct queries
    queries: tuple[str, ...]  # distinct query texts, first-seen order (for explain)
    days: tuple[str, ...]  # raw distinct recall days, sorted
    first_ts: float
    last_ts: float
    tags: tuple[str, ...]
    junk: str | None  # why it can never be promoted, or None
    junk_rule: str | None = None
    credit: float = 0.0  # summed recall credit (unsaturated)
    credited: float = 0.0  # credited recalls: each day's credit capped at scoring.DAY_CAP
    credited_days: tuple[str, ...] = ()
    credited_day_credit: float = 0.0  # the saturated credit of the credited days alone
    credited_queries: frozenset[str] = frozenset()
    used: int = 0  # hits the agent read in full or quoted
    claims: frozenset[str] = frozenset()  # the claim hash of every wording
    locations: tuple[tuple[str, int, int], ...] = ()  # every (path, start, end) it was recalled at, latest first
    first_snippet: str = ""  # the wording whose hash is `claim`
    event_credit: EventCredits = field(default=EventCredits(), repr=False)

    @property
    def id(self) -> str:
        return self.claim

    @property
    def unique_queries(self) -> int:
        return len(self.query_hashes)

    @property
    def recall_days(self) -> int:
        return len(self.days)

    @property
    def first_day(self) -> date:
        return date.fromisoformat((self.credited_days or self.days)[0])

    @property
    def last_day(self) -> date:
        return date.fromisoformat((self.credited_days or self.days)[-1])

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "claim": self.claim,
            "snippet": self.snippet,
            "recall_count": self.recall_count,
            "total_score": round(self.total_score, 6),
            "max_score": round(self.max_score, 6),
            "unique_queries": self.unique_queries,
            "recall_days": self.recall_days,
            "credited_recalls": round(self.credited, 6),
            "credited_queries": len(self.credited_queries),
            "credited_days": len(self.credited_days),
            "used": self.used,
            "first_day": self.days[0],
            "last_day": self.days[-1],
            "concept_tags": list(self.tags),
            "junk": self.junk,
            "junk_rule": self.junk_rule,
        }


_TS, _ID, _SCORE = operator.attrgetter("ts"), operator.attrgetter("id"), operator.attrgetter("score")


def in_time_order(events: Iterable[RecallEvent]) -> list[RecallEvent]:
    """Events in the order they happened, (ts, id): by id, then stably by time — a float key sorts
    in a third of the time a (ts, id) tuple takes, and a log read in id order is in id order already."""
    return sorted(sorted(events, key=_ID), key=_TS)


_QUERY, _QUERY_HASH, _DAY, _CLAIM_HASH, _SNIPPET = (operator.attrgetter(f) for f in
                                                    ("query", "query_hash", "day", "claim_hash", "snippet"))
_PLACE = operator.attrgetter("path", "start_line", "end_line")
_CREDIT, _USED = operator.itemgetter(0), operator.itemgetter(1)  # of a `Credit`


def turn_of(starts: Mapping[str, Sequence[float]], day: str, ts: float) -> int:
    """Which turn of its day a moment belongs to: how many active recalls (each one starts a turn,
    the agent runs one per user message) began at or before it; 0 = before the first."""
    return bisect_right(starts.get(day, ()), ts)


Credit = tuple[float, bool, bool, tuple]  # (credit, used, passed over, turn): one hit's entry


class HitCredits:
    """The credit of each hit of a log (`scoring.recall_credit`), from what the log says around it:
    built once from its events, uses and searches; `of(events, owns)` credits some of them (`owns`:
    each one's `owns_of` entry).

    The rank is taken among the promotable hits of the event's search (a junk hit never pushes an
    answer down; one that quotes a note line stands for it), the relative score against the search's
    top hit, whatever it was (`tops`: junk, MEMORY.md): a weak line does not become an answer
    because junk crowded the real one out of the results.

    A hit is *passed over* when, in its turn, the agent used another hit and not this one, or — an
    active-recall hit — searched again after seeing it, and that search did not find it: whatever
    its rank, it did not answer (`scoring.recall_credit`). A turn runs from one active recall to the
    next, within `USE_WINDOW_S`; `searches` (the recorded ones) mark where turns start.

    Each hit is also measured against its own line (`owns_of`): its score over the best score its line
    reached up to it — the `own` of `scoring.recall_credit`, a hit far below that was found for
    something else.

    All else is the event's own day (its search, the uses, the turns), so the credits of some
    days' events are those of the whole log given those days' events, uses and searches — with
    `logged_searches` saying whether the whole log has searches (else the active events mark the
    turns: a log from before v2)."""

    def __init__(self, events: Sequence[RecallEvent], junk: Mapping[str, str | None], uses: Iterable[RecallUse] = (),
                 tops: Mapping[int, float] | None = None, quotes: Mapping[str, str] | None = None,
                 searches: Iterable[RecallSearch] = (), logged_searches: bool | None = None):
        tops, quotes = tops or {}, quotes or {}
        searches = list(searches)
        self.by_place: dict[tuple[str, str], list[RecallUse]] = {}
        self.by_day: dict[str, list[RecallUse]] = {}
        for u in uses:
            self.by_place.setdefault((u.path, u.day), []).append(u)
            self.by_day.setdefault(u.day, []).append(u)
        starts: dict[str, list[float]] = {}
        if logged_searches is None:
            logged_searches = bool(searches)
        for src in (searches if logged_searches else events):  # a log without searches (before v2): the active events
            if src.source == "active":
                starts.setdefault(src.day, []).append(src.ts)
        self.starts = {day: sorted(ts) for day, ts in starts.items()}
        self.tool_searches: dict[tuple[str, int], list[tuple[int, float]]] = {}
        for s in searches:
            if s.source != "active":
                self.tool_searches.setdefault((s.day, turn_of(self.starts, s.day, s.ts)), []).append((s.id, s.ts))
        grouped: dict[int, list[RecallEvent]] = {}
        for e in events:
            if e.search_id is not None:
                grouped.setdefault(e.search_id, []).append(e)
        self.found: dict[int, set[str]] = {s.id: set() for s in searches}
        for sid, evs in grouped.items():
            self.found.setdefault(sid, set()).update(e.key for e in evs)
        self.place: dict[int, tuple[int, float]] = {}
        for evs in grouped.values():
            good = sorted((e for e in evs if junk.get(e.snippet) is None or e.snippet in quotes),
                          key=lambda e: (-e.score, e.id))
            ranked = good + sorted((e for e in evs if junk.get(e.snippet) is not None and e.snippet not in quotes),
                                   key=lambda e: (-e.score, e.id))
            top = max([e.score for e in ranked] + [tops.get(evs[0].search_id, 0.0)])
            for rank, e in enumerate(ranked):
                self.place[e.id] = (rank, e.score / top if top > 0 else 0.0)

    def of(self, events: Iterable[RecallEvent], owns: Iterable[float | None]) -> list[Credit]:
        """Each event's (credit, used, passed over, turn), with its `owns` entry."""
        by_place, by_day, starts = self.by_place, self.by_day, self.starts
        place_get, credit_of, unranked = self.place.get, scoring.recall_credit, (None, None)
        out = []
        for e, own in zip(events, owns, strict=True):
            mine = by_place.get((e.path, e.day)) if by_place else None
            used = mine is not None and any(u.covers(e) for u in mine)
            passed = False
            if e.search_id is None:
                key = (e.day, "search", -e.id)  # a log before v2: each hit is its own turn
                rank, relative = unranked  # (only the hits of a recorded search are ranked)
            else:
                turn = turn_of(starts, e.day, e.ts)
                # the turn a hit counts in: its agent turn, else (before any active recall) its own search
                key = (e.day, turn) if turn else (e.day, "search", e.search_id)
                if not used:
                    later = [u.ts for u in by_day.get(e.day, ())]
                    if e.source == "active":
                        later += [ts for sid, ts in self.tool_searches.get((e.day, turn), ())
                                  if sid > e.search_id and e.key not in self.found[sid]]
                    passed = any(0 <= ts - e.ts <= USE_WINDOW_S and turn_of(starts, e.day, ts) == turn for ts in later)
                rank, relative = place_get(e.id, unranked)
            out.append((credit_of(rank, relative, used, passed_over=passed, own=own), used, passed, key))
        return out


def owns_of(scores: Iterable[float], best: float = 0.0) -> list[float | None]:
    """Each hit's score over the best score its line reached up to it (`scoring.recall_credit`'s
    `own`): the line's hits in (time, id) order, `best` its best score before them. Measured so far,
    not over the whole log: a later, better search for the line never takes back the days it
    already earned (asking for a fact directly must not un-promote it), and a new night never
    changes an old night's credit."""
    out: list[float | None] = []
    for score in scores:
        if score > best:
            best = score
        out.append(score / best if best > 0 else None)
    return out


def line_of(e: RecallEvent, identity: Mapping[str, str], quotes: Mapping[str, str]) -> str:
    """The line a hit is a recall of: its claim, or the quoted line's claim (a junk hit quoting one)."""
    return identity[claim_hash(quotes[e.snippet])] if e.snippet in quotes else identity[e.claim_hash]


def quotes_in(events: Sequence[RecallEvent], credits: Sequence[Credit], identity: Mapping[str, str],
              quotes: Mapping[str, str]) -> list[tuple[str, Quote]]:
    """The hits among `events` that quote a note line (`quotes`), each as (that line's claim, its
    Quote), with the credits of `events` in the same order."""
    if not quotes:
        return []
    return [(line_of(e, identity, quotes), Quote.of(e, c)) for e, c in zip(events, credits, strict=True)
            if e.snippet in quotes]


def credited_claims(events: Sequence[RecallEvent], identity: Mapping[str, str], quotes: Mapping[str, str],
                    credits: HitCredits, peaks: Mapping[str, float] | None = None,
                    ) -> Iterator[tuple[str, list[RecallEvent], list[Credit]]]:
    """Each claim's events in (time, id) order with their credits, claim by claim in the order
    their first events come in `events`. `peaks`: each line's best score before these events.

    A hit's line is its claim, except a junk hit quoting another line (`quotes`): then each
    line's hits are put in time order across claims first; without quotes a claim's events are
    its line's, and each claim is credited as it is folded (one pass over each event)."""
    peaks = peaks or {}
    by_claim: defaultdict[str, list[RecallEvent]] = defaultdict(list)  # (no list made per event)
    for e in events:
        by_claim[identity[e.claim_hash]].append(e)
    if not quotes:
        for claim, evs in by_claim.items():
            evs = in_time_order(evs)
            yield claim, evs, credits.of(evs, owns_of(map(_SCORE, evs), peaks.get(claim, 0.0)))
        return
    by_line: defaultdict[str, list[RecallEvent]] = defaultdict(list)
    for e in events:
        by_line[line_of(e, identity, quotes)].append(e)
    own: dict[int, float | None] = {}
    for line, evs in by_line.items():
        evs = in_time_order(evs)
        own.update(zip(map(_ID, evs), owns_of(map(_SCORE, evs), peaks.get(line, 0.0)), strict=True))
    for claim, evs in by_claim.items():
        evs = in_time_order(evs)
        yield claim, evs, credits.of(evs, [own[e.id] for e in evs])


def build_candidates(events: Iterable[RecallEvent], uses: Iterable[RecallUse] = (),
                     tops: Mapping[int, float] | None = None,
                     searches: Iterable[RecallSearch] = (),
                     verdicts: Mapping[str, Junk | None] | None = None) -> list[Candidate]:
    """Candidates from the recall log: `uses`, `tops` (each search's best score) and `searches` as
    logged by `kit.memory.recall`; `verdicts`: junk verdicts already known (`kit.dreaming.verdicts`),
    the rest are judged here."""
    events = sorted(events, key=_ID)
    if not events:
        return []
    junk = judge_all(events, verdicts or {})
    quotes = quotes_of(junk)
    # claims: distinct wordings in first-seen order, rewordings folded into the first
    first_of: dict[str, str] = {}
    for e in events:
        first_of.setdefault(e.claim_hash, e.snippet)
    hashes = list(first_of)
    parent = ClaimIndex([first_of[h] for h in hashes]).groups()
    identity = {h: hashes[parent[i]] for i, h in enumerate(hashes)}
    credits = HitCredits(events, reasons_of(junk), uses, tops, quotes, searches)
    quoting: dict[str, list[Quote]] = {}
    folds: dict[str, Fold] = {}
    for claim, evs, credit in credited_claims(events, identity, quotes, credits):
        folds[claim] = Fold(claim, first_of[claim])
        folds[claim].extend(evs, credit)
        for line, q in quotes_in(evs, credit, identity, quotes):
            quoting.setdefault(line, []).append(q)
    out = [fold.candidate(sorted(quoting.get(claim, []), key=_ID), junk) for claim, fold in folds.items()]
    out.sort(key=lambda c: (c.path, c.start_line, c.end_line, c.claim))
    return out


def judge_all(events: Iterable[RecallEvent], verdicts: Mapping[str, Junk | None]) -> dict[str, Junk | None]:
    """Each distinct snippet's junk verdict, in first-seen order (known ones from `verdicts`)."""
    junk: dict[str, Junk | None] = {}
    for e in events:
        if e.snippet not in junk:
            junk[e.snippet] = verdicts[e.snippet] if e.snippet in verdicts else junk_rule(e.snippet)
    return junk


def reasons_of(junk: Mapping[str, Junk | None]) -> dict[str, str | None]:
    return {s: (j.reason if j else None) for s, j in junk.items()}


def quotes_of(junk: Mapping[str, Junk | None]) -> dict[str, str]:
    """The junk snippets that quote a promotable one (`quoted_wordings`)."""
    return quoted_wordings([s for s, j in junk.items() if j is not None], [s for s, j in junk.items() if j is None])


MIN_QUOTE_CHARS = 24  # shorter note lines are too common to tell a quote from a coincidence


def quoted_wordings(junk: Iterable[str], wordings: Iterable[str]) -> dict[str, str]:
    """Junk snippets that quote a promotable wording verbatim (a session transcript of an earlier
    answer: "**Assistant:** From your notes: <the line>"), mapped to the longest wording quoted.
    Such a hit is a recall of that line: its credit goes to the line's claim (never its text)."""
    junk = list(junk)
    if not junk:
        return {}  # nothing quotes: no wording is normalised (a log without junk)
    norms = {w: normalise_claim(w) for w in wordings}
    norms = {w: n for w, n in norms.items() if len(n) >= MIN_QUOTE_CHARS}
    by_word: dict[str, list[str]] = {}
    for w, n in norms.items():
        first = min(n.split(), key=lambda t: (-len(t), t))  # index each wording under its longest word
        by_word.setdefault(first, []).append(w)
    out = {}
    for s in junk:
        text = normalise_claim(s)
        found = [w for word in set(text.split()) for w in by_word.get(word, ()) if norms[w] in text]
        if found:
            out[s] = max(found, key=lambda w: (len(norms[w]), w))
    return out


@dataclass(frozen=True)
class Quote:
    """An event that quotes a candidate's claim (a junk hit: see `quoted_wordings`), as its credit
    bookkeeping needs it."""

    id: int
    day: str
    query_hash: str
    credit: float
    used: bool
    turn: tuple

    @classmethod
    def of(cls, e: RecallEvent, credit: Credit) -> Quote:
        return cls(e.id, e.day, e.query_hash, credit[0], credit[1], credit[3])


class Fold:
    """One candidate's events folded in (time, id) order: `add` each own event, then `candidate()`
    with the events quoting it. `state()` / `from_state()` keep a fold between processes, so a
    dream resumes it with the events logged since (`kit.dreaming.checkpoint`) and gets exactly the
    candidate a fold of every event gives — the same additions in the same order."""

    def __init__(self, claim: str, first: str):
        self.claim = claim
        self.first = first  # the wording whose hash is `claim`
        self.count = 0
        self.first_ts = 0.0
        self.top = 0.0
        self.total = 0.0  # summed search scores, in event order
        self.credit = 0.0  # summed credit of its own events, in event order
        self.used = 0
        self.queries: dict[str, None] = {}  # distinct query texts, first-seen order
        self.query_hashes: set[str] = set()
        self.days: set[str] = set()
        self.hashes: set[str] = {claim}
        # one question, one recall: a turn's searches (active recall, the agent's own, archive quotes)
        # count once, at their best hit; a day or a query counts only when one hit there answered
        self.turn_credit: dict[tuple, float] = {}
        # days whose turns are all folded and that nothing more can touch, as their summed credit
        # (a fold kept by a checkpoint: `state(closed=True)`)
        self.closed: dict[str, float] = {}
        self.best_day: dict[str, float] = {}
        self.best_query: dict[str, float] = {}
        # its own events' (id, credit, used) as columns (`EventCredits`)
        self.own_ids, self.own_credits, self.own_used = array("q"), array("d"), bytearray()
        self.places: dict[tuple[str, int, int], None] = {}  # every location, latest first
        self.last: RecallEvent | None = None
        self.tags: tuple[str, ...] | None = None  # concept_tags(last.snippet), once per wording

    def add(self, e: RecallEvent, credit: Credit) -> None:
        """The next own event (in (ts, id) order) with its credit (`HitCredits.of`)."""
        self.extend((e,), (credit,))

    def extend(self, events: Sequence[RecallEvent], credits: Sequence[Credit]) -> None:
        """The next own events, in (ts, id) order, with their credits (`HitCredits.of`, in the same
        order). The sets and first-seen orders are taken a column at a time, the sums and maxima in
        one loop: a dream folds every event of the log, and a call per event was a tenth of a build."""
        evs = events
        if not evs:
            return
        self.queries.update(dict.fromkeys(map(_QUERY, evs)))  # new queries after the known, first-seen order
        self.query_hashes.update(map(_QUERY_HASH, evs))
        self.days.update(map(_DAY, evs))
        self.hashes.update(map(_CLAIM_HASH, evs))
        if self.count == 0:
            self.first_ts, self.top, self.total = evs[0].ts, evs[0].score, 0.0
        self.count += len(evs)
        turn_credit, best_day, best_query = self.turn_credit, self.best_day, self.best_query
        top, total, credit_sum, used = self.top, self.total, self.credit, self.used
        for e, (c, hit_used, _, turn) in zip(evs, credits, strict=True):
            score = e.score
            total += score  # in event order, one addition at a time (the checkpoint resumes the same sum)
            if score > top:
                top = score
            credit_sum += c
            used += hit_used
            # _count, written out: this loop runs once for every event of the log
            if c > turn_credit.get(turn, -1.0):
                turn_credit[turn] = c
            if c > best_day.get(e.day, -1.0):
                best_day[e.day] = c
            if c > best_query.get(e.query_hash, -1.0):
                best_query[e.query_hash] = c
        self.own_ids.extend(map(_ID, evs))
        self.own_credits.extend(map(_CREDIT, credits))
        self.own_used.extend(map(_USED, credits))
        self.top, self.total, self.credit, self.used = top, total, credit_sum, used
        # every location, latest last (reversed when the candidate is made): in the order of each
        # one's last event
        places = self.places
        for place in reversed(dict.fromkeys(map(_PLACE, reversed(evs)))):
            places.pop(place, None)
            places[place] = None
        if self.last is None or {*map(_SNIPPET, evs)} != {self.last.snippet}:
            self.tags = None  # the latest wording changed on the way: its tags are computed again
        self.last = evs[-1]

    def candidate(self, quoted: Sequence[Quote], junk: Mapping[str, Junk | None]) -> Candidate:
        """The candidate, with the events quoting it (in id order); the fold itself is not changed."""
        last = self.last
        assert last is not None
        turn_credit, best_day, best_query = self.turn_credit, self.best_day, self.best_query
        if quoted:  # copies: the quotes' credit is counted here, not folded in
            turn_credit, best_day, best_query = dict(turn_credit), dict(best_day), dict(best_query)
        credit, used = self.credit, self.used
        for q in quoted:
            credit += q.credit
            used += q.used
            _count(turn_credit, best_day, best_query, q.credit, q.day, q.query_hash, q.turn)
        day_credit: dict[str, float] = dict(self.closed)  # closed days come first in event order
        credit_of_day = day_credit.get
        for turn, c in turn_credit.items():
            day = turn[0]  # a turn's key starts with its day
            day_credit[day] = credit_of_day(day, 0.0) + c
        # (list comprehensions, not generators: every candidate of a dream is made here)
        enough, cap = scoring.CREDITED, scoring.DAY_CAP
        credited_days = sorted([d for d, c in day_credit.items() if best_day[d] >= enough and min(cap, c) >= enough])
        found = junk[last.snippet]
        if self.tags is None:
            self.tags = concept_tags(last.snippet)
        return Candidate(
            key=last.key, path=last.path, start_line=last.start_line, end_line=last.end_line, claim=self.claim,
            snippet=last.snippet, recall_count=self.count, total_score=self.total,
            max_score=self.top, query_hashes=frozenset(self.query_hashes),
            queries=tuple(self.queries), days=tuple(sorted(self.days)), first_ts=self.first_ts, last_ts=last.ts,
            tags=self.tags, junk=found.reason if found else None, junk_rule=found.rule if found else None,
            credit=credit, credited=scoring.saturated(day_credit),
            credited_days=tuple(credited_days),
            credited_day_credit=sum([min(cap, day_credit[d]) for d in credited_days]),
            credited_queries=frozenset([q for q, c in best_query.items() if c >= enough]),
            used=used, claims=frozenset(self.hashes), locations=tuple(reversed(self.places)),
            first_snippet=self.first,
            event_credit=self._event_credit(quoted),
        )

    def _event_credit(self, quoted: Sequence[Quote]) -> EventCredits:
        ids, credits, used = self.own_ids, self.own_credits, self.own_used
        if quoted:  # copies: the fold itself is not changed
            ids, credits, used = array("q", ids), array("d", credits), bytearray(used)
            ids.extend([q.id for q in quoted])
            credits.extend([q.credit for q in quoted])
            used.extend([bool(q.used) for q in quoted])
        return EventCredits(ids.tobytes(), credits.tobytes(), bytes(used),
                            bytes(len(self.own_used)) + b"\x01" * len(quoted))

    def state(self, *, closed: bool = False) -> dict:
        """The fold as JSON data, a copy (floats round-trip exactly). `closed`: no event yet to come (own
        or quoting) can fall on a day folded so far, so each day keeps only its summed credit."""
        turns = self.turn_credit
        days = dict(self.closed)
        if self.tags is None and self.last is not None:
            self.tags = concept_tags(self.last.snippet)
        if closed:
            for (day, *_), c in turns.items():
                days[day] = days.get(day, 0.0) + c
            turns = {}
        return {
            "claim": self.claim, "first": self.first, "count": self.count, "first_ts": self.first_ts,
            "top": self.top, "total": self.total, "credit": self.credit, "used": self.used,
            "queries": list(self.queries), "query_hashes": sorted(self.query_hashes), "days": sorted(self.days),
            "hashes": sorted(self.hashes), "turn_credit": [[list(k), c] for k, c in turns.items()],
            "closed": list(days.items()), "best_day": dict(self.best_day), "best_query": dict(self.best_query),
            "own": _pack(self.own_ids, self.own_credits, self.own_used), "places": [list(p) for p in self.places],
            "last": None if self.last is None else list(self.last),
            "tags": None if self.tags is None else list(self.tags),
        }

    @classmethod
    def from_state(cls, data: Mapping) -> Fold:
        fold = cls(data["claim"], data["first"])
        fold.count, fold.first_ts, fold.top = data["count"], data["first_ts"], data["top"]
        fold.total, fold.credit, fold.used = data["total"], data["credit"], data["used"]
        fold.queries = dict.fromkeys(data["queries"])
        fold.query_hashes, fold.days, fold.hashes = set(data["query_hashes"]), set(data["days"]), set(data["hashes"])
        fold.turn_credit = {tuple(k): c for k, c in data["turn_credit"]}
        fold.closed = dict(data["closed"])
        fold.best_day, fold.best_query = dict(data["best_day"]), dict(data["best_query"])
        fold.own_ids, fold.own_credits, fold.own_used = _unpack(data["own"])
        fold.places = dict.fromkeys(tuple(p) for p in data["places"])
        fold.last = None if data["last"] is None else RecallEvent(*data["last"])
        fold.tags = None if data.get("tags") is None else tuple(data["tags"])
        return fold


def _pack(ids: array, credits: array, used: bytearray) -> list[str]:
    """A fold's own (id, credit, used) columns as three base64 strings: a tenth of the JSON to parse."""
    return [base64.b64encode(part).decode("ascii") for part in (ids.tobytes(), credits.tobytes(), bytes(used))]


def _unpack(packed: Sequence[str]) -> tuple[array, array, bytearray]:
    ids, credits = array("q"), array("d")
    ids.frombytes(base64.b64decode(packed[0]))
    credits.frombytes(base64.b64decode(packed[1]))
    used = bytearray(base64.b64decode(packed[2]))
    if not len(ids) == len(credits) == len(used):
        raise ValueError("a fold's own columns differ in length")
    return ids, credits, used


def _count(turn_credit: dict, best_day: dict, best_query: dict, c: float, day: str, query: str, turn: tuple) -> None:
    # the credit bookkeeping shared by a candidate's own events and the ones quoting it
    if c > turn_credit.get(turn, -1.0):
        turn_credit[turn] = c
    if c > best_day.get(day, -1.0):
        best_day[day] = c
    if c > best_query.get(query, -1.0):
        best_query[query] = c
