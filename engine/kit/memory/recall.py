"""The recall log: one row in `.kit/state.db` per search hit on a daily note (spec §7).

Events, not aggregates: dreaming derives recall counts, distinct queries and days from these rows,
and `kit memory explain` can show the history of one candidate.

Since v2 the log keeps what recall credit needs (`kit.dreaming.scoring.recall_credit`), still as
raw facts: each recorded search (`recall_searches`: its query, top score and number of results),
each hit's rank in it, and the *uses* of a hit (`recall_uses`): the agent read its lines in full
with `memory_get` (kind `read`), or its text reached the agent's reply (kind `reply`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from kit import clock
from kit.fsutil import sha1_hex
from kit.memory.notes import is_daily_note
from kit.provenance import KIT_COMMENT

COMPONENT = "recall"
SOURCES = ("tool", "active", "cli", "mcp")  # mcp: a client of `kit mcp serve` searched

SCHEMA_V1 = """CREATE TABLE recall_events (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  path TEXT NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  snippet TEXT NOT NULL,
  claim_hash TEXT NOT NULL,
  query TEXT NOT NULL,
  query_hash TEXT NOT NULL,
  score REAL NOT NULL,
  day TEXT NOT NULL,
  ts REAL NOT NULL,
  source TEXT NOT NULL);
CREATE INDEX recall_events_key ON recall_events(key);
CREATE INDEX recall_events_day ON recall_events(day)"""

SCHEMA_V2 = """CREATE TABLE recall_searches (
  id INTEGER PRIMARY KEY,
  query_hash TEXT NOT NULL,
  top_score REAL NOT NULL,
  results INTEGER NOT NULL,
  day TEXT NOT NULL,
  ts REAL NOT NULL,
  source TEXT NOT NULL);
ALTER TABLE recall_events ADD COLUMN search_id INTEGER;
ALTER TABLE recall_events ADD COLUMN rank INTEGER;
CREATE INDEX recall_events_search ON recall_events(search_id);
CREATE TABLE recall_uses (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  kind TEXT NOT NULL,
  day TEXT NOT NULL,
  ts REAL NOT NULL);
CREATE INDEX recall_uses_path ON recall_uses(path)"""

MIGRATIONS = (SCHEMA_V1, SCHEMA_V2)
USE_KINDS = ("read", "reply")
MAX_READ_LINES = 40  # a memory_get of more lines than this read a file, not a hit: no use credit
USE_WINDOW_S = 600.0  # a use counts for the searches of the ten minutes before it (one turn, give or take)

# [^\S\n]: the line's own indent (`^\s*` under MULTILINE is quadratic in blank lines)
_LIST_MARKER = re.compile(r"^[^\S\n]*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?", re.MULTILINE)


class RecallEvent(NamedTuple):
    """One hit of one search, as logged. A named tuple, not a dataclass: a dream reads every row of
    the log (tens of thousands), and building frozen dataclasses took twice as long as the query."""

    id: int
    key: str  # path:start:end
    path: str
    start_line: int
    end_line: int
    snippet: str
    claim_hash: str
    query: str
    query_hash: str
    score: float
    day: str  # YYYY-MM-DD (kit.clock)
    ts: float
    source: str  # tool | active | cli | mcp
    search_id: int | None = None  # the recorded search (None: logged before v2)
    rank: int | None = None  # 0-based position among that search's results

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


@dataclass(frozen=True)
class RecallUse:
    """The agent used a recalled hit: read its lines in full (`read`) or quoted it (`reply`)."""

    path: str
    start_line: int
    end_line: int
    kind: str  # read | reply
    day: str
    ts: float

    def covers(self, event: RecallEvent) -> bool:
        """This use is about `event`'s lines, shortly after that search (USE_WINDOW_S)."""
        return (self.path == event.path and self.day == event.day and 0 <= self.ts - event.ts <= USE_WINDOW_S
                and self.start_line <= event.start_line and event.end_line <= self.end_line)


def ensure_schema(db) -> None:
    """Create or upgrade the recall tables; `db` is a kit.state.StateDB."""
    db.migrate(COMPONENT, MIGRATIONS)


