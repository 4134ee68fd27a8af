"""Candidates from the last dream's checkpoint and the recall log since — exactly the candidates
`build_candidates` gives for the whole log, without reading the whole log.

A dream keeps in state.db (`dream_checkpoint`, one row) what it derived from the log: every
claim's identity, each candidate's fold (`candidates.Fold`: its events' credit and counts,
folded in order) over the events of the days before the log's last day (the *cut*), the events
quoting it before the cut, the distinct snippets and which junk ones quote a note line. The
next dream reads only the events, uses and searches of the days from the cut on, credits them
(a credit depends only on its own day: `candidates.HitCredits`), groups the new wordings
against the known claims (`claims.ClaimIndex`: a text's claim depends only on the texts before
it) and resumes the folds — the same additions in the same order as a fold of every event.

It is used only when that is provably so; anything else rebuilds from the whole log:
- the checkpoint was made by other code (`VERSION`: a hash of the source the candidates depend
  on, the junk rules included);
- the log below the checkpoint's marks changed (row count and last id of each table);
- a row logged since is dated before the cut (a past day's credit could change);
- the log gained its first searches (turns are then marked by searches, not active events);
- a search of the tail has an event dated before the cut;
- a snippet known before now quotes another note line (new wordings: its ranks change);
- a new event sorts before a candidate's last folded one.
A hit's credit is measured against its line's best score up to it (`scoring.recall_credit`'s
`own`), so a better score tonight never changes a folded credit: the checkpoint keeps each line's
best score before the cut, and the tail goes on from there.

A dry run reads the checkpoint, never writes it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.dreaming import candidates as cands_module
from kit.dreaming.candidates import (
    Candidate,
    Fold,
    HitCredits,
    Quote,
    credited_claims,
    line_of,
    quotes_in,
    quotes_of,
    reasons_of,
)
from kit.dreaming.claims import ClaimIndex
from kit.dreaming.junk import Junk
from kit.memory.recall import RecallEvent, RecallSearch, RecallUse, read_events

TABLES = ("recall_events", "recall_uses", "recall_searches")


@functools.cache
def version() -> str:
    """A hash of the source of every module a candidate depends on (a pure memo: the source does
    not change while the process runs)."""
    from kit.dreaming import claims, scoring, tags
    from kit.dreaming.verdicts import rules_version
    from kit.memory import recall

    digest = hashlib.sha1(rules_version().encode())
    for module in (cands_module, claims, scoring, tags, recall):
        digest.update(Path(module.__file__).read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Built:
    """Tonight's candidates, the checkpoint to keep (None: keep the stored one, or none can be
    made) and how they were made (`resumed`: from a checkpoint; `events`: events read)."""

    candidates: list[Candidate]
    checkpoint: dict[str, Any] | None
    resumed: bool
    events: int


def marks(db) -> dict[str, list[int] | None] | None:
    """(rows, last id) of each recall table present; None without a recall log."""
    have = {r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name IN (?, ?, ?)", TABLES)}
    if "recall_events" not in have:
        return None
    # two subqueries: COUNT(*) alone counts the entries of an index's pages and MAX(id) reads the last row,
    # where one SELECT of both stepped through every row (a hundred times as long: 2 ms of 20,000)
    return {t: list(db.execute(f"SELECT (SELECT COUNT(*) FROM {t}), (SELECT COALESCE(MAX(id), 0) FROM {t})").fetchone())
            if t in have else None for t in TABLES}


def stored(db) -> dict[str, Any] | None:
    """The checkpoint in state.db, if this code made it."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='dream_checkpoint'").fetchone() is None:
        return None
    row = db.execute("SELECT data FROM dream_checkpoint WHERE version = ?", (version(),)).fetchone()
    return json.loads(row[0]) if row else None


def keep(db, checkpoint: Mapping[str, Any]) -> None:
    """Replace the stored checkpoint (the caller ensured the dreaming schema). Keys sorted: the same
    log gives the same row in every process (the fleet compares state with a local dream)."""
    with db.transaction():
        db.execute("DELETE FROM dream_checkpoint")
        db.execute("INSERT INTO dream_checkpoint(version, data) VALUES (?, ?)",
                   (version(), json.dumps(checkpoint, separators=(",", ":"), sort_keys=True)))


class _Rebuild(Exception):
    """The checkpoint cannot be resumed exactly: build from the whole log."""


