"""Junk verdicts kept between dreams: a snippet's verdict depends only on its text and the rules,
and the rules (the junk filter, the question rule, the threat scan) cost more than everything
else a dream does with a snippet — so each is judged once.

`JunkVerdicts` (one per workspace object, `verdicts_for(ws)`) remembers them for the process and
keeps them in state.db (`dream_junk`) between processes, under `rules_version()`: a hash of the
rules' source, so a changed rule re-judges everything and nothing stale is ever read. A dry run
reads the table, never writes it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

from kit.core import WorkspaceCore
from kit.dreaming import junk as junk_module
from kit.dreaming.junk import Junk, junk_rules
from kit.fsutil import sha1_hex


@functools.cache
def rules_version() -> str:
    """A hash of the source of every module a verdict depends on (a pure memo: the source does
    not change while the process runs)."""
    from kit import threats
    from kit.memory import questions

    digest = hashlib.sha1()
    for module in (junk_module, questions, threats):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def snippet_hash(snippet: str) -> str:
    return sha1_hex(snippet, 16)


class JunkVerdicts:
    """The junk verdicts of one workspace's recalled snippets."""

    def __init__(self) -> None:
        self._memo: dict[str, Junk | None] = {}
        self._kept: set[str] = set()  # snippets whose verdict state.db has
        self._loaded = False

    def judge(self, db, snippets: Iterable[str], *, store: bool) -> dict[str, Junk | None]:
        """Each distinct snippet's verdict (`junk_rule`); `store` keeps the new ones in state.db."""
        wanted = list(dict.fromkeys(snippets))
        missing = [s for s in wanted if s not in self._memo]
        version = rules_version()
        if missing and db is not None and not self._loaded and _has_table(db):
            stored = {h: (None if rule is None else Junk(rule, reason)) for h, rule, reason in db.execute(
                "SELECT hash, rule, reason FROM dream_junk WHERE rules = ?", (version,))}
            self._loaded = True
            for s in missing:
                h = snippet_hash(s)
                if h in stored:
                    self._memo[s] = stored[h]
                    self._kept.add(s)
            missing = [s for s in missing if s not in self._memo]
        self._memo.update(zip(missing, junk_rules(missing), strict=True))
        fresh = {s: self._memo[s] for s in wanted if s not in self._kept}  # judged by a dry run too
        if fresh and store and db is not None:
            from kit.dreaming import store as dream_store

            dream_store.ensure_schema(db)
            with db.transaction():
                db.execute("DELETE FROM dream_junk WHERE rules != ?", (version,))
                db.conn.executemany(
                    "INSERT OR REPLACE INTO dream_junk(hash, rules, rule, reason) VALUES (?,?,?,?)",
                    [(snippet_hash(s), version, j.rule if j else None, j.reason if j else None)
                     for s, j in fresh.items()])
            self._kept.update(fresh)
        return {s: self._memo[s] for s in wanted}


def _has_table(db) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='dream_junk'").fetchone() is not None


def verdicts_for(ws: WorkspaceCore) -> JunkVerdicts:
    """The workspace object's verdicts (created on first use)."""
    return ws.owned("dream-junk", JunkVerdicts)
