"""`kit import hermes [SRC] [DEST]`: a Hermes home (`~/.hermes`) as a Kit workspace.

Hermes keeps its memory as entries separated by a line holding only `§` (memories/MEMORY.md,
memories/USER.md); each becomes a list item with a `kit:imported` provenance comment, appended
to Kit's MEMORY.md and USER.md (entries already there are found by their comment: a re-import
adds nothing). config.yaml values that have a Kit equivalent go into a new kit.yaml; secrets
(.env, auth.json) and machine state (state.db, sessions/, cron/, logs/) are never copied.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from kit.errors import WorkspaceError
from kit.importers.openclaw import (
    _files,
    _has_values,
    _hook_dirs,
    _nest,
    _Planner,
    _skill_dirs,
    _withhold,
)
from kit.importers.plan import Action, ImportPlan
from kit.paths import CONFIG_FILE

ENTRY_DELIMITER = "\n§\n"  # Hermes' tools/memory_tool.py
NOT_IMPORTED = {
    ".env": "secrets: set the keys in your environment",
    "auth.json": "OAuth credentials: log in again where Kit needs it",
    "state.db": "Hermes' session database",
    "sessions": "Hermes' gateway sessions",
    "cron": "Hermes' scheduled jobs: use `kit cron`",
    "logs": "Hermes' logs",
}
EVENT_MAP = {
    "session:start": "session:start", "session:end": "session:end", "session:reset": "command:reset",
    "agent:start": "message:received", "agent:end": "message:sent", "command:*": "command",
    "session:compress": "compaction:after",
}
_IMPORTED = re.compile(r"<!--\s*kit:imported\s+from=(\S+)\s+entry=(\d+)\s*-->")


def default_src() -> Path:
    return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")


def entries(text: str) -> list[str]:
    """Hermes' reader: split on the delimiter line, strip, drop empties and exact duplicates."""
    out: list[str] = []
    for part in text.split(ENTRY_DELIMITER):
        part = part.strip()
        if part and part not in out:
            out.append(part)
    return out


def render_entry(text: str, origin: str, n: int) -> str:
    lines = text.split("\n")
    body = "\n".join([f"- {lines[0]}", *(f"  {line}" if line.strip() else "" for line in lines[1:])])
    return f"<!-- kit:imported from=hermes:{origin} entry={n} -->\n{body}\n"


def merge_entries(current: str | None, items: list[tuple[int, str]], origin: str, heading: str) -> tuple[str, int]:
    """`current` with the entries it lacks appended (found by their provenance comment)."""
    text = current if current is not None else f"# {heading}\n"
    have = {(m.group(1), int(m.group(2))) for m in _IMPORTED.finditer(text)}
    # numbered as in Hermes' file, so a withheld entry does not renumber the ones after it
    new = [render_entry(e, origin, n) for n, e in items if (f"hermes:{origin}", n) not in have]
    if not new:
        return text, 0
    out = text.rstrip("\n") + "\n\n" + "\n".join(new)
    return out, len(new)


def map_config(data: dict) -> tuple[dict[str, Any], list[str]]:
    out: dict[str, Any] = {}
    notes: list[str] = []
    model = data.get("model")
    if isinstance(model, str):
        out["agent.model"] = model
    elif isinstance(model, dict):
        name = model.get("default") or model.get("model")
        if isinstance(name, str):
            out["agent.model"] = name
        if isinstance(model.get("context_length"), int):
            out["agent.context_window"] = model["context_length"]
        if model.get("provider") not in (None, "auto", "anthropic", "openai") or model.get("base_url"):
            notes.append(f"config.yaml model.provider {model.get('provider')!r}"
                         + (f" at {model['base_url']}" if model.get("base_url") else "")
                         + ": set providers.<name>.base_url in kit.yaml (docs/providers.md)")
    memory = data.get("memory") if isinstance(data.get("memory"), dict) else {}
    for key in ("memory_enabled", "user_profile_enabled"):
        if memory.get(key) is False:
            notes.append(f"Hermes had {key}: false; Kit's memory is always on")
    if any(k in memory for k in ("memory_char_limit", "user_char_limit")):
        notes.append("Hermes' memory char limits do not map: Kit budgets with bootstrap.max_chars_per_file")
    skills = data.get("skills") if isinstance(data.get("skills"), dict) else {}
    if isinstance(skills.get("external_dirs"), list):
        out["skills.extra_dirs"] = [str(p) for p in skills["external_dirs"]]
    servers = data.get("mcp_servers")
    if isinstance(servers, dict) and servers:
        out["mcp.servers"] = {str(k): v for k, v in servers.items() if isinstance(v, dict)}
    if isinstance(data.get("hooks"), dict) and data["hooks"]:
        notes.append("config.yaml shell hooks (pre_tool_call/post_tool_call) are not imported: write them as "
                     "Kit command hooks on tool:before/tool:after (docs/hooks.md)")
    for key in ("terminal", "display", "toolsets", "database", "updates", "auxiliary", "providers"):
        if key in data:
            notes.append(f"config.yaml '{key}' has no Kit equivalent: not imported")
    return out, notes


def convert_hook(text: str, name: str) -> tuple[str, list[str]]:
    meta = yaml.safe_load(text) or {}
    meta = meta if isinstance(meta, dict) else {}
    raw = meta.get("events") or []
    raw = [raw] if isinstance(raw, str) else [e for e in raw if isinstance(e, str)]
    events, missing = [], []
    for event in raw:
        kit_event = EVENT_MAP.get(event)
        if kit_event is None:
            missing.append(event)
        elif kit_event not in events:
            events.append(kit_event)
    front = {"name": name, "description": str(meta.get("description") or f"Imported from Hermes hook {name}"),
             "events": events or ["command"], "enabled": False, "metadata": {"hermes": meta}}
    body = (f"# {name}\n\nImported from Hermes. Its handler.py defines `handle(event_type, context)`; "
            "Kit calls `handle(event)`: port it, then set `enabled: true`.\n")
    return "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n" + body, missing


