"""Dreaming's own tables in `.kit/state.db` (component "dreaming").

phase_hits: one row per candidate, phase and day — so a phase counts at most once a day.
dream_vectors: embeddings of candidate texts, so a night only embeds what it has not seen.
promotions: every entry Deep wrote, with its status: active (in MEMORY.md), retired (moved to
the archive by the cap), superseded (replaced by a newer value, archived; `note` says by what),
demoted (the user deleted it: never promoted again) or rejected (the user rejected it in
`kit memory verify`). Identity is the claim; `key` is where the entry's line was when written.
verify: the "to verify" queue — candidates that contradict an entry of MEMORY.md without saying
they replace it, waiting for `kit memory verify accept|reject`.
junk: each recalled snippet's junk verdict under one version of the rules (`kit.dreaming.verdicts`),
so a dream judges only the snippets it has not seen.
checkpoint: what the last dream derived from the recall log (one row, `kit.dreaming.checkpoint`),
so the next one reads only the days since.
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


DREAMING_V3 = """ALTER TABLE dream_promotions ADD COLUMN note TEXT NOT NULL DEFAULT '';
CREATE TABLE dream_verify (
  id INTEGER PRIMARY KEY, claim TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL,
  old_key TEXT NOT NULL, old_claim TEXT NOT NULL, old_text TEXT NOT NULL, reason TEXT NOT NULL,
  score REAL NOT NULL, recalls INTEGER NOT NULL, queries INTEGER NOT NULL, last_recall_day TEXT NOT NULL,
  day TEXT NOT NULL, status TEXT NOT NULL, status_day TEXT NOT NULL,
  UNIQUE (claim, old_claim))"""

DREAMING_V4 = """CREATE TABLE dream_junk (
  hash TEXT NOT NULL, rules TEXT NOT NULL, rule TEXT, reason TEXT, PRIMARY KEY (hash, rules))"""

DREAMING_V5 = """CREATE TABLE dream_checkpoint (version TEXT NOT NULL, data TEXT NOT NULL)"""

DEMOTED = frozenset({"demoted", "rejected"})  # never promoted again


def ensure_schema(db: StateDB) -> None:
    db.migrate("dreaming", [DREAMING_V1, DREAMING_V2, DREAMING_V3, DREAMING_V4, DREAMING_V5])


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
    note: str = ""


@dataclass(frozen=True)
class VerifyItem:
    """A candidate that contradicts `old_text` (a MEMORY.md entry, or a line of your own when
    `old_key` is empty) without saying it replaces it."""

    id: int
    claim: str
    key: str
    text: str
    old_key: str
    old_claim: str
    old_text: str
    reason: str
    score: float
    recalls: int
    queries: int
    last_recall_day: str
    day: str
    status: str  # pending | accepted | rejected | kept_both
    status_day: str

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


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


def _has(db: StateDB, table: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is not None


def promotions(db: StateDB, status: str | None = None) -> list[Promotion]:
    if not _has(db, "dream_promotions"):
        return []
    sql = "SELECT * FROM dream_promotions"
    params: tuple = ()
    if status:
        sql += " WHERE status = ?"
        params = (status,)
    rows = db.execute(sql + " ORDER BY promoted_day, key, claim", params).fetchall()
    return [Promotion(**dict(r)) for r in rows]


def upsert_promotion(db: StateDB, p: Promotion) -> None:
    db.execute(
        "INSERT INTO dream_promotions(key, claim, snippet, score, recalls, queries, promoted_day, last_recall_day,"
        " status, status_day, note) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(key, claim) DO UPDATE SET"
        " snippet=excluded.snippet, score=excluded.score, recalls=excluded.recalls, queries=excluded.queries,"
        " promoted_day=excluded.promoted_day, last_recall_day=excluded.last_recall_day,"
        " status=excluded.status, status_day=excluded.status_day, note=excluded.note",
        (p.key, p.claim, p.snippet, p.score, p.recalls, p.queries, p.promoted_day, p.last_recall_day,
         p.status, p.status_day, p.note),
    )


def set_status(db: StateDB, key: str, claim: str, status: str, day: date, note: str | None = None) -> None:
    if note is None:
        db.execute("UPDATE dream_promotions SET status = ?, status_day = ? WHERE key = ? AND claim = ?",
                   (status, day.isoformat(), key, claim))
    else:
        db.execute("UPDATE dream_promotions SET status = ?, status_day = ?, note = ? WHERE key = ? AND claim = ?",
                   (status, day.isoformat(), note, key, claim))


def verify_items(db: StateDB, status: str | None = None) -> list[VerifyItem]:
    if not _has(db, "dream_verify"):
        return []
    sql, params = "SELECT * FROM dream_verify", ()
    if status:
        sql, params = sql + " WHERE status = ?", (status,)
    return [VerifyItem(**dict(r)) for r in db.execute(sql + " ORDER BY id", params).fetchall()]


def queue_verify(db: StateDB, item: VerifyItem) -> bool:
    """Queue `item` (its id is assigned); False when this pair was queued before (whatever became of it)."""
    cur = db.execute(
        "INSERT OR IGNORE INTO dream_verify(claim, key, text, old_key, old_claim, old_text, reason, score, recalls,"
        " queries, last_recall_day, day, status, status_day) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (item.claim, item.key, item.text, item.old_key, item.old_claim, item.old_text, item.reason, item.score,
         item.recalls, item.queries, item.last_recall_day, item.day, item.status, item.status_day),
    )
    return cur.rowcount > 0


def set_verify_status(db: StateDB, item_id: int, status: str, day: date) -> None:
    db.execute("UPDATE dream_verify SET status = ?, status_day = ? WHERE id = ?", (status, day.isoformat(), item_id))


def set_snippet(db: StateDB, key: str, claim: str, snippet: str) -> None:
    db.execute("UPDATE dream_promotions SET snippet = ? WHERE key = ? AND claim = ?", (snippet, key, claim))
