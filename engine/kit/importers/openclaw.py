"""`kit import openclaw SRC [DEST]`: an OpenClaw workspace (and its openclaw.json) as a Kit one.

What has a Kit equivalent is converted (promotion markers in MEMORY.md become `kit:promoted`
provenance, HOOK.md frontmatter becomes Kit's, openclaw.json values become kit.yaml); the rest
is copied and reported; machine state and secrets are never copied. Every Markdown text passes
the threat scan: a flagged line is left out of the copy (it stays in SRC) and reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from kit.dreaming import managed
from kit.errors import WorkspaceError
from kit.hooks.events import KNOWN_EVENTS
from kit.ignore import ignored_name
from kit.importers.plan import Action, ImportPlan
from kit.init import NEVER_OVERWRITTEN
from kit.memory.recall import claim_hash
from kit.paths import CONFIG_FILE, bundled
from kit.threats import scan as scan_threat

BOOTSTRAP = ("AGENTS.md", "SOUL.md", "USER.md", "IDENTITY.md", "TOOLS.md", "HEARTBEAT.md", "BOOTSTRAP.md")
# OpenClaw machine state: never copied (dreaming's recall store, locks, session corpus)
STATE_DIRS = ("memory/.dreams",)
SKIPPED_DIRS = {".git", ".kit", "node_modules", "__pycache__", ".venv"}
MAX_SKILL_DEPTH = 6  # OpenClaw finds grouped skills up to 6 folders deep

_OC_HEADING = re.compile(r"^## Promoted From Short-Term Memory \((\d{4}-\d{2}-\d{2})\)\s*$")
_OC_MARKER = re.compile(r"^<!--\s*openclaw-memory-promotion:([^\n]+?)\s*-->\s*$", re.I)
_OC_BRACKET = re.compile(r"\s*\[score=(?P<score>[\d.]+)(?:\s+signals=\d+)?\s+recalls=(?P<recalls>\d+)[^\]]*\]")
_COMMENT = re.compile(r"\s*<!--.*?-->")
_CLAIM_SUFFIX = re.compile(r":[0-9a-f]{12}$")
_FRONTMATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)

# OpenClaw hook events -> Kit's (None: Kit has no such event)
EVENT_MAP = {
    "command:new": "command:new", "command:reset": "command:reset", "command": "command",
    "session:auto-reset": "session:end", "agent:bootstrap": "agent:bootstrap",
    "message:received": "message:received", "message:sent": "message:sent", "gateway:startup": None,
}


# --------------------------------------------------------------------------- conversions

def convert_memory(text: str) -> tuple[str, int]:
    """MEMORY.md with OpenClaw's promotion sections moved into Kit's managed section.

    Every other line stays as it is. Returns the text and how many entries were converted.
    """
    lines = text.split("\n")
    kept: list[str] = []
    entries: list[managed.Entry] = []
    day = ""
    inside = False
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = _OC_HEADING.match(line)
        if heading:
            inside, day = True, heading.group(1)
            while kept and not kept[-1].strip():
                kept.pop()  # the blank lines before the section go with it
            i += 1
            continue
        if inside and line.startswith("## "):
            inside = False
            if kept:
                kept.append("")
        if not inside:
            kept.append(line)
            i += 1
            continue
        marker = _OC_MARKER.match(line.strip())
        if marker:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            bullet = lines[j] if j < len(lines) else ""
            scores = _OC_BRACKET.search(bullet)
            snippet = _COMMENT.sub("", _OC_BRACKET.sub("", bullet)).strip()
            key = marker.group(1).strip()
            key = _CLAIM_SUFFIX.sub("", key.removeprefix("memory:"))
            if snippet:
                entries.append(managed.make_entry(
                    key=key, claim=claim_hash(snippet), score=float(scores["score"]) if scores else 0.0,
                    recalls=int(scores["recalls"]) if scores else 0, queries=0, day=day, text=snippet,
                    extra=(("source", "openclaw"),)))
            i = j + 1
            continue
        if line.strip() and not line.startswith("### "):  # "### Project: X" / "### Global" go
            kept.append(line)
        i += 1
    if not entries:
        return text, 0
    rest = "\n".join(kept)
    if not rest.endswith("\n"):
        rest += "\n"
    return managed.merge(rest, add=entries), len(entries)


def _frontmatter(text: str) -> tuple[dict[str, Any], str]:
    m = _FRONTMATTER.match(text)
    if not m:
        return {}, text
    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError:
        return {}, text
    return (meta if isinstance(meta, dict) else {}), text[m.end():]


def convert_hook(text: str, name: str) -> tuple[str, list[str], list[str]]:
    """An OpenClaw HOOK.md in Kit's form, disabled: (text, Kit events, events Kit lacks)."""
    meta, body = _frontmatter(text)
    metadata = meta.get("metadata") if isinstance(meta.get("metadata"), dict) else {}
    oc = metadata.get("openclaw") if isinstance(metadata.get("openclaw"), dict) else {}
    raw = oc.get("events", meta.get("events", []))
    raw = [raw] if isinstance(raw, str) else [e for e in raw if isinstance(e, str)] if isinstance(raw, list) else []
    events: list[str] = []
    missing: list[str] = []
    for event in raw:
        kit_event = EVENT_MAP.get(event, event if event in KNOWN_EVENTS or event.split(":")[0] == "command" else None)
        if kit_event is None:
            missing.append(event)
        elif kit_event not in events:
            events.append(kit_event)
    keep = {k: v for k, v in meta.items() if k not in {"name", "description", "events", "metadata", "enabled"}}
    front = {
        "name": name,
        "description": str(meta.get("description") or f"Imported from OpenClaw hook {name}"),
        "events": events or ["command"],
        "enabled": False,
        "metadata": {**metadata, "openclaw": {**oc, **keep}} if (oc or keep) else metadata,
    }
    rendered = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n" + body
    return rendered, events, missing


