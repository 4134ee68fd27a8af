"""Fixtures for hook tests: write a hook folder, trust it, read the hooks log."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml


def write_hook(root: Path, name: str, events: list[str], handler: str | None = None, *,
               command: str | None = None, timeout_s: float | None = None, enabled: bool | None = None,
               files: dict[str, str] | None = None, description: str = "test hook") -> Path:
    """Create <root>/<name>/HOOK.md (+ handler.py / extra files); returns the folder."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    meta: dict = {"name": name, "description": description, "events": events}
    if timeout_s is not None:
        meta["timeout_s"] = timeout_s
    if enabled is not None:
        meta["enabled"] = enabled
    if command is not None:
        meta["command"] = command
    (folder / "HOOK.md").write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n# " + name + "\n")
    if handler is not None:
        (folder / "handler.py").write_text(textwrap.dedent(handler))
    for rel, text in (files or {}).items():
        path = folder / rel
        path.write_text(textwrap.dedent(text))
        if rel.endswith(".sh"):
            path.chmod(0o755)
    return folder


def hooks_log(ws_root: Path) -> str:
    path = ws_root / ".kit" / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""
