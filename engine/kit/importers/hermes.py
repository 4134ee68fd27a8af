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
from kit.importers.mcp import HERMES, kit_values, shown_url
from kit.importers.openclaw import (
    _files,
    _has_values,
    _hook_dirs,
    _Planner,
    _skill_dirs,
    _withhold,
)
from kit.importers.plan import Action, ImportPlan
from kit.importers.reading import load_yaml_file, source_text
from kit.importers.values import TypedReader, nest
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
    """config.yaml → kit.yaml values (dotted keys) and report lines: a value of the wrong type, or
    one Kit's config loader refuses, is reported by its key and not imported."""
    r = TypedReader("config.yaml", data, "a mapping")
    out: dict[str, Any] = {}
    names: dict[str, str] = {}
    notes: list[str] = []
    model = r.get("model", "string", "mapping")
    if isinstance(model, str):
        out["agent.model"], names["agent.model"] = model, "model"
    elif isinstance(model, dict):
        key = "model.default" if model.get("default") is not None else "model.model"
        if (name := r.get(key, "string")) is not None:
            out["agent.model"], names["agent.model"] = name, key
        if (window := r.get("model.context_length", "whole")) is not None:
            out["agent.context_window"], names["agent.context_window"] = window, "model.context_length"
        if model.get("provider") not in (None, "auto", "anthropic", "openai") or model.get("base_url"):
            notes.append(f"config.yaml model.provider {model.get('provider')!r}"
                         + (f" at {shown_url(str(model['base_url']))}" if model.get("base_url") else "")
                         + ": set providers.<name>.base_url in kit.yaml (docs/providers.md)")
    memory = r.section("memory")
    for key in ("memory_enabled", "user_profile_enabled"):
        if memory.get(key) is False:
            notes.append(f"Hermes had {key}: false; Kit's memory is always on")
    if any(k in memory for k in ("memory_char_limit", "user_char_limit")):
        notes.append("Hermes' memory char limits do not map: Kit budgets with bootstrap.max_chars_per_file")
    if (extra := r.get("skills.external_dirs", "strings")) is not None:
        out["skills.extra_dirs"], names["skills.extra_dirs"] = extra, "skills.external_dirs"
    out, said = kit_values(out, names, r.section("mcp_servers"), HERMES)
    notes.extend(said)
    if isinstance(data.get("hooks"), dict) and data["hooks"]:
        notes.append("config.yaml shell hooks (pre_tool_call/post_tool_call) are not imported: write them as "
                     "Kit command hooks on tool:before/tool:after (docs/hooks.md)")
    for key in ("terminal", "display", "toolsets", "database", "updates", "auxiliary", "providers"):
        if key in data:
            notes.append(f"config.yaml '{key}' has no Kit equivalent: not imported")
    return out, [*r.notes, *notes]


def convert_hook(meta: dict[str, Any], name: str) -> tuple[str, list[str], list[str]]:
    """A Hermes HOOK.yaml (parsed) as Kit's HOOK.md, disabled: (text, Kit events, events Kit lacks).
    Nothing is guessed: a hook with no event Kit has gets none (the plan leaves it out)."""
    raw = meta.get("events") or []
    raw = [raw] if isinstance(raw, str) else [e for e in raw if isinstance(e, str)] if isinstance(raw, list) else []
    events: list[str] = []
    missing: list[str] = []
    for event in raw:
        kit_event = EVENT_MAP.get(event)
        if kit_event is None:
            missing.append(event)
        elif kit_event not in events:
            events.append(kit_event)
    front = {"name": name, "description": str(meta.get("description") or f"Imported from Hermes hook {name}"),
             "events": events, "enabled": False, "metadata": {"hermes": meta}}
    body = (f"# {name}\n\nImported from Hermes. Its handler.py defines `handle(event_type, context)`; "
            "Kit calls `handle(event)`: port it, then set `enabled: true`.\n")
    return "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n" + body, events, missing


