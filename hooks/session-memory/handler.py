"""session-memory: archive what the user stated in a session as memory/YYYY-MM-DD-<slug>.md.

The archive is an extractive summary (kit.memory.archive): the user's decisions, preferences,
identifiers and facts, in their words. Questions, requests, chatter and the assistant's replies
are never written, so a model's wrong answer cannot come back later as memory.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from kit import clock
from kit.errors import ConflictError
from kit.fsutil import create_file, safe_join
from kit.memory.archive import render, summarise

MAX_MESSAGES = 200  # the conversation the event carries; the summary keeps at most archive.MAX_ITEMS
MAX_SLUG_WORDS = 6
MAX_SLUG_CHARS = 48


def slugify(text: str) -> str:
    """Lower-case ASCII words of the text, joined by hyphens; 'session' when nothing is left."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = re.findall(r"[a-z0-9]+", folded)[:MAX_SLUG_WORDS]
    slug = "-".join(words)[:MAX_SLUG_CHARS].strip("-")
    return slug or "session"


def _names(day: str, slug: str):
    yield f"memory/{day}-{slug}.md"
    n = 2
    while True:
        yield f"memory/{day}-{slug}-{n}.md"
        n += 1


def _write_new(root: Path, day: str, slug: str, text: str) -> str:
    """Create the first free name: create-only, so two archives at once never overwrite each other
    (and a reader never sees half a file: create_file writes aside, then links into place)."""
    for rel in _names(day, slug):
        target = safe_join(root, rel)
        if target.exists():
            continue
        try:
            create_file(target, text, display=rel)
        except ConflictError:
            continue
        return rel
    raise AssertionError("unreachable")


def handle(event):
    data = event.data or {}
    messages = [m for m in data.get("messages") or [] if isinstance(m, dict)][-MAX_MESSAGES:]
    summary = summarise(messages)
    if not summary.first_user:
        return None
    now = clock.now()
    day = now.date().isoformat()
    reason = data.get("reason") or event.type.replace("command:", "/")
    text = render(summary, day=day, time=now.strftime("%H:%M"), session_id=data.get("session_id"), reason=reason)
    if not text:  # the user stated nothing to keep: questions and chatter are not memory
        return {"written": None, "summary": summary.to_json()}
    rel = _write_new(Path(event.workspace), day, slugify(summary.first_user), text)
    return {"written": rel, "summary": summary.to_json()}
