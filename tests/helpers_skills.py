"""Helpers for the prompt and skills tests: write skills and workspace files."""

from __future__ import annotations

from pathlib import Path

import yaml


def make_skill(
    root: Path,
    name: str,
    description: str | None = None,
    *,
    folder: str | None = None,
    meta: dict | None = None,
    body: str = "# Steps\n\n1. Do the thing.\n",
    files: dict[str, str | bytes] | None = None,
) -> Path:
    """Create `<root>/<folder or name>/SKILL.md` (+ files) and return the skill folder."""
    skill_dir = root / (folder or name)
    skill_dir.mkdir(parents=True, exist_ok=True)
    front = {"name": name, "description": description if description is not None else f"Use {name} for tests."}
    front.update(meta or {})
    front = {k: v for k, v in front.items() if v is not None}
    text = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n\n" + body
    (skill_dir / "SKILL.md").write_text(text, encoding="utf-8")
    for rel, content in (files or {}).items():
        target = skill_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return skill_dir


def write_config(ws_root: Path, text: str) -> None:
    (ws_root / "kit.yaml").write_text(text, encoding="utf-8")


def set_file(ws, rel: str, text: str) -> None:
    """Write a workspace file and reload it (what the watcher would do)."""
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    ws.reload([rel])
