"""Dreaming's own tables in `.kit/state.db` (component "dreaming").

phase_hits: one row per candidate, phase and day — so a phase counts at most once a day.
dream_vectors: embeddings of candidate texts, so a night only embeds what it has not seen.
promotions: every entry Deep wrote, with its status: active (in MEMORY.md), retired (moved to
the archive by the cap) or demoted (the user deleted it: never promoted again, by key or claim).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from kit.state import StateDB

DREAMING_V1 = """CREATE TABLE dream_phase_hits (
  cand TEXT NOT NULL, key TEXT NOT NULL, claim TEXT NOT NULL, phase TEXT NOT NULL, day TEXT NOT NULL,
  PRIMARY KEY (cand, phase, day));
CREATE TABLE dream_promotions (
  key TEXT NOT NULL, claim TEXT NOT NULL, snippet TEXT NOT NULL, score REAL NOT NULL,
  recalls INTEGER NOT NULL, queries INTEGER NOT NULL, promoted_day TEXT NOT NULL,
  last_recall_day TEXT NOT NULL, status TEXT NOT NULL, status_day TEXT NOT NULL,
  PRIMARY KEY (key, claim));
CREATE INDEX dream_promotions_claim ON dream_promotions(claim)"""


DREAMING_V2 = """CREATE TABLE dream_vectors (
  model TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL, day TEXT NOT NULL, PRIMARY KEY (model, hash))"""


def ensure_schema(db: StateDB) -> None:
    db.migrate("dreaming", [DREAMING_V1, DREAMING_V2])


@dataclass(frozen=True)
class PhaseStats:
    hits: int
    last_day: str | None


@dataclass(frozen=True)
class Promotion:
    key: str
    claim: str
    snippet: str
    score: float
    recalls: int
    queries: int
    promoted_day: str
    last_recall_day: str
    status: str
    status_day: str


def record_hits(db: StateDB, phase: str, day: date, cands: Iterable[tuple[str, str, str]]) -> int:
    """Record a phase hit for each (cand, key, claim) today; returns how many were new."""
    new = 0
    with db.transaction():
        for cand, key, claim in cands:
            cur = db.execute(
                "INSERT OR IGNORE INTO dream_phase_hits(cand, key, claim, phase, day) VALUES (?,?,?,?,?)",
                (cand, key, claim, phase, day.isoformat()),
            )
            new += cur.rowcount
    return new


def phase_stats(db: StateDB, phase: str, *, until: date | None = None) -> dict[str, PhaseStats]:
    sql = "SELECT cand, COUNT(*), MAX(day) FROM dream_phase_hits WHERE phase = ?"
    params: list = [phase]
    if until is not None:
        sql += " AND day <= ?"
        params.append(until.isoformat())
    rows = db.execute(sql + " GROUP BY cand", params).fetchall()
    return {r[0]: PhaseStats(int(r[1]), r[2]) for r in rows}


def promotions(db: StateDB, status: str | None = None) -> list[Promotion]:
    sql = "SELECT * FROM dream_promotions"
    params: tuple = ()
    if status:
        sql += " WHERE status = ?"
        params = (status,)
    rows = db.execute(sql + " ORDER BY promoted_day, key, claim", params).fetchall()
    return [Promotion(**dict(r)) for r in rows]


def upsert_promotion(db: StateDB, p: Promotion) -> None:
    db.execute(
        "INSERT INTO dream_promotions VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(key, claim) DO UPDATE SET"
        " snippet=excluded.snippet, score=excluded.score, recalls=excluded.recalls, queries=excluded.queries,"
        " promoted_day=excluded.promoted_day, last_recall_day=excluded.last_recall_day,"
        " status=excluded.status, status_day=excluded.status_day",
        (p.key, p.claim, p.snippet, p.score, p.recalls, p.queries, p.promoted_day, p.last_recall_day,
         p.status, p.status_day),
    )


def set_status(db: StateDB, key: str, claim: str, status: str, day: date) -> None:
    db.execute(
        "UPDATE dream_promotions SET status = ?, status_day = ? WHERE key = ? AND claim = ?",
        (status, day.isoformat(), key, claim),
    )


def set_snippet(db: StateDB, key: str, claim: str, snippet: str) -> None:
    db.execute("UPDATE dream_promotions SET snippet = ? WHERE key = ? AND claim = ?", (snippet, key, claim))