def plan_hermes(src: str | os.PathLike | None = None, dest: str | os.PathLike | None = None, *,
                force: bool = False) -> ImportPlan:
    src_path = Path(src).expanduser().resolve() if src is not None else default_src().resolve()
    if dest is None:
        raise WorkspaceError("kit import hermes needs DEST (a folder)")
    dest_path = Path(dest).expanduser().resolve()
    if not src_path.is_dir():
        raise WorkspaceError(f"{src_path} is not a folder; point `kit import hermes` at a Hermes home (~/.hermes)")
    if not (src_path / "memories").is_dir() and not (src_path / "config.yaml").is_file():
        raise WorkspaceError(f"{src_path} holds no Hermes files (config.yaml, memories/)")
    if src_path == dest_path:
        raise WorkspaceError("a Hermes home is not converted in place: give another DEST")
    p = _Planner(src_path, dest_path, force)
    done: set[str] = set()

    values: dict[str, Any] = {}
    if (src_path / "config.yaml").is_file():
        try:
            data = yaml.safe_load((src_path / "config.yaml").read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise WorkspaceError(f"{src_path / 'config.yaml'}: {exc}") from None
        if isinstance(data, dict):
            values, notes = map_config(data)
            p.notes.extend(notes)
        done.add("config.yaml")
    kit_yaml = dest_path / CONFIG_FILE
    if kit_yaml.exists():
        if values and not _has_values(kit_yaml, values):
            p.notes.append(f"{CONFIG_FILE} exists and is not changed; config.yaml would set: "
                           + ", ".join(f"{k}={v!r}" for k, v in values.items()))
    else:
        header = f"# Imported from the Hermes home {src_path} by `kit import hermes`.\n"
        body = yaml.safe_dump(_nest(values), sort_keys=False, allow_unicode=True) if values else "{}\n"
        p.put(CONFIG_FILE, "config.yaml", (header + body).encode("utf-8"), "from config.yaml")

    for name in ("SOUL.md", "AGENTS.md"):
        if (src_path / name).is_file():
            p.copy(name)
            done.add(name)
    for origin, target, heading in (("memories/MEMORY.md", "MEMORY.md", "Memory"),
                                    ("memories/USER.md", "USER.md", "User")):
        if not (src_path / origin).is_file():
            continue
        done.add(origin)
        items = entries((src_path / origin).read_text(encoding="utf-8"))
        clean = []
        for n, item in enumerate(items, 1):
            _, flagged = _withhold(item)
            for line in flagged:
                p.actions.append(Action("withheld", target, origin, f"entry {n}, {line}; left out (it stays in {origin})"))
            if not flagged:
                clean.append((n, item))
        current = (dest_path / target).read_text(encoding="utf-8") if (dest_path / target).is_file() else None
        merged, added = merge_entries(current, clean, origin, heading)
        if added == 0:
            p.actions.append(Action("unchanged", target, origin, "every entry is already there"))
        else:
            p.actions.append(Action("create" if current is None else "overwrite", target, origin,
                                    f"{added} entr{'y' if added == 1 else 'ies'} appended as list items",
                                    merged.encode("utf-8")))
        p.claimed.add(target)
    if (src_path / "memories").is_dir():
        for rel in _files(src_path, "memories"):
            if rel not in done:
                p.skip(rel, "Hermes' memory machine files (locks, backups, archive)" if not rel.endswith("ARCHIVE.jsonl")
                       else "entries Hermes evicted: not imported (read them there)")
                done.add(rel)

    for folder in _skill_dirs(src_path):
        rel_dir = folder.relative_to(src_path).as_posix()
        if "/.hub" in rel_dir:
            continue
        target = f"skills/{folder.name}"
        for rel in _files(src_path, rel_dir):
            p.copy(rel, target + rel[len(rel_dir):], f"from {rel_dir}/ (flattened)" if rel.endswith("/SKILL.md") else "")
            done.add(rel)

    for folder in _hook_dirs(src_path, "HOOK.yaml"):
        spec = folder / "HOOK.yaml"
        name = folder.name
        kit_name = f"hermes-{name}"
        text, missing = convert_hook(spec.read_text(encoding="utf-8"), kit_name)
        p.text(f"hooks/{kit_name}/HOOK.md", f"hooks/{name}/HOOK.yaml", text, "Kit's HOOK.md, enabled: false",
               converted=True)
        done.add(f"hooks/{name}/HOOK.yaml")
        for rel in _files(src_path, f"hooks/{name}"):
            if rel not in done:
                p.copy(rel, f"hooks/{kit_name}" + rel[len(f"hooks/{name}"):])
                done.add(rel)
        p.notes.append(f"hooks/{kit_name}/handler.py: not runnable as is: port handle(event_type, context) "
                       "to handle(event) (the hook is imported disabled)")
        if missing:
            p.notes.append(f"hooks/{kit_name}: Kit has no {', '.join(missing)} event")

    for name, why in NOT_IMPORTED.items():
        if (src_path / name).exists():
            p.skip(name + ("/" if (src_path / name).is_dir() else ""), f"not imported: {why}")
    for rel in _files(src_path):
        top = rel.split("/")[0]
        if rel in done or top in NOT_IMPORTED or top in {"skills", "hooks", "memories"}:
            continue
        p.skip(rel, "not imported (Hermes' own file)")
    return ImportPlan("hermes", src_path, dest_path, tuple(p.actions), tuple(dict.fromkeys(p.notes)))