def _plan_config(p: _Planner) -> None:
    """kit.yaml from config.yaml for a new workspace; for an existing one (never overwritten), a
    report of the values it lacks. A config.yaml that does not parse stops the plan at its line."""
    config = p.src / "config.yaml"
    values: dict[str, Any] = {}
    if config.exists():
        if not config.is_file():
            raise WorkspaceError(f"{config} is not a file; Hermes' config.yaml is one")
        values, notes = map_config(load_yaml_file(config, str(config)))
        p.notes.extend(notes)
    kit_yaml = p.dest / CONFIG_FILE
    if kit_yaml.exists():
        if values and not _has_values(kit_yaml, values):
            p.notes.append(f"{CONFIG_FILE} exists and is not changed; config.yaml would set: "
                           + ", ".join(f"{k}={v!r}" for k, v in values.items()))
        return
    header = f"# Imported from the Hermes home {p.src} by `kit import hermes`.\n"
    body = yaml.safe_dump(nest(values), sort_keys=False, allow_unicode=True) if values else "{}\n"
    p.put(CONFIG_FILE, "config.yaml", (header + body).encode("utf-8"), "from config.yaml")


def _plan_memory(p: _Planner, origin: str, target: str, heading: str) -> None:
    """Hermes' §-separated entries appended to Kit's MEMORY.md/USER.md; a flagged entry is left out."""
    clean = []
    for n, item in enumerate(entries(p.read(origin)), 1):
        _, flagged = _withhold(item)
        for line in flagged:
            p.actions.append(Action("withheld", target, origin, f"entry {n}, {line}; left out (it stays in {origin})"))
        if not flagged:
            clean.append((n, item))
    path = p.dest / target
    current = source_text(path, str(path)) if path.is_file() else None
    merged, added = merge_entries(current, clean, origin, heading)
    if added == 0:
        p.actions.append(Action("unchanged", target, origin, "every entry is already there"))
    else:
        p.actions.append(Action("create" if current is None else "append", target, origin,
                                f"{added} entr{'y' if added == 1 else 'ies'} appended as list items",
                                merged.encode("utf-8")))
    p.claimed.add(target)


def _plan_hook(p: _Planner, name: str) -> None:
    """One HOOK.yaml hook as a disabled Kit hook hooks/hermes-<name>/. A HOOK.yaml that does not parse
    stops the plan at its line; a hook with no Kit event is left out and reported."""
    spec = p.src / "hooks" / name / "HOOK.yaml"
    kit_name = f"hermes-{name}"
    text, events, missing = convert_hook(load_yaml_file(spec, str(spec)), kit_name)
    if not events:
        why = f"Kit has no {', '.join(missing)} event" if missing else "its HOOK.yaml names no events"
        p.skip(f"hooks/{name}/", f"not imported: {why} (an event would be a guess; it stays in SRC)")
        return
    p.text(f"hooks/{kit_name}/HOOK.md", f"hooks/{name}/HOOK.yaml", text, "Kit's HOOK.md, enabled: false",
           converted=True)
    for rel in _files(p.src, f"hooks/{name}"):
        if rel != f"hooks/{name}/HOOK.yaml":
            p.copy(rel, f"hooks/{kit_name}" + rel[len(f"hooks/{name}"):])
    p.notes.append(f"hooks/{kit_name}/handler.py: not runnable as is: port handle(event_type, context) "
                   "to handle(event) (the hook is imported disabled)")
    if missing:
        p.notes.append(f"hooks/{kit_name}: Kit has no {', '.join(missing)} event")


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
    done: set[str] = {"config.yaml"}
    _plan_config(p)
    for name in ("SOUL.md", "AGENTS.md"):
        if (src_path / name).is_file():
            p.copy(name)
            done.add(name)
    for origin, target, heading in (("memories/MEMORY.md", "MEMORY.md", "Memory"),
                                    ("memories/USER.md", "USER.md", "User")):
        if (src_path / origin).is_file():
            _plan_memory(p, origin, target, heading)
            done.add(origin)
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
        _plan_hook(p, folder.name)
        done.update(_files(src_path, f"hooks/{folder.name}"))

    for name, why in NOT_IMPORTED.items():
        if (src_path / name).exists():
            p.skip(name + ("/" if (src_path / name).is_dir() else ""), f"not imported: {why}")
    for rel in _files(src_path):
        top = rel.split("/")[0]
        if rel in done or top in NOT_IMPORTED or top in {"skills", "hooks", "memories"}:
            continue
        p.skip(rel, "not imported (Hermes' own file)")
    return ImportPlan("hermes", src_path, dest_path, tuple(p.actions), tuple(dict.fromkeys(p.notes)))

