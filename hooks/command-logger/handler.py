"""command-logger: one JSON line per slash command in .kit/logs/commands.jsonl."""

from __future__ import annotations

import json
from pathlib import Path


def handle(event):
    data = event.data or {}
    record = {
        "timestamp": event.timestamp,
        "command": data.get("command") or event.type.split(":", 1)[-1],
        "args": data.get("args", ""),
        "session_key": event.session_key,
        "session_id": data.get("session_id"),
    }
    path = Path(event.workspace) / ".kit" / "logs" / "commands.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    # one short line per append: concurrent writers do not interleave within a line
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    return None
