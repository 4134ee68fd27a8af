"""Whole tool outputs that the result limit cut, kept for the model to read back.

A cut result loses its middle or its end; the model may need exactly that part. So the whole
output is written to `.kit/tool-output/<session>/<call>.txt` and the cut text names that path:
`read_file` with `start`/`lines` reads any part of it. These files are the only ones under `.kit/`
that `read_file` may read (`is_saved_output`).

Retention (`tools.output_keep_days`, `tools.output_keep_mb`): each save removes the session
folders not written to for that many days, then the oldest folders until the rest fit in that many
megabytes. The folder of the session saving now is never removed. An output larger than the
whole budget is not saved: its cut says to read a narrower range instead.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

OUTPUT_DIR = "tool-output"  # under .kit/
NO_SESSION = "no-session"  # a call outside an agent run (a script's ToolContext)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")  # provider call ids are opaque: keep a file-name-safe form
_NAME_CHARS = 64


def _safe(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name).strip("._")[:_NAME_CHARS]
    return cleaned or "_"


def is_saved_output(rel: str) -> bool:
    """True for a workspace path `.kit/tool-output/<session>/<call>.txt` (the files read_file may
    read under .kit/; the caller resolves symlinks first)."""
    parts = rel.split("/")
    return (len(parts) == 4 and parts[:2] == [".kit", OUTPUT_DIR] and parts[3].endswith(".txt")
            and all(p and _safe(p) == p for p in parts[2:]))


def save_output(ws: Any, text: str, *, session: str | None, call: str, keep_days: float,
                keep_mb: float) -> str | None:
    """Write the whole `text` as .kit/tool-output/<session>/<call>.txt and prune old outputs; the
    workspace path, or None when nothing was written (read-only workspace, a disk error, an output
    over the whole budget)."""
    from kit.filewrite import atomic_write
    from kit.fsutil import sha1_hex

    data = text.encode("utf-8")
    if ws.is_read_only or len(data) > keep_mb * 1_000_000:
        return None
    folder = ws.kit_dir / OUTPUT_DIR / _safe(session or NO_SESSION)
    name = _safe(call) if call else sha1_hex(data, 16)
    path = folder / f"{name}.txt"
    try:
        if path.exists() and path.read_bytes() != data:  # a provider reused the id in this session
            path = folder / f"{name}-{sha1_hex(data, 8)}.txt"
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data)  # whole or absent: never half an output under the final name
        prune(ws.kit_dir / OUTPUT_DIR, keep_days=keep_days, keep_mb=keep_mb, keep=folder.name)
        return path.relative_to(ws.root).as_posix()
    except OSError:
        return None


def prune(root: Path, *, keep_days: float, keep_mb: float, keep: str | None = None) -> list[str]:
    """Remove session folders under `root` older than `keep_days` (by their newest write, against
    kit.clock), then the oldest ones until the rest fit in `keep_mb`; never the folder `keep`.
    The names removed, oldest first."""
    from kit import clock

    try:
        folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []
    now = clock.timestamp()
    sized = []
    for folder in folders:
        try:
            files = [f.stat() for f in folder.iterdir() if f.is_file()]
        except OSError:
            continue
        newest = max((s.st_mtime for s in files), default=folder.stat().st_mtime)
        sized.append((newest, folder, sum(s.st_size for s in files)))
    sized.sort(key=lambda item: (item[0], item[1].name))
    total = sum(size for _, _, size in sized)
    removed = []
    for newest, folder, size in sized:
        if folder.name == keep:
            continue
        if now - newest > keep_days * 86400 or total > keep_mb * 1_000_000:
            shutil.rmtree(folder, ignore_errors=True)
            total -= size
            removed.append(folder.name)
    return removed