def build(db, judge: Callable[[list[str]], Mapping[str, Junk | None]],
          checkpoint: Mapping[str, Any] | None = None, *, keep: bool = True) -> Built:
    """The candidates of the whole log: resumed from `checkpoint` where that is exact, else built
    from every event. `judge(snippets)`: their junk verdicts (`verdicts.JunkVerdicts.judge`).
    `keep=False`: no checkpoint is made (a dry run stores none, and the fold snapshots and the
    checkpoint's data were a tenth of a build from scratch)."""
    now = marks(db)
    if now is None:
        return Built([], None, False, 0)
    if checkpoint is not None:
        try:
            return _resume(db, judge, checkpoint, now, keep)
        except _Rebuild:
            pass
    return _resume(db, judge, _EMPTY, now, keep)


_EMPTY: dict[str, Any] = {"marks": None, "cut": None, "searches": False, "snippets": [], "quotes": {},
                          "claims": [], "folds": [], "quoted": {}, "peaks": {}}


def _columns(db, table: str) -> str:
    have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    return ", ".join(c if c in have else "NULL" for c in RecallEvent._fields)


def _check(db, ck: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """Raise _Rebuild unless the log only grew since the checkpoint, from its cut on."""
    cut, was = ck["cut"], ck["marks"]
    for table in TABLES:
        old, new = was.get(table), now.get(table)
        if old is None:
            if new is not None and new[0]:
                raise _Rebuild  # a table that was not there has rows
            continue
        if new is None:
            raise _Rebuild
        count = db.execute(f"SELECT COUNT(*) FROM {table} WHERE id <= ?", (old[1],)).fetchone()[0]
        if count != old[0]:
            raise _Rebuild  # rows below the mark changed
        if db.execute(f"SELECT 1 FROM {table} WHERE id > ? AND day < ? LIMIT 1", (old[1], cut)).fetchone():
            raise _Rebuild  # a past day's credit could change
    if bool((now.get("recall_searches") or [0])[0]) != ck["searches"]:
        raise _Rebuild  # the first searches: turns are marked by them from now on


def _resume(db, judge, ck: Mapping[str, Any], now: Mapping[str, Any], keep: bool) -> Built:
    cut = ck["cut"]
    if cut is not None:
        _check(db, ck, now)
    have_uses = now.get("recall_uses") is not None
    have_searches = now.get("recall_searches") is not None
    cols = _columns(db, "recall_events")
    if cut is None:
        tail = read_events(db, f"SELECT {cols} FROM recall_events ORDER BY id")
    else:
        tail = read_events(db, f"SELECT {cols} FROM recall_events WHERE day >= ? ORDER BY id", (cut,))
    where, args = ("", ()) if cut is None else (" WHERE day >= ?", (cut,))
    uses = [RecallUse(*tuple(r)) for r in db.execute(
        f"SELECT path, start_line, end_line, kind, day, ts FROM recall_uses{where} ORDER BY id", args)] if have_uses else []
    searches = [RecallSearch(*tuple(r)) for r in db.execute(
        f"SELECT id, query_hash, top_score, results, day, ts, source FROM recall_searches{where} ORDER BY id",
        args)] if have_searches else []
    logged_searches = bool((now.get("recall_searches") or [0])[0])
    if cut is not None and searches:
        split = db.execute("SELECT 1 FROM recall_events WHERE day < ? AND search_id IN "
                           "(SELECT id FROM recall_searches WHERE day >= ?) LIMIT 1", (cut, cut)).fetchone()
        if split is not None:
            raise _Rebuild
    if not tail and cut is None:
        return Built([], None, False, 0)

    # junk verdicts and quotes over every snippet; the known snippets must quote what they did
    snippets = list(dict.fromkeys([*ck["snippets"], *(e.snippet for e in tail)]))  # first-seen order
    verdicts = judge(snippets)
    junk = {s: verdicts[s] for s in snippets}
    quotes = quotes_of(junk)
    old_quotes = ck["quotes"]
    for s in ck["snippets"]:
        if quotes.get(s) != old_quotes.get(s):
            raise _Rebuild

    # claims: the known ones keep their identity; new wordings join the earliest claim they match
    identity: dict[str, str] = {}
    first_of: dict[str, str] = {}
    roots: list[str] = []
    for h, ident, wording in ck["claims"]:
        identity[h] = ident
        first_of[h] = wording
        if h == ident:
            roots.append(h)
    fresh: list[str] = []
    for e in tail:
        if e.claim_hash not in first_of:
            first_of[e.claim_hash] = e.snippet
            fresh.append(e.claim_hash)
    if fresh:
        texts = [first_of[h] for h in roots] + [first_of[h] for h in fresh]
        order = roots + fresh
        parent = ClaimIndex(texts).groups(known=len(roots))
        for i, h in enumerate(fresh, start=len(roots)):
            identity[h] = order[parent[i]]

    # a hit is measured against its line's best score up to it (`scoring.recall_credit`'s `own`):
    # the tail goes on from each line's best score before the cut, and folded credits never change
    peaks: dict[str, float] = ck["peaks"]
    credits = HitCredits(tail, reasons_of(junk), uses, {s.id: s.top_score for s in searches}, quotes, searches,
                         logged_searches=logged_searches)

    states = {f["claim"]: f for f in ck["folds"]}
    folds: dict[str, Fold] = {}

    def fold_of(claim: str) -> Fold:
        if claim not in folds:
            folds[claim] = Fold.from_state(states[claim]) if claim in states else Fold(claim, first_of[claim])
        return folds[claim]

    # the log's last day (it may still grow): where a kept checkpoint is cut (a build keeping none has no cut)
    new_cut = (max(e.day for e in tail) if tail else cut) if keep else None
    quoted: dict[str, list[Quote]] = {c: [Quote(i, d, q, cr, bool(u), tuple(t)) for i, d, q, cr, u, t in qs]
                                      for c, qs in ck["quoted"].items()}
    # the claims some hit quotes (a fold snapshot at the cut keeps their days open)
    quoted_claims = set(quoted) | {line_of(e, identity, quotes) for e in (tail if quotes else ()) if e.snippet in quotes}
    kept_states: dict[str, dict] = dict(states)
    storable = keep
    quoting: list[tuple[str, Quote]] = []  # (the line it quotes, the quote) of the hits logged since
    for claim, evs, credit in credited_claims(tail, identity, quotes, credits, peaks):
        quoting += quotes_in(evs, credit, identity, quotes)
        fold = fold_of(claim)
        if fold.last is not None and (evs[0].ts, evs[0].id) <= (fold.last.ts, fold.last.id):
            raise _Rebuild  # a new event sorts before one already folded
        if not keep:
            fold.extend(evs, credit)
            continue
        kept_states.pop(claim, None)
        # the new cut: the fold up to it is what the next dream resumes
        at = next((i for i, e in enumerate(evs) if e.day >= new_cut), len(evs))
        if any(e.day < new_cut for e in evs[at:]):
            storable = False  # an event before the cut sorts after one from it: no cut in (ts, id) order
        fold.extend(evs[:at], credit[:at])
        if at < len(evs) and not fold.count:
            fold.extend(evs[at:], credit[at:])
            continue
        kept_states[claim] = fold.state(closed=claim not in quoted_claims)
        fold.extend(evs[at:], credit[at:])
    for line, q in sorted(quoting, key=lambda lq: lq[1].id):  # in log order
        quoted.setdefault(line, []).append(q)
    for claim in states:
        fold_of(claim)
    out = [fold.candidate(sorted(quoted.get(claim, []), key=lambda q: q.id), junk) for claim, fold in folds.items()]
    out.sort(key=lambda c: (c.path, c.start_line, c.end_line, c.claim))

    new_ck = None
    if tail and storable and now != ck["marks"]:
        # each line's best score before the new cut (a quote's hits are its line's): where the
        # next dream's re-read of the last day goes on from
        peak_at_cut = dict(peaks)
        for e in tail:
            if e.day < new_cut and e.score > peak_at_cut.get(line := line_of(e, identity, quotes), 0.0):
                peak_at_cut[line] = e.score
        new_ck = {
            "marks": dict(now), "cut": new_cut, "searches": logged_searches, "snippets": snippets,
            "quotes": {s: w for s, w in quotes.items()},
            "claims": [[h, identity[h], first_of[h]] for h in first_of],
            "folds": list(kept_states.values()),
            "peaks": peak_at_cut,
            "quoted": {c: [[q.id, q.day, q.query_hash, q.credit, q.used, list(q.turn)] for q in qs if q.day < new_cut]
                       for c, qs in quoted.items()},
        }
    return Built(out, new_ck, cut is not None, len(tail))
