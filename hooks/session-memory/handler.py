"""session-memory: archive the recent conversation as memory/YYYY-MM-DD-<slug>.md."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from kit import clock
from kit.errors import ConflictError
from kit.fsutil import create_file, safe_join

MAX_MESSAGES = 20  # the recent part of the conversation is what is worth keeping
MAX_CHARS_PER_MESSAGE = 1200
MAX_SLUG_WORDS = 6
MAX_SLUG_CHARS = 48


def slugify(text: str) -> str:
    """Lower-case ASCII words of the text, joined by hyphens; 'session' when nothing is left."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = re.findall(r"[a-z0-9]+", folded)[:MAX_SLUG_WORDS]
    slug = "-".join(words)[:MAX_SLUG_CHARS].strip("-")
    return slug or "session"


def _one_line(text: str) -> str:
    flat = " ".join(str(text).split())
    if len(flat) > MAX_CHARS_PER_MESSAGE:
        flat = flat[: MAX_CHARS_PER_MESSAGE - 1].rstrip() + "…"
    return flat


def _names(day: str, slug: str):
    yield f"memory/{day}-{slug}.md"
    n = 2
    while True:
        yield f"memory/{day}-{slug}-{n}.md"
        n += 1


def _write_new(root: Path, day: str, slug: str, text: str) -> str:
    """Create the first free name: create-only, so two archives at once never overwrite each other."""
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


def render(messages: list[dict], *, day: str, time: str, session_id: str | None, reason: str) -> str:
    lines = [f"# Session {day} {time}", ""]
    meta = f"Archived by session-memory on {reason}"
    if session_id:
        meta += f" (session {session_id})"
    lines += [f"<!-- kit:session-memory {meta} -->", "", "## Conversation", ""]
    for message in messages:
        who = "User" if message["role"] == "user" else "Assistant"
        lines.append(f"- **{who}:** {_one_line(message['content'])}")
    return "\n".join(lines) + "\n"


def handle(event):
    data = event.data or {}
    messages = [
        {"role": m.get("role"), "content": str(m.get("content") or "")}
        for m in data.get("messages") or []
        if isinstance(m, dict) and m.get("role") in ("user", "assistant") and str(m.get("content") or "").strip()
    ]
    if not any(m["role"] == "user" for m in messages):
        return None
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    now = clock.now()
    day = now.date().isoformat()
    root = Path(event.workspace)
    reason = data.get("reason") or event.type.replace("command:", "/")
    text = render(messages[-MAX_MESSAGES:], day=day, time=now.strftime("%H:%M"),
                  session_id=data.get("session_id"), reason=reason)
    rel = _write_new(root, day, slugify(first_user), text)
    return {"written": rel}
