"""Daily notes: `memory/YYYY-MM-DD.md` (and `-<slug>` session archives), and appending to today's.

A note is written as a bullet under the `# YYYY-MM-DD` heading, or under `## topic` when a topic is
given. Lines above the insertion point never move; lines below it (topic sections, when a topicless
bullet joins the preamble) move down. Only today's note is ever written, so recall keys
(path:start:end) of a note are stable from the next day on. The file always ends with one newline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from kit import clock
from kit.core import WorkspaceCore
from kit.errors import KitError
from kit.memory.notes import DAILY_RE, is_daily_note, note_date  # noqa: F401 - re-exported

_TOPIC_RE = re.compile(r"^##\s+(.*?)\s*#*\s*$")


class MemoryWriteError(KitError):
    """A memory write was refused (threat scan, empty text, bad topic)."""


def daily_path(day: date | None = None) -> str:
    return f"memory/{(day or clock.today()).isoformat()}.md"


@dataclass(frozen=True)
class WriteResult:
    path: str  # workspace-relative daily note
    line: int  # 1-based first line of the new bullet
    end_line: int  # last line of the new bullet
    text: str  # the bullet as written
    topic: str | None
    created: bool  # the note did not exist before
    duplicate: bool = False  # the same bullet was already in today's note: nothing was written

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "end_line": self.end_line,
            "text": self.text,
            "topic": self.topic,
            "created": self.created,
            "duplicate": self.duplicate,
        }


def format_bullet(text: str) -> list[str]:
    """One bullet; continuation lines indented so Markdown keeps them in the same list item."""
    lines = [ln.rstrip() for ln in text.strip().replace("\r\n", "\n").split("\n")]
    lines = [ln for ln in lines if ln.strip()] or [""]
    return [f"- {lines[0].strip()}"] + [f"  {ln.strip()}" for ln in lines[1:]]


def clean_topic(topic: str | None) -> str | None:
    if topic is None:
        return None
    cleaned = " ".join(topic.split()).lstrip("#").strip()
    if not cleaned:
        return None
    if len(cleaned) > 80:
        raise MemoryWriteError("topic is longer than 80 characters")
    return cleaned


def _is_item_line(line: str) -> bool:
    return line.startswith(("- ", "* ", "+ ", "  ", "\t"))


def find_item(existing: str, bullet: list[str]) -> tuple[int, int, str] | None:
    """(first line, last line, text) of the top-level list item in `existing` that says the same
    as `bullet` after normalisation (NFKC, case, list marker, whitespace), or None."""
    from kit.memory.recall import normalise_claim

    wanted = normalise_claim("\n".join(bullet))
    lines = existing.replace("\r\n", "\n").split("\n")
    items: list[list[int]] = []  # [first, last] 0-based
    for i, line in enumerate(lines):
        if line.startswith(("- ", "* ", "+ ")) or line.strip() in ("-", "*", "+"):
            items.append([i, i])
        elif items and line.strip() and line.startswith(("  ", "\t")) and items[-1][1] == i - 1:
            items[-1][1] = i
    for first, last in items:
        item = lines[first : last + 1]
        if normalise_claim("\n".join(item)) == wanted:
            return first + 1, last + 1, "\n".join(item)
    return None


def topic_at(existing: str, line: int) -> str | None:
    """The `## topic` a 1-based `line` of a note sits under, as its heading spells it (None: before any)."""
    lines = existing.replace("\r\n", "\n").split("\n")
    for text in reversed(lines[: line - 1]):
        found = _TOPIC_RE.match(text)
        if found:
            return found.group(1)
    return None


def insert_bullet(existing: str | None, day: date, bullet: list[str],
                  topic: str | None) -> tuple[str, int, str | None]:
    """Return (new text, 1-based line of the bullet, the topic as its heading spells it: an
    existing `## ops` takes `--topic Ops`). Pure: no I/O, easy to test."""
    if existing is None or not existing.strip():
        lines = [f"# {day.isoformat()}"]
    else:
        lines = existing.replace("\r\n", "\n").rstrip("\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()

    def insert_after(end: int, trailing_blank: bool) -> int:
        """Insert the bullet after lines[:end]; a blank line first unless it continues a list."""
        pad = [] if end > 0 and _is_item_line(lines[end - 1]) else [""]
        tail = [""] if trailing_blank else []
        lines[end:end] = pad + bullet + tail
        return end + len(pad) + 1

    def last_content(start: int, stop: int) -> int:
        """Index just past the last non-blank line in lines[start:stop]."""
        end = stop
        while end > start and not lines[end - 1].strip():
            end -= 1
        return end

    headings = [i for i, ln in enumerate(lines) if _TOPIC_RE.match(ln)]
    if topic is None:
        if not headings:
            line = insert_after(len(lines), False)
        else:
            # before the first `## topic`, so topicless notes stay in the day's preamble
            first = headings[0]
            end = last_content(0, first)
            line = insert_after(end, trailing_blank=(end == first))
        return "\n".join(lines) + "\n", line, None

    wanted = topic.casefold()
    match = [i for i in headings if _TOPIC_RE.match(lines[i]).group(1).casefold() == wanted]
    if not match:
        lines.extend(["", f"## {topic}"])
        line = insert_after(len(lines), False)
        return "\n".join(lines) + "\n", line, topic
    heading = match[0]
    spelt = _TOPIC_RE.match(lines[heading]).group(1)
    following = [i for i in headings if i > heading]
    stop = following[0] if following else len(lines)
    end = last_content(heading + 1, stop)
    line = insert_after(end, trailing_blank=bool(following) and end == stop)
    return "\n".join(lines) + "\n", line, spelt


def append_note(ws: WorkspaceCore, text: str, topic: str | None = None) -> WriteResult:
    """Append `text` to today's daily note after the threat scan; Kit's own write via ws.update_text,
    a compare-and-swap: the bullet is inserted into the note as it is at the moment of writing, so a
    line the user is editing in their editor meanwhile is never reverted."""
    from kit.memory.threats import scan_text

    if not text or not text.strip():
        raise MemoryWriteError("nothing to write: the text is empty")
    reason = scan_text(text) or (scan_text(topic) if topic else None)
    if reason:
        raise MemoryWriteError(f"refused: {reason}")
    topic = clean_topic(topic)
    day = clock.today()
    rel = daily_path(day)
    bullet = format_bullet(text)
    outcome: dict[str, Any] = {}

    def insert(existing: str | None) -> str | None:
        # DocumentError (file and line) when the note is not UTF-8 text: never rewrite it lossily
        outcome.clear()
        same = find_item(existing, bullet) if existing else None
        if same is not None:  # already noted today: writing it again would only count it twice
            # where it already is: under its own heading, whatever topic was asked for
            outcome["duplicate"] = (*same, topic_at(existing, same[0]))
            return None
        new_text, line, heading = insert_bullet(existing, day, bullet, topic)
        outcome.update(line=line, created=existing is None, topic=heading)
        return new_text

    ws.update_text(rel, insert)
    if "duplicate" in outcome:
        first, last, written, heading = outcome["duplicate"]
        return WriteResult(rel, first, last, written, heading, False, duplicate=True)
    line = outcome["line"]
    return WriteResult(rel, line, line + len(bullet) - 1, "\n".join(bullet), outcome["topic"], outcome["created"])
