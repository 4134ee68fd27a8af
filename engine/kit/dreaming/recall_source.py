"""The recall log as dreaming reads it.

The memory package owns the `recall_events` table (component "recall"). When `kit.memory.recall`
is importable we use it; otherwise this adapter applies the very same migration and helpers from
the shared contract, so dreaming works (and is testable) on its own.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from kit.fsutil import sha1_hex
from kit.state import StateDB

RECALL_V1 = """CREATE TABLE recall_events (
  id INTEGER PRIMARY KEY, key TEXT NOT NULL, path TEXT NOT NULL,
  start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, snippet TEXT NOT NULL,
  claim_hash TEXT NOT NULL, query TEXT NOT NULL, query_hash TEXT NOT NULL, score REAL NOT NULL,
  day TEXT NOT NULL, ts REAL NOT NULL, source TEXT NOT NULL);
CREATE INDEX recall_events_key ON recall_events(key);
CREATE INDEX recall_events_day ON recall_events(day)"""

_KIT_COMMENT = re.compile(r"<!--\s*kit:.*?-->", re.S)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?", re.M)


@dataclass(frozen=True)
class RecallEvent:
    id: int
    key: str
    path: str
    start_line: int
    end_line: int
    snippet: str
    claim_hash: str
    query: str
    query_hash: str
    score: float
    day: str
    ts: float
    source: str


def _memory_recall():
    try:
        from kit.memory import recall  # type: ignore[attr-defined]
    except ImportError:
        return None
    return recall


def ensure_schema(db: StateDB) -> None:
    mod = _memory_recall()
    if mod is not None:
        mod.ensure_schema(db)
        return
    db.migrate("recall", [RECALL_V1])


def normalise_claim(text: str) -> str:
    mod = _memory_recall()
    if mod is not None:
        return mod.normalise_claim(text)
    text = unicodedata.normalize("NFKC", text)
    text = _KIT_COMMENT.sub(" ", text)
    text = _LIST_MARKER.sub("", text)
    return " ".join(text.lower().split())


def claim_hash(text: str) -> str:
    mod = _memory_recall()
    if mod is not None:
        return mod.claim_hash(text)
    return sha1_hex(normalise_claim(text), 12)


def query_hash(query: str) -> str:
    return sha1_hex(query.lower(), 12)


def events(db: StateDB, since_day: str | None = None) -> list[RecallEvent]:
    """All recall events (optionally from `since_day` on), oldest first."""
    ensure_schema(db)
    sql = (
        "SELECT id, key, path, start_line, end_line, snippet, claim_hash, query, query_hash, score, day, ts,"
        " source FROM recall_events"
    )
    params: tuple = ()
    if since_day:
        sql += " WHERE day >= ?"
        params = (since_day,)
    rows = db.execute(sql + " ORDER BY ts, id", params).fetchall()
    return [RecallEvent(*tuple(r)) for r in rows]


def insert_event(db: StateDB, *, path: str, start_line: int, end_line: int, snippet: str, query: str,
                 score: float, day: str, ts: float, source: str = "tool") -> None:
    """Insert one event exactly as the memory package records it (tests, demo and bench use this)."""
    ensure_schema(db)
    db.execute(
        "INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, query_hash,"
        " score, day, ts, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (f"{path}:{start_line}:{end_line}", path, start_line, end_line, snippet, claim_hash(snippet), query,
         query_hash(query), score, day, ts, source),
    )