def _withhold(text: str) -> tuple[str, list[str]]:
    """The text without the lines the threat scan flags, and one report line per flagged line
    (rule and description, never the matched text)."""
    if scan_threat(text) is None:
        return text, []
    lines = text.split("\n")
    out, flagged = [], []
    for n, line in enumerate(lines, 1):
        threat = scan_threat(line)
        if threat:
            flagged.append(f"line {n}: {threat.summary}")
        else:
            out.append(line)
    if not flagged:  # the whole text is flagged, no single line: leave it all out
        return "", [f"the whole file: {scan_threat(text).summary}"]  # type: ignore[union-attr]
    return "\n".join(out), flagged


# --------------------------------------------------------------------------- config

def _find_config(src: Path, config: Path | None) -> Path | None:
    if config is not None:
        return config
    for candidate in (src / "openclaw.json", src.parent / "openclaw.json"):
        if candidate.is_file():
            return candidate
    return None


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _every_to_cron(every: Any) -> str | None:
    m = re.fullmatch(r"\s*(\d+)\s*([mh])\s*", str(every or ""))
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2)
    if unit == "m" and 0 < n < 60:
        return f"*/{n} * * * *"
    if unit == "h" and 0 < n < 24:
        return f"0 */{n} * * *"
    return None


def map_config(data: dict) -> tuple[dict[str, Any], list[str]]:
    """openclaw.json → kit.yaml values (dotted keys) and report lines for what does not map."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    d = _get(data, "agents", "defaults") or {}
    model = d.get("model")
    if isinstance(model, str):
        out["agent.model"] = model
    elif isinstance(model, dict):
        if isinstance(model.get("primary"), str):
            out["agent.model"] = model["primary"]
        if isinstance(model.get("fallbacks"), list):
            out["agent.fallbacks"] = [str(m) for m in model["fallbacks"]]
    for oc_key, kit_key in (("contextTokens", "agent.context_window"),
                            ("bootstrapMaxChars", "bootstrap.max_chars_per_file"),
                            ("bootstrapTotalMaxChars", "bootstrap.max_total_chars")):
        if isinstance(d.get(oc_key), int):
            out[kit_key] = d[oc_key]
    if d.get("bootstrapPromptTruncationWarning") in ("off", "once", "always"):
        out["bootstrap.warning"] = d["bootstrapPromptTruncationWarning"]
    hybrid = _get(d, "memorySearch", "query", "hybrid") or {}
    for oc_key, kit_key in (("vectorWeight", "memory.search.vector_weight"),
                            ("textWeight", "memory.search.text_weight")):
        if isinstance(hybrid.get(oc_key), int | float):
            out[kit_key] = float(hybrid[oc_key])
    if isinstance(hybrid.get("candidateMultiplier"), int):
        out["memory.search.candidate_multiplier"] = hybrid["candidateMultiplier"]
    mmr = hybrid.get("mmr") if isinstance(hybrid.get("mmr"), dict) else {}
    if isinstance(mmr.get("lambda"), int | float):
        out["memory.search.mmr_lambda"] = float(mmr["lambda"])
    if mmr.get("enabled") is False:
        notes.append("openclaw.json turns MMR off; Kit always diversifies results (memory.search.mmr_lambda)")
    decay = hybrid.get("temporalDecay") if isinstance(hybrid.get("temporalDecay"), dict) else {}
    if isinstance(decay.get("halfLifeDays"), int | float):
        out["memory.search.half_life_days"] = float(decay["halfLifeDays"])
    dreaming = _get(data, "plugins", "entries", "memory-core", "config", "dreaming") or {}
    if isinstance(dreaming.get("enabled"), bool):
        out["dreaming.enabled"] = dreaming["enabled"]
    if isinstance(dreaming.get("frequency"), str):
        out["dreaming.schedule"] = dreaming["frequency"]
    if isinstance(dreaming.get("timezone"), str):
        out["dreaming.timezone"] = dreaming["timezone"]
    extra = _get(data, "skills", "load", "extraDirs")
    if isinstance(extra, list):
        out["skills.extra_dirs"] = [str(p) for p in extra]
    servers = _get(data, "mcp", "servers")
    if isinstance(servers, dict) and servers:
        kept: dict[str, Any] = {}
        for server, spec in servers.items():
            if not isinstance(spec, dict):
                continue
            spec = dict(spec)
            env = spec.get("env") if isinstance(spec.get("env"), dict) else {}
            # a literal value may be a secret: only ${VAR} references reach kit.yaml
            literal = sorted(k for k, v in env.items() if not re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", str(v)))
            if literal:
                spec["env"] = {k: v for k, v in env.items() if k not in literal}
                notes.append(f"mcp server {server}: env {', '.join(literal)} not copied (values may be "
                             f"secrets); set them in your environment and write ${{NAME}} in kit.yaml")
            kept[str(server)] = spec
        out["mcp.servers"] = kept
    heartbeat = d.get("heartbeat")
    cron = _every_to_cron(heartbeat.get("every")) if isinstance(heartbeat, dict) else None
    if cron:
        notes.append(f"openclaw.json heartbeat every {heartbeat['every']}: not set in kit.yaml; set "
                     f"fleet.heartbeat_schedule '{cron}' for `kit fleet beat`, or have cron run "
                     f"`kit run --kind heartbeat` on '{cron}'")
    for name, entry in (_get(data, "skills", "entries") or {}).items():
        if not isinstance(entry, dict):
            continue
        if entry.get("apiKey") or entry.get("env"):
            names = sorted((entry.get("env") or {}).keys()) if isinstance(entry.get("env"), dict) else []
            what = ", ".join(names) if names else "its API key"
            notes.append(f"skill {name}: secrets in openclaw.json are not copied; set {what} in your environment")
        if entry.get("enabled") is False:
            notes.append(f"skill {name} is disabled in openclaw.json; Kit has no per-skill switch: delete "
                         f"skills/{name}/ if you do not want it")
    for key in ("channels", "auth", "gateway", "session", "tools", "bindings"):
        if key in data:
            notes.append(f"openclaw.json '{key}' has no Kit equivalent: not imported")
    for key in ("list", "entries"):
        if _get(data, "agents", key) is not None:
            notes.append(f"openclaw.json agents.{key}: import each agent's workspace on its own "
                         "(`kit import openclaw ~/.openclaw/workspace-<id> DEST`)")
    return out, notes


def _nest(values: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for dotted, value in values.items():
        *parents, leaf = dotted.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def _has_values(kit_yaml: Path, values: dict[str, Any]) -> bool:
    try:
        data = yaml.safe_load(kit_yaml.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return False
    return all(_get(data, *dotted.split(".")) == value for dotted, value in values.items())


# --------------------------------------------------------------------------- walking SRC

def _files(root: Path, sub: str = "") -> Iterator[str]:
    base = root / sub if sub else root
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if ignored_name(name) or path.is_symlink():
                continue
            yield path.relative_to(root).as_posix()


def _skill_dirs(src: Path) -> list[Path]:
    found: list[Path] = []
    root = src / "skills"
    if not root.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and depth < MAX_SKILL_DEPTH)
        if "SKILL.md" in filenames and Path(dirpath) != root:
            found.append(Path(dirpath))
            dirnames[:] = []  # a skill's own folders (scripts/, references/) hold no skills
    return found


def _hook_dirs(src: Path, spec: str) -> list[Path]:
    """The folders of SRC's hooks/ that hold a `spec` file (HOOK.md, Hermes' HOOK.yaml), by name."""
    root = src / "hooks"
    if not root.is_dir():
        return []
    return sorted(d for d in root.iterdir() if d.is_dir() and not d.is_symlink() and (d / spec).is_file())


def _bundled_hooks() -> set[str]:
    folder = bundled("hooks")
    return {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()


# --------------------------------------------------------------------------- the plan

class _Planner:
    def __init__(self, src: Path, dest: Path, force: bool):
        self.src, self.dest, self.force = src, dest, force
        self.in_place = src == dest
        self.actions: list[Action] = []
        self.notes: list[str] = []
        self.claimed: set[str] = set()

    def put(self, dest_rel: str, source_rel: str, data: bytes, note: str = "", *, converted: bool = False) -> None:
        """Plan one file: create, unchanged, overwrite (with --force) or conflict."""
        if dest_rel in self.claimed:
            self.actions.append(Action("skip", "", source_rel, f"{dest_rel} is already imported from another file"))
            return
        self.claimed.add(dest_rel)
        target = self.dest / dest_rel
        if target.is_symlink() or (target.exists() and not target.is_file()):
            self.actions.append(Action("conflict", dest_rel, source_rel, "not a regular file there"))
            return
        if not target.exists():
            self.actions.append(Action("create", dest_rel, source_rel, note, data))
            return
        if target.read_bytes() == data:
            self.actions.append(Action("unchanged", dest_rel, source_rel, note))
        elif self.in_place and source_rel == dest_rel and converted:
            # converting the workspace in place is what `kit import openclaw .` asks for
            self.actions.append(Action("overwrite", dest_rel, source_rel, note or "converted in place", data))
        elif self.in_place and source_rel == dest_rel:
            self.actions.append(Action("unchanged", dest_rel, source_rel, note or "left as it is (in place)"))
        elif dest_rel in NEVER_OVERWRITTEN:
            self.actions.append(Action("conflict", dest_rel, source_rel,
                                       f"{dest_rel} exists with other content; memory is never overwritten, "
                                       "not even with --force: merge it by hand"))
        elif self.force:
            self.actions.append(Action("overwrite", dest_rel, source_rel, note, data))
        else:
            self.actions.append(Action("conflict", dest_rel, source_rel,
                                       f"{dest_rel} exists with other content; --force overwrites it"))

    def text(self, dest_rel: str, source_rel: str, text: str, note: str = "", *, converted: bool = False) -> None:
        """Plan a Markdown text after the threat scan: flagged lines are left out and reported."""
        clean, flagged = _withhold(text)
        same_file = self.in_place and source_rel == dest_rel
        for line in flagged:
            where = ("left in place, since SRC is DEST: review it (Kit's search and recall withhold it)"
                     if same_file else f"left out of the copy (it stays in {source_rel})")
            self.actions.append(Action("withheld", dest_rel, source_rel, f"{line}; {where}"))
        if same_file:
            clean = text  # never delete a line from the person's own file
        elif flagged and not clean.strip():
            return
        self.put(dest_rel, source_rel, clean.encode("utf-8"), note, converted=converted)

    def copy(self, rel: str, dest_rel: str | None = None, note: str = "") -> None:
        path = self.src / rel
        dest_rel = dest_rel or rel
        if rel.endswith(".md"):
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                self.put(dest_rel, rel, path.read_bytes(), note)
                return
            self.text(dest_rel, rel, text, note)
        else:
            self.put(dest_rel, rel, path.read_bytes(), note)

    def skip(self, rel: str, why: str) -> None:
        self.actions.append(Action("skip", "", rel, why))


def plan_openclaw(src: str | os.PathLike, dest: str | os.PathLike | None = None, *,
                  config: str | os.PathLike | None = None, force: bool = False) -> ImportPlan:
    """The plan for importing the OpenClaw workspace `src` into `dest` (default: `src` itself).

    Writes nothing. `config` is openclaw.json (default: beside or above `src`).
    """
    src_path = Path(src).expanduser().resolve()
    dest_path = Path(dest).expanduser().resolve() if dest is not None else src_path
    if not src_path.is_dir():
        raise WorkspaceError(f"{src_path} is not a folder; point `kit import openclaw` at an OpenClaw workspace")
    if not any((src_path / name).is_file() for name in (*BOOTSTRAP, "MEMORY.md")) and not (src_path / "memory").is_dir():
        raise WorkspaceError(f"{src_path} holds no OpenClaw workspace files (AGENTS.md, SOUL.md, MEMORY.md, memory/)")
    if dest_path.exists() and not dest_path.is_dir():
        raise WorkspaceError(f"{dest_path} exists and is not a folder")
    p = _Planner(src_path, dest_path, force)
    done: set[str] = set()

    # kit.yaml from openclaw.json (a new workspace), or a report of the values (an existing one)
    config_path = _find_config(src_path, Path(config).expanduser() if config else None)
    values: dict[str, Any] = {}
    if config_path is not None:
        import json5

        try:
            data = json5.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise WorkspaceError(f"{config_path}: cannot read as JSON5: {exc}") from None
        if not isinstance(data, dict):
            raise WorkspaceError(f"{config_path}: the top level is not an object")
        values, config_notes = map_config(data)
        p.notes.extend(config_notes)
    kit_yaml = dest_path / CONFIG_FILE
    if kit_yaml.exists():
        if values and not _has_values(kit_yaml, values):
            shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
            p.notes.append(f"{CONFIG_FILE} exists and is not changed; openclaw.json would set: {shown}")
    else:
        origin = f" and {config_path.name}" if config_path else ""
        header = (f"# Imported from the OpenClaw workspace {src_path}{origin} by `kit import openclaw`.\n"
                  "# Everything not set here is Kit's default (`kit config show`).\n")
        body = yaml.safe_dump(_nest(values), sort_keys=False, allow_unicode=True) if values else "{}\n"
        p.put(CONFIG_FILE, config_path.name if config_path else "", (header + body).encode("utf-8"),
              "from openclaw.json" if values else "Kit's defaults")

    # .gitignore: the source's lines plus Kit's .kit/ (never removes a line)
    gi_src = (src_path / ".gitignore").read_text(encoding="utf-8") if (src_path / ".gitignore").is_file() else ""
    gi_dest = dest_path / ".gitignore"
    current = gi_dest.read_text(encoding="utf-8") if gi_dest.is_file() else None
    base = current if current is not None else gi_src
    if ".kit/" not in base.split():
        base = base + ("" if not base or base.endswith("\n") else "\n") + ".kit/\n"
    if current is None or base != current:
        p.actions.append(Action("overwrite" if current is not None else "create", ".gitignore", ".gitignore",
                                "adds .kit/ (Kit's state)", base.encode("utf-8")))
    else:
        p.actions.append(Action("unchanged", ".gitignore", ".gitignore"))
    p.claimed.add(".gitignore")
    done.add(".gitignore")

    # bootstrap files and MEMORY.md
    for name in BOOTSTRAP:
        if (src_path / name).is_file():
            p.copy(name)
            done.add(name)
    if (src_path / "MEMORY.md").is_file():
        text = (src_path / "MEMORY.md").read_text(encoding="utf-8")
        converted, n = convert_memory(text)
        p.text("MEMORY.md", "MEMORY.md", converted,
               f"{n} promoted entr{'y' if n == 1 else 'ies'} as Kit provenance" if n else "", converted=bool(n))
        done.add("MEMORY.md")
    for name in ("DREAMS.md", "dreams.md"):
        if (src_path / name).is_file() and "DREAMS.md" not in p.claimed:
            p.copy(name, "DREAMS.md")
            done.add(name)
    if (src_path / "BOOT.md").is_file():
        p.copy("BOOT.md", note="kept; Kit does not run BOOT.md (a session:start hook can)")
        done.add("BOOT.md")

    # daily notes, session archives, dream reports; dreaming's machine state is skipped
    if (src_path / "memory").is_dir():
        for rel in _files(src_path, "memory"):
            if any(rel == d or rel.startswith(d + "/") for d in STATE_DIRS):
                continue
            p.copy(rel)
            done.add(rel)
        for state in STATE_DIRS:
            if (src_path / state).exists():
                p.skip(state + "/", "OpenClaw's dreaming state (recall counts, locks): not imported; Kit "
                                    "builds its own from the searches it records")
                done.update(r for r in _files(src_path, state))

    # skills: grouped skills/<group>/<name>/ become skills/<name>/
    for folder in _skill_dirs(src_path):
        rel_dir = folder.relative_to(src_path).as_posix()
        name = folder.name
        target = f"skills/{name}"
        note = f"from {rel_dir}/ (flattened)" if rel_dir != target else ""
        for rel in _files(src_path, rel_dir):
            p.copy(rel, target + rel[len(rel_dir):], note if rel.endswith("/SKILL.md") else "")
            done.add(rel)
    if (src_path / ".agents" / "skills").is_dir():
        for rel in _files(src_path, ".agents/skills"):
            p.copy(rel)
            done.add(rel)

    # hooks: Kit's frontmatter, disabled; TypeScript handlers kept and reported
    bundled_names = _bundled_hooks()
    for folder in _hook_dirs(src_path, "HOOK.md"):
        hook_md = folder / "HOOK.md"
        name = folder.name
        kit_name = f"openclaw-{name}" if name in bundled_names else name
        target = f"hooks/{kit_name}"
        text, events, missing = convert_hook(hook_md.read_text(encoding="utf-8"), kit_name)
        src_rel = f"hooks/{name}"
        p.text(f"{target}/HOOK.md", f"{src_rel}/HOOK.md", text, "Kit's frontmatter, enabled: false",
               converted=True)
        done.add(f"{src_rel}/HOOK.md")
        for rel in _files(src_path, src_rel):
            if rel == f"{src_rel}/HOOK.md":
                continue
            p.copy(rel, target + rel[len(src_rel):])
            done.add(rel)
        handlers = [f for f in ("handler.ts", "handler.js", "index.ts", "index.js") if (folder / f).is_file()]
        if handlers:
            p.notes.append(f"{target}/{handlers[0]}: not runnable: port to handler.py or a command "
                           f"(the hook is imported disabled)")
        if kit_name != name:
            p.notes.append(f"hooks/{name} is imported as {target}: Kit bundles a '{name}' hook, which "
                           "stays in force")
        if missing:
            p.notes.append(f"{target}: Kit has no {', '.join(missing)} event")

    # everything else is kept as it is and reported
    for rel in _files(src_path):
        if rel in done or rel == "openclaw.json":
            continue
        top = rel.split("/")[0]
        if rel == CONFIG_FILE:
            p.skip(rel, "a kit.yaml in SRC is not imported")
        elif top in {"skills", "hooks"}:
            p.skip(rel, f"not part of a {'skill (no SKILL.md)' if top == 'skills' else 'hook (no HOOK.md)'}")
        else:
            p.copy(rel, note="kept; not used by Kit")
    return ImportPlan("openclaw", src_path, dest_path, tuple(p.actions), tuple(dict.fromkeys(p.notes)))