def normalise_claim(text: str) -> str:
    """NFKC, lower-case, without list markers and Kit comments, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text)
    text = KIT_COMMENT.sub(" ", text)
    text = _LIST_MARKER.sub("", text)
    return " ".join(text.lower().split())


def claim_hash(text: str) -> str:
    return sha1_hex(normalise_claim(text), 12)


def query_hash(query: str) -> str:
    return sha1_hex(query.lower(), 12)


def candidate_key(path: str, start_line: int, end_line: int) -> str:
    return f"{path}:{start_line}:{end_line}"


def _field(hit: Any, name: str) -> Any:
    if isinstance(hit, Mapping):
        return hit[name]
    return getattr(hit, name)


def record_hits(db, query: str, results: Iterable[Any], source: str) -> int:
    """Record the daily-note hits among `results` (SearchHit objects or their JSON dicts).

    Returns how many events were written. MEMORY.md and other non-daily files are skipped:
    they are already long-term memory, there is nothing to promote — but they count for the
    search's top score and each hit's rank (in the order given, best first), so a note line that
    trails a MEMORY.md entry is a side hit. A search that found only such files, or nothing, is
    still logged (in `recall_searches`, without events): when the agent searched again after an
    active recall, that recall's hits did not answer (see `kit.dreaming.candidates.HitCredits`).
    """
    if source not in SOURCES:
        raise ValueError(f"recall source must be one of {', '.join(SOURCES)}, not {source!r}")
    day = clock.today().isoformat()
    ts = clock.timestamp()
    qhash = query_hash(query)
    results = list(results)
    rows = []
    for rank, hit in enumerate(results):
        path = _field(hit, "path")
        if not is_daily_note(path):
            continue
        start, end = int(_field(hit, "start_line")), int(_field(hit, "end_line"))
        snippet = _field(hit, "snippet")
        rows.append(
            (candidate_key(path, start, end), path, start, end, snippet, claim_hash(snippet),
             query, qhash, float(_field(hit, "score")), day, ts, source, rank)
        )
    top = max((float(_field(hit, "score")) for hit in results), default=0.0)
    ensure_schema(db)
    with db.transaction():
        cur = db.execute(
            "INSERT INTO recall_searches(query_hash, top_score, results, day, ts, source) VALUES (?,?,?,?,?,?)",
            (qhash, top, len(results), day, ts, source),
        )
        search_id = cur.lastrowid
        if not rows:
            return 0
        db.conn.executemany(
            "INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, "
            "query_hash, score, day, ts, source, rank, search_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(*row, search_id) for row in rows],
        )
    return len(rows)


def record_use(db, path: str, start_line: int, end_line: int, kind: str) -> bool:
    """Log that the agent used lines of a daily note (`read` with memory_get, `reply` when they
    reached its answer). Other files and reads longer than MAX_READ_LINES are not logged."""
    if kind not in USE_KINDS:
        raise ValueError(f"recall use must be one of {', '.join(USE_KINDS)}, not {kind!r}")
    if not is_daily_note(path) or end_line < start_line or end_line - start_line + 1 > MAX_READ_LINES:
        return False
    ensure_schema(db)
    db.execute("INSERT INTO recall_uses(path, start_line, end_line, kind, day, ts) VALUES (?,?,?,?,?,?)",
               (path, int(start_line), int(end_line), kind, clock.today().isoformat(), clock.timestamp()))
    return True


_REPLY_WORD = re.compile(r"[^\W_]{3,}|\d+")
_REPLY_STOP = frozenset("the and for are was were this that with from have has you your our not but".split())


def _reply_words(text: str) -> set[str]:
    return {w for w in _REPLY_WORD.findall(normalise_claim(text)) if w not in _REPLY_STOP}


def reached_reply(snippet: str, reply: str) -> bool:
    """True when a snippet's text reached a reply: a quote or a close retelling, not a shared topic.
    At least 3 of its words are in the reply, and either three quarters of them, or half of them
    with every number it states ("Dad's number is 07700 900456")."""
    mine = _reply_words(snippet)
    theirs = _reply_words(reply)
    shared = mine & theirs
    if len(shared) < 3:
        return False
    numbers = {w for w in mine if any(ch.isdigit() for ch in w)}
    return len(shared) >= 0.75 * len(mine) or (bool(numbers) and numbers <= theirs and len(shared) >= 0.5 * len(mine))


def credit_reply(db, since_ts: float, reply: str) -> int:
    """Log a `reply` use for each hit recalled since `since_ts` (this turn) whose text reached
    `reply`; returns how many."""
    if not reply.strip():
        return 0
    ensure_schema(db)
    rows = db.execute("SELECT DISTINCT path, start_line, end_line, snippet FROM recall_events WHERE ts >= ?",
                      (since_ts,)).fetchall()
    used = {(r[0], r[1], r[2]) for r in rows if reached_reply(r[3], reply)}
    return sum(record_use(db, path, start, end, "reply") for path, start, end in sorted(used))


def uses(db) -> list[RecallUse]:
    if not _columns(db, "recall_uses"):
        return []
    rows = db.execute("SELECT path, start_line, end_line, kind, day, ts FROM recall_uses ORDER BY id")
    return [RecallUse(*tuple(r)) for r in rows]


@dataclass(frozen=True)
class RecallSearch:
    """One recorded search: its best score (MEMORY.md hits included) and how many results."""

    id: int
    query_hash: str
    top_score: float
    results: int
    day: str
    ts: float
    source: str


def searches(db) -> list[RecallSearch]:
    """Every recorded search, oldest first ([] for a log from before v2)."""
    if not _columns(db, "recall_searches"):
        return []
    rows = db.execute("SELECT id, query_hash, top_score, results, day, ts, source FROM recall_searches ORDER BY id")
    return [RecallSearch(*tuple(r)) for r in rows]


def top_scores(db) -> dict[int, float]:
    """Each recorded search's best score (MEMORY.md hits included), by search id."""
    if not _columns(db, "recall_searches"):
        return {}
    return {int(r[0]): float(r[1]) for r in db.execute("SELECT id, top_score FROM recall_searches")}


