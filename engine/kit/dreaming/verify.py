"""The "to verify" queue: contradictions go to the user, not into memory.

Deep queues a candidate here instead of promoting it when it states a different value for the
subject of something MEMORY.md already says, and the notes do not settle which is right: it
contradicts a line of your own (Kit never edits your text unasked), or a promoted entry without
saying it changed and without being newer. `kit memory verify` lists the queue;

- **accept N** promotes the new text and retires the old one — a promoted entry, or your own line —
  to `memory/archive/promoted.md` with `superseded_by=` and `verified=` provenance;
- **reject N** keeps MEMORY.md as it is; the new text is never promoted (nor queued) again;
- **keep-both N**: both are true (two facts, not one with two values) — MEMORY.md keeps the old line
  and the pair is never queued again; the new text goes back to being a candidate like any other,
  which the next dream promotes if it passes the gates, without comparing it with that line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kit import clock
from kit.core import WorkspaceCore
from kit.dreaming import deep, managed, store
from kit.dreaming.writer import Files, write_memory
from kit.errors import KitError, NotFoundError


@dataclass(frozen=True)
class VerifyOutcome:
    item: store.VerifyItem
    action: str  # accepted | rejected | kept_both
    changed: tuple[str, ...]
    archived: str | None  # the text that went to the archive (accept)
    git: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "item": self.item.to_json(), "changed": list(self.changed),
                "archived": self.archived, "git": self.git}


def items(ws: WorkspaceCore, *, everything: bool = False) -> list[store.VerifyItem]:
    """The pending items (all of them, accepted, rejected and kept both too, with `everything`)."""
    if not (ws.kit_dir / "state.db").exists():
        return []
    db = ws.open_state()
    try:
        return store.verify_items(db, None if everything else "pending")
    finally:
        db.close()


def pending(ws: WorkspaceCore) -> list[store.VerifyItem]:
    return items(ws)


def _item(db, item_id: int) -> store.VerifyItem:
    found = next((v for v in store.verify_items(db) if v.id == item_id), None)
    if found is None:
        raise NotFoundError(f"nothing to verify has id {item_id}; `kit memory verify` lists the queue")
    if found.status != "pending":
        raise KitError(f"#{item_id} was already {found.status} on {found.status_day}")
    return found


def accept(ws: WorkspaceCore, item_id: int) -> VerifyOutcome:
    """Promote item `item_id`'s text; retire what it contradicts to the archive."""
    with _locked_item(ws, item_id) as (db, item):
        today = clock.today()
        files = Files(ws)
        text = files.read(deep.MEMORY_FILE) or ""
        old_entry = next((e for e in managed.parse(text).entries if (e.key, e.claim) == (item.old_key, item.old_claim)),
                         None) if item.old_key else None
        new = managed.make_entry(key=item.key, claim=item.claim, score=item.score, recalls=item.recalls,
                                 queries=item.queries, day=today.isoformat(), text=item.text,
                                 extra=(("verified", today.isoformat()),))
        archived: managed.Entry | None = None
        if old_entry is not None:
            archived = old_entry
        elif not item.old_key and item.old_text in managed.user_lines(text):  # your own line, on your say
            archived = managed.Entry((("claim", item.old_claim), ("source", "MEMORY.md")), (f"- {item.old_text}",))
        write_memory(files, add=[new], remove=[(old_entry.key, old_entry.claim)] if old_entry else [],
                     drop_lines=[item.old_text] if archived is not None and old_entry is None else [])
        if archived is not None:
            marked = managed.Entry(archived.attrs + (("verified", today.isoformat()),), archived.body)
            files.update(deep.ARCHIVE_FILE, lambda current: deep.archive_text(
                current, [marked], today, superseded={(marked.key, marked.claim): item.key}))
        with db.transaction():
            store.set_verify_status(db, item.id, "accepted", today)
            store.upsert_promotion(db, store.Promotion(
                key=new.key, claim=item.claim, snippet=new.text, score=item.score, recalls=item.recalls,
                queries=item.queries, promoted_day=today.isoformat(), last_recall_day=item.last_recall_day,
                status="active", status_day=today.isoformat(), note=f"you accepted #{item.id}"))
            if old_entry is not None:
                store.set_status(db, old_entry.key, old_entry.claim, "superseded", today,
                                 note=f"superseded by {new.key} (you accepted #{item.id})")
        item = next(v for v in store.verify_items(db) if v.id == item_id)
    git = _commit(ws, files, f"verify: accept #{item_id} ({today.isoformat()})")
    _reindex(ws, files.changed)
    return VerifyOutcome(item, "accepted", tuple(sorted(files.changed)), archived.text if archived else None, git)


def reject(ws: WorkspaceCore, item_id: int) -> VerifyOutcome:
    """Keep MEMORY.md as it is; item `item_id`'s text is never promoted or queued again."""
    with _locked_item(ws, item_id) as (db, item):
        today = clock.today()
        with db.transaction():
            store.set_verify_status(db, item.id, "rejected", today)
            store.upsert_promotion(db, store.Promotion(
                key=item.key, claim=item.claim, snippet=item.text, score=item.score, recalls=item.recalls,
                queries=item.queries, promoted_day="", last_recall_day=item.last_recall_day, status="rejected",
                status_day=today.isoformat(), note=f"you rejected #{item.id}; MEMORY.md keeps: {item.old_text}"))
        item = next(v for v in store.verify_items(db) if v.id == item_id)
    return VerifyOutcome(item, "rejected", (), None)


def keep_both(ws: WorkspaceCore, item_id: int) -> VerifyOutcome:
    """Both lines are true: MEMORY.md keeps the old one, item `item_id`'s pair is never queued
    again, and its text is a candidate again — promoted by a dream when it passes the gates, never
    compared with the line the user kept beside it (nor called its duplicate)."""
    with _locked_item(ws, item_id) as (db, item):
        with db.transaction():
            store.set_verify_status(db, item.id, "kept_both", clock.today())
        item = next(v for v in store.verify_items(db) if v.id == item_id)
    return VerifyOutcome(item, "kept_both", (), None)


@contextmanager
def _locked_item(ws: WorkspaceCore, item_id: int) -> Iterator[tuple[Any, store.VerifyItem]]:
    """The state db and pending item `item_id`, under the dream lock (accept, reject and keep-both
    all change what a dream would do)."""
    from kit.dreaming.runner import acquire_lock

    lock = acquire_lock(ws)
    db = ws.open_state()
    try:
        store.ensure_schema(db)
        yield db, _item(db, item_id)
    finally:
        db.close()
        lock.release()


def _commit(ws: WorkspaceCore, files: Files, message: str) -> dict[str, Any] | None:
    if not ws.config.git.autocommit or not files.changed:
        return None
    from kit.dreaming.gitops import autocommit

    return autocommit(ws.root, sorted(files.changed), message).to_json()


def _reindex(ws: WorkspaceCore, changed: list[str]) -> None:
    from kit.dreaming.runner import reindex

    reindex(ws, changed)
