"""The recall log: one row in `.kit/state.db` per search hit on a daily note (spec §7).

Events, not aggregates: dreaming derives recall counts, distinct queries and days from these rows,
and `kit memory explain` can show the history of one candidate.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kit import clock
from kit.fsutil import sha1_hex
from kit.memory.notes import is_daily_note

COMPONENT = "recall"
SOURCES = ("tool", "active", "cli")

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

MIGRATIONS = (SCHEMA_V1,)

_KIT_COMMENT = re.compile(r"<!--\s*kit:.*?-->", re.DOTALL)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?", re.MULTILINE)


@dataclass(frozen=True)
class RecallEvent:
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
    source: str  # tool | active | cli

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def ensure_schema(db) -> None:
    """Create or upgrade the recall tables; `db` is a kit.state.StateDB."""
    db.migrate(COMPONENT, MIGRATIONS)


def normalise_claim(text: str) -> str:
    """NFKC, lower-case, without list markers and Kit comments, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text)
    text = _KIT_COMMENT.sub(" ", text)
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
    they are already long-term memory, there is nothing to promote.
    """
    if source not in SOURCES:
        raise ValueError(f"recall source must be one of {', '.join(SOURCES)}, not {source!r}")
    day = clock.today().isoformat()
    ts = clock.timestamp()
    qhash = query_hash(query)
    rows = []
    for hit in results:
        path = _field(hit, "path")
        if not is_daily_note(path):
            continue
        start, end = int(_field(hit, "start_line")), int(_field(hit, "end_line"))
        snippet = _field(hit, "snippet")
        rows.append(
            (candidate_key(path, start, end), path, start, end, snippet, claim_hash(snippet),
             query, qhash, float(_field(hit, "score")), day, ts, source)
        )
    if not rows:
        return 0
    ensure_schema(db)
    with db.transaction():
        db.conn.executemany(
            "INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, "
            "query_hash, score, day, ts, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
    return len(rows)


def events(db, since_day: str | None = None) -> list[RecallEvent]:
    """All recall events (optionally from `since_day` on, inclusive), oldest first."""
    ensure_schema(db)
    columns = ", ".join(RecallEvent.__dataclass_fields__)
    if since_day:
        rows = db.execute(f"SELECT {columns} FROM recall_events WHERE day >= ? ORDER BY id", (since_day,))
    else:
        rows = db.execute(f"SELECT {columns} FROM recall_events ORDER BY id")
    return [RecallEvent(*tuple(r)) for r in rows]


def counts(db) -> dict[str, Any]:
    """Totals for `kit memory status`: events, distinct keys, and events per source."""
    ensure_schema(db)
    total = db.execute("SELECT COUNT(*), COUNT(DISTINCT key), COUNT(DISTINCT day) FROM recall_events").fetchone()
    by_source = {r[0]: r[1] for r in db.execute("SELECT source, COUNT(*) FROM recall_events GROUP BY source ORDER BY source")}
    return {"events": total[0], "keys": total[1], "days": total[2], "by_source": by_source}
