"""Active recall (§9): before each user turn, search memory with the user's message and put the
best snippets in a <memory-context> block on that user message.

The block goes on the user message, never in the system prompt, so the system prompt stays
byte-identical (and cacheable) across turns. Only the snippets that made it into the block are
recorded as recalls, with source `active`: a hit the model never saw is not a recall.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from kit.core import WorkspaceCore
from kit.templating import templates_for


@dataclass(frozen=True)
class RecallHit:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str

    @property
    def day(self) -> str | None:
        """The date of the daily note it comes from (shown with the fact), else None."""
        from kit.memory.notes import note_date

        found = note_date(self.path)
        return found.isoformat() if found else None


@dataclass(frozen=True)
class ActiveRecall:
    block: str  # "" when nothing was recalled
    hits: tuple[RecallHit, ...] = ()
    recorded: int = 0
    error: str | None = None
    withheld: tuple[Any, ...] = ()  # hits the threat scan kept out of the block (kit.memory.sources.Withheld)

    def apply(self, text: str) -> str:
        """The user message as the model sees it."""
        return f"{self.block}\n\n{text}" if self.block else text


_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


def _one_line(text: str) -> str:
    """One line, without the note's own list marker (the block adds its own)."""
    return _LIST_MARKER.sub("", " ".join(str(text).split()))


def select_hits(results: list[Any], max_chars: int) -> list[tuple[Any, RecallHit]]:
    """Best-first snippets while their total stays within `max_chars` (the first is cut to fit)."""
    chosen: list[tuple[Any, RecallHit]] = []
    used = 0
    for result in results:
        snippet = _one_line(getattr(result, "snippet", ""))
        if not snippet:
            continue
        room = max_chars - used
        if room <= 0:
            break
        if len(snippet) > room:
            if chosen:
                continue  # a later, shorter hit may still fit
            snippet = snippet[: max(0, room - 1)].rstrip() + "…"
        chosen.append((result, RecallHit(result.path, int(result.start_line), int(result.end_line),
                                         float(result.score), snippet)))
        used += len(snippet)
    return chosen


def active_recall(ws: WorkspaceCore, message: str, *, exclude: Collection[str] = ()) -> ActiveRecall:
    """Search memory for `message`; return the block to prepend and record what was included.

    `exclude`: files the model already has whole — the run's system prompt carries MEMORY.md
    (default kind), so recalling its chunks would only repeat it; the hits come from the other
    memory files (daily notes, extra paths)."""
    memory = ws.config.memory
    if not memory.active_recall.enabled:
        return ActiveRecall("")
    max_chars = memory.active_recall.max_chars
    if max_chars <= 0 or not message.strip():
        return ActiveRecall("")
    if exclude and not _other_memory_files(ws, exclude):
        # nothing to recall but what the prompt already carries: do not load the embedding model
        return ActiveRecall("")
    try:
        from kit.memory.service import memory_for

        wanted = memory.search.max_results
        # ask for more when some files are left out, so they do not take the places of others
        limit = wanted * 2 if exclude else None
        # screen: a flagged snippet (or a model's archived answer) never reaches the prompt
        result = memory_for(ws).search(message, limit=limit, record=False, source="active", screen=True)
    except ModuleNotFoundError as exc:
        return ActiveRecall("", error=f"memory search unavailable ({exc.name} missing)")
    results = list(getattr(result, "results", result) or [])
    withheld = tuple(w for w in getattr(result, "withheld", ()) if w.path not in exclude)
    if exclude:
        results = [r for r in results if getattr(r, "path", None) not in exclude][:wanted]
    chosen = select_hits(results, max_chars)
    if not chosen:
        return ActiveRecall("", withheld=withheld)
    hits = tuple(hit for _, hit in chosen)
    recorded = _record(ws, message, [r for r, _ in chosen])
    # the format is chosen so models do not echo it (templates/memory-context.md.j2, docs/agent.md)
    rendered = templates_for(ws).render("memory-context.md.j2", hits=hits)
    error = f"{rendered.problem}; using {rendered.fallback}" if rendered.problem else None
    return ActiveRecall(rendered.text, hits, recorded, error=error, withheld=withheld)


def _other_memory_files(ws: WorkspaceCore, exclude: Collection[str]) -> bool:
    """True when something besides `exclude` could be recalled (daily notes, archive, extra paths)."""
    if ws.config.memory.extra_paths:
        return True
    memory = ws.root / "memory"
    for path in memory.rglob("*.md"):
        rel = path.relative_to(ws.root).as_posix()
        if not rel.startswith("memory/dreaming/") and rel not in exclude:
            return True
    return False


def _record(ws: WorkspaceCore, query: str, results: list[Any]) -> int:
    from kit.memory.recall import ensure_schema, record_hits

    db = ws.open_state()
    try:
        ensure_schema(db)
        return int(record_hits(db, query, results, "active"))
    finally:
        db.close()


def credit_reply(ws: WorkspaceCore, since_ts: float, reply: str) -> int:
    """Log a `reply` use for each hit recalled during this turn (since `since_ts`) whose text
    reached the reply: dreaming gives those recalls extra credit."""
    from kit.memory.recall import credit_reply as log_reply_uses

    if not reply.strip() or not (ws.kit_dir / "state.db").exists():
        return 0
    db = ws.open_state()
    try:
        return log_reply_uses(db, since_ts, reply)
    finally:
        db.close()