def _columns(db, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def events(db, since_day: str | None = None) -> list[RecallEvent]:
    """All recall events (optionally from `since_day` on, inclusive), oldest first.

    Reading never migrates (a dry-run dream writes nothing, not even state.db): columns a v1 log
    lacks read as None."""
    have = _columns(db, "recall_events")
    if not have:
        return []
    columns = ", ".join(c if c in have else "NULL" for c in RecallEvent._fields)
    if since_day:
        return read_events(db, f"SELECT {columns} FROM recall_events WHERE day >= ? ORDER BY id", (since_day,))
    return read_events(db, f"SELECT {columns} FROM recall_events ORDER BY id")


def read_events(db, sql: str, args: tuple = ()) -> list[RecallEvent]:
    """The rows of a query selecting RecallEvent's columns, as events (plain tuples from SQLite:
    sqlite3.Row is a third of the cost of reading the log).

    Each distinct text is one string, shared by every event that holds it: a log repeats its
    days, paths, queries and snippets thousands of times, and a copy in every row was that much
    more memory to go through, each copy hashed again wherever it was looked up. Reading takes a
    little longer, what a dream does with the events far less (a cold build of 20,000: 7 %)."""
    conn = db.conn
    plain = conn.text_factory
    conn.text_factory = _Texts().__getitem__  # the connection is this thread's alone
    try:
        return _events(conn, sql, args)
    except UnicodeDecodeError:  # not UTF-8: read as before, for sqlite3's own error
        conn.text_factory = plain
        return _events(conn, sql, args)
    finally:
        conn.text_factory = plain


def _events(conn, sql: str, args: tuple) -> list[RecallEvent]:
    cur = conn.cursor()
    cur.row_factory = None
    return list(map(_new_event, cur.execute(sql, args)))


class _Texts(dict):
    """A TEXT value's UTF-8 bytes → its text, decoded once (sqlite3 gives a `text_factory` each one)."""

    def __missing__(self, raw: bytes) -> str:
        text = self[raw] = raw.decode("utf-8")
        return text


# RecallEvent._make without its Python frame, for rows of RecallEvent's columns (a fifteenth of
# reading the log)
_new_event = functools.partial(tuple.__new__, RecallEvent)


def counts(db) -> dict[str, Any]:
    """Totals for `kit memory status`: events, distinct keys, and events per source."""
    ensure_schema(db)
    total = db.execute("SELECT COUNT(*), COUNT(DISTINCT key), COUNT(DISTINCT day) FROM recall_events").fetchone()
    by_source = {r[0]: r[1] for r in db.execute("SELECT source, COUNT(*) FROM recall_events GROUP BY source ORDER BY source")}
    return {"events": total[0], "keys": total[1], "days": total[2], "by_source": by_source}
