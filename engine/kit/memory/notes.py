"""Which files are daily notes, and which day each is about: a leaf of the memory package, so
the chunker, search and the recall log can ask without importing the note writer."""

from __future__ import annotations

import re
from datetime import date

DAILY_RE = re.compile(r"^memory/(\d{4}-\d{2}-\d{2})(?:-([^/]+))?\.md$")
MEMORY_FILE = "MEMORY.md"
ARCHIVE_FILE = "memory/archive/promoted.md"  # entries dreaming moved out of MEMORY.md


def note_date(rel: str) -> date | None:
    """The date a daily note is about, from its name; None for any other path."""
    match = DAILY_RE.match(rel)
    if not match:
        return None
    try:
        return date.fromisoformat(match.group(1))
    except ValueError:  # memory/2026-13-45.md is not a daily note
        return None


def impossible_date(rel: str) -> str | None:
    """The YYYY-MM-DD of a path named like a daily note whose date does not exist
    (memory/2026-02-30.md), else None: such a file is searched as an undated note."""
    match = DAILY_RE.match(rel)
    return match.group(1) if match and note_date(rel) is None else None


def is_daily_note(rel: str) -> bool:
    return note_date(rel) is not None


def one_fact_per_item(rel: str) -> bool:
    """Files whose list items and paragraphs are facts each: the daily notes, MEMORY.md and the
    archive of retired entries (chunked by claim, so a hit is the one fact that answered)."""
    return rel in (MEMORY_FILE, ARCHIVE_FILE) or is_daily_note(rel)
