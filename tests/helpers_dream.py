"""Fixtures for the dreaming tests: daily notes, recall events (per the shared schema), tree digests."""

from __future__ import annotations

import hashlib
import os
from datetime import date, datetime, timedelta
from pathlib import Path

from kit.memory import recall as recall_log


def write_note(root: Path, day: str, items: list[str], *, title: str | None = None) -> dict[str, int]:
    """memory/<day>.md with one bullet per item; returns {item: line number}."""
    lines = [f"# {title or day}", ""]
    where = {}
    for item in items:
        lines.append(f"- {item}")
        where[item] = len(lines)
    (root / "memory").mkdir(exist_ok=True)
    (root / "memory" / f"{day}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def recall(ws, day: str, text: str, query: str, *, score: float = 0.8, hour: int = 10, note_day: str | None = None,
           line: int | None = None) -> None:
    """Record one recall of the bullet `text` in memory/<note_day>.md, as the memory tool would."""
    note_day = note_day or day
    rel = f"memory/{note_day}.md"
    if line is None:
        lines = (ws.root / rel).read_text(encoding="utf-8").split("\n")
        line = lines.index(f"- {text}") + 1
    ts = datetime.fromisoformat(f"{day}T{hour:02d}:00:00+00:00").timestamp()
    snippet = f"- {text}"
    db = ws.open_state()
    try:  # the row kit.memory.recall.record_hits writes, with this day and time instead of the clock's
        recall_log.ensure_schema(db)
        db.execute(
            "INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, query_hash,"
            " score, day, ts, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (recall_log.candidate_key(rel, line, line), rel, line, line, snippet, recall_log.claim_hash(snippet),
             query, recall_log.query_hash(query), score, day, ts, "tool"),
        )
    finally:
        db.close()


def at(day: str, hour: int = 12) -> str:
    return f"{day}T{hour:02d}:00:00+00:00"


def set_now(day: str, hour: int = 12) -> None:
    os.environ["KIT_NOW"] = at(day, hour)


def days(start: str, n: int) -> list[str]:
    d0 = date.fromisoformat(start)
    return [(d0 + timedelta(days=i)).isoformat() for i in range(n)]


def tree(root: Path, *, skip_kit: bool = False) -> dict[str, str]:
    """rel path -> sha1 of every file (SQLite's transient -wal/-shm files and the empty files OS locks
    live on, which stay after release, excluded)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if not p.is_file() or rel.endswith(("-wal", "-shm")) or rel.startswith((".git/", ".kit/locks/")):
            continue
        if skip_kit and rel.startswith(".kit/"):
            continue
        out[rel] = hashlib.sha1(p.read_bytes()).hexdigest()
    return out




def searched(ws, day: str, query: str, ranked: list[tuple[str, float]], *, note_day: str | None = None,
             hour: int = 10, minute: int = 0, source: str = "tool") -> int:
    """One search as memory_search records it, through the real `record_hits`: `ranked` is its
    results best first, each (bullet text in memory/<note_day>.md, score). Returns the events written."""
    rel = f"memory/{note_day or day}.md"
    lines = (ws.root / rel).read_text(encoding="utf-8").split("\n")
    hits = []
    for text, score in ranked:
        line = lines.index(f"- {text}") + 1
        hits.append({"path": rel, "start_line": line, "end_line": line, "score": score, "snippet": f"- {text}"})
    before = os.environ.get("KIT_NOW")
    os.environ["KIT_NOW"] = f"{day}T{hour:02d}:{minute:02d}:00+00:00"
    try:
        db = ws.open_state()
        try:
            return recall_log.record_hits(db, query, hits, source)
        finally:
            db.close()
    finally:
        if before is None:
            os.environ.pop("KIT_NOW", None)
        else:
            os.environ["KIT_NOW"] = before
