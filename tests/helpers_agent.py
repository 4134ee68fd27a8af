"""Helpers for the agent runtime tests: scripts for the script provider, hooks, recorded calls."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml


def write_script(folder: Path, turns: list[dict[str, Any]], *, name: str = "script.yaml",
                 record: bool = True) -> Path:
    """A script-provider YAML; with `record`, every request is logged to <name>.calls.jsonl.
    (How far a script has been played belongs to the workspace: a new workspace starts at turn 1.)"""
    path = folder / name
    data: dict[str, Any] = {"turns": turns}
    if record:
        data["record"] = f"{name}.calls.jsonl"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    calls = folder / f"{name}.calls.jsonl"
    if calls.exists():
        calls.unlink()
    return path


def recorded_calls(script: Path) -> list[dict[str, Any]]:
    calls = script.parent / f"{script.name}.calls.jsonl"
    if not calls.exists():
        return []
    return [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines() if line.strip()]


def set_config(ws_root: Path, yaml_text: str) -> None:
    (ws_root / "kit.yaml").write_text(textwrap.dedent(yaml_text), encoding="utf-8")


def add_hook(ws, name: str, events: list[str], *, handler: str | None = None, command: str | None = None,
             trust: bool = True, timeout_s: float | None = None) -> Path:
    """A workspace hook (handler.py or command), reloaded and trusted."""
    folder = ws.root / "hooks" / name
    folder.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"name": name, "description": f"test hook {name}", "events": events}
    if command is not None:
        meta["command"] = command
    if timeout_s is not None:
        meta["timeout_s"] = timeout_s
    (folder / "HOOK.md").write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n# test\n",
                                    encoding="utf-8")
    if handler is not None:
        (folder / "handler.py").write_text(textwrap.dedent(handler), encoding="utf-8")
    ws.reload()
    if trust:
        from kit.hooks.registry import registry_for

        registry_for(ws).trust(name)
        ws.reload()
    return folder


def agent_for(ws, script: Path, **kwargs: Any):
    from kit.agent.loop import Agent

    return Agent(ws, model=f"script:{script}", **kwargs)
