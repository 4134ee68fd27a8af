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

from kit.documents import split_frontmatter
from kit.dreaming import managed
from kit.errors import DocumentError, WorkspaceError
from kit.hooks.events import KNOWN_EVENTS
from kit.ignore import ignored_name
from kit.importers.mcp import OPENCLAW, kit_values
from kit.importers.plan import Action, ImportPlan
from kit.importers.reading import config_text, kind_of, load_json5, source_text
from kit.importers.values import TypedReader, nest
from kit.init import NEVER_OVERWRITTEN
from kit.memory.recall import claim_hash
from kit.paths import CONFIG_FILE, bundled
from kit.threats import scan as scan_threat
from kit.yamlsafe import YamlError, load_mapping

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


def hook_events(raw: Any) -> tuple[list[str], list[str]]:
    """OpenClaw events as Kit's: (Kit events, events Kit has no equivalent of). Nothing is guessed:
    a hook whose events all lack one gets no events (the plan leaves it out and says why)."""
    raw = [raw] if isinstance(raw, str) else [e for e in raw if isinstance(e, str)] if isinstance(raw, list) else []
    events: list[str] = []
    missing: list[str] = []
    for event in raw:
        kit_event = EVENT_MAP.get(event, event if event in KNOWN_EVENTS or event.split(":")[0] == "command" else None)
        if kit_event is None:
            missing.append(event)
        elif kit_event not in events:
            events.append(kit_event)
    return events, missing


def convert_hook(text: str, name: str, display: str) -> tuple[str, list[str], list[str]]:
    """An OpenClaw HOOK.md in Kit's form, disabled: (text, Kit events, events Kit lacks).

    Broken frontmatter YAML raises DocumentError at its line (`display`: the file, as the message
    names it): events read from a half-parsed file would be a guess."""
    meta, body, _ = split_frontmatter(text, display)
    metadata = meta.get("metadata") if isinstance(meta.get("metadata"), dict) else {}
    oc = metadata.get("openclaw") if isinstance(metadata.get("openclaw"), dict) else {}
    events, missing = hook_events(oc.get("events", meta.get("events", [])))
    keep = {k: v for k, v in meta.items() if k not in {"name", "description", "events", "metadata", "enabled"}}
    front = {
        "name": name,
        "description": str(meta.get("description") or f"Imported from OpenClaw hook {name}"),
        "events": events,
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
    """openclaw.json: the one given, else SRC's, else its parent's (~/.openclaw/ beside workspace/).
    A folder by that name is an error, not a file that is quietly not there."""
    for candidate in ([config] if config is not None else [src / "openclaw.json", src.parent / "openclaw.json"]):
        if candidate.is_file():
            return candidate
        if candidate.exists():
            raise WorkspaceError(f"{candidate} is a folder, not OpenClaw's config file: rename it, or name "
                                 "the config file with --config FILE")
        if config is not None:
            raise WorkspaceError(f"{candidate} does not exist (--config names OpenClaw's openclaw.json)")
    return None


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


# openclaw.json key (under agents.defaults) -> kit.yaml key, and what the value must be
_DEFAULTS = (
    ("contextTokens", "agent.context_window", "whole"),
    ("bootstrapMaxChars", "bootstrap.max_chars_per_file", "whole"),
    ("bootstrapTotalMaxChars", "bootstrap.max_total_chars", "whole"),
    ("bootstrapPromptTruncationWarning", "bootstrap.warning", "string"),
    ("memorySearch.query.hybrid.vectorWeight", "memory.search.vector_weight", "number"),
    ("memorySearch.query.hybrid.textWeight", "memory.search.text_weight", "number"),
    ("memorySearch.query.hybrid.candidateMultiplier", "memory.search.candidate_multiplier", "whole"),
    ("memorySearch.query.hybrid.mmr.lambda", "memory.search.mmr_lambda", "number"),
    ("memorySearch.query.hybrid.temporalDecay.halfLifeDays", "memory.search.half_life_days", "number"),
)
_DREAMING = (("enabled", "dreaming.enabled", "bool"), ("frequency", "dreaming.schedule", "string"),
             ("timezone", "dreaming.timezone", "string"))
_DREAMING_AT = "plugins.entries.memory-core.config.dreaming"
# kit.yaml fields that are floats take an openclaw.json whole number as one (vectorWeight: 1)
_FLOATS = {"memory.search.vector_weight", "memory.search.text_weight", "memory.search.mmr_lambda",
           "memory.search.half_life_days"}


def _map_model(r: TypedReader, out: dict[str, Any], names: dict[str, str]) -> None:
    model = r.get("agents.defaults.model", "string", "mapping")
    if isinstance(model, str):
        out["agent.model"], names["agent.model"] = model, "agents.defaults.model"
    elif isinstance(model, dict):
        if (primary := r.get("agents.defaults.model.primary", "string")) is not None:
            out["agent.model"], names["agent.model"] = primary, "agents.defaults.model.primary"
        if (fallbacks := r.get("agents.defaults.model.fallbacks", "strings")) is not None:
            out["agent.fallbacks"], names["agent.fallbacks"] = fallbacks, "agents.defaults.model.fallbacks"


def _map_secrets_and_switches(r: TypedReader, notes: list[str]) -> None:
    """skills.entries: API keys and env are secrets (reported, never copied); Kit has no per-skill switch."""
    for name, entry in r.section("skills.entries").items():
        if not isinstance(entry, dict):
            notes.append(f"openclaw.json skills.entries.{name} is {kind_of(entry)}, not an object: not imported")
            continue
        if entry.get("apiKey") or entry.get("env"):
            names = sorted(entry["env"]) if isinstance(entry.get("env"), dict) else []
            what = ", ".join(names) if names else "its API key"
            notes.append(f"skill {name}: secrets in openclaw.json are not copied; set {what} in your environment")
        if entry.get("enabled") is False:
            notes.append(f"skill {name} is disabled in openclaw.json; Kit has no per-skill switch: delete "
                         f"skills/{name}/ if you do not want it")


def _heartbeat_note(r: TypedReader) -> str | None:
    every = r.get("agents.defaults.heartbeat.every", "string", "number")
    if every is None:
        return None
    cron = _every_to_cron(every)
    if cron is None:
        return (f"openclaw.json heartbeat every {every}: not set in kit.yaml (no cron schedule says that); have "
                "cron run `kit run --kind heartbeat` as often as you want it")
    return (f"openclaw.json heartbeat every {every}: not set in kit.yaml; set fleet.heartbeat_schedule '{cron}' "
            f"for `kit fleet beat`, or have cron run `kit run --kind heartbeat` on '{cron}'")


def map_config(data: dict) -> tuple[dict[str, Any], list[str]]:
    """openclaw.json → kit.yaml values (dotted keys) and report lines for what does not map: a value
    of the wrong type, or one Kit's config loader refuses, is reported by its key and not imported."""
    r = TypedReader("openclaw.json", data)
    out: dict[str, Any] = {}
    names: dict[str, str] = {}  # kit.yaml key -> the openclaw.json key it came from, for reports
    notes: list[str] = []
    _map_model(r, out, names)
    for oc_key, kit_key, kind in _DEFAULTS:
        value = r.get(f"agents.defaults.{oc_key}", kind)
        if value is not None:
            out[kit_key] = float(value) if kit_key in _FLOATS else value
            names[kit_key] = f"agents.defaults.{oc_key}"
    if r.get("agents.defaults.memorySearch.query.hybrid.mmr.enabled", "bool") is False:
        notes.append("openclaw.json turns MMR off; Kit always diversifies results (memory.search.mmr_lambda)")
    for oc_key, kit_key, kind in _DREAMING:
        value = r.get(f"{_DREAMING_AT}.{oc_key}", kind)
        if value is not None:
            out[kit_key], names[kit_key] = value, f"{_DREAMING_AT}.{oc_key}"
    if (extra := r.get("skills.load.extraDirs", "strings")) is not None:
        out["skills.extra_dirs"], names["skills.extra_dirs"] = extra, "skills.load.extraDirs"
    out, said = kit_values(out, names, r.section("mcp.servers"), OPENCLAW)
    notes.extend(said)
    if (heartbeat := _heartbeat_note(r)) is not None:
        notes.append(heartbeat)
    _map_secrets_and_switches(r, notes)
    for key in ("channels", "auth", "gateway", "session", "tools", "bindings"):
        if key in data:
            notes.append(f"openclaw.json '{key}' has no Kit equivalent: not imported")
    for key in ("list", "entries"):
        if isinstance(data.get("agents"), dict) and data["agents"].get(key) is not None:
            notes.append(f"openclaw.json agents.{key}: import each agent's workspace on its own "
                         "(`kit import openclaw ~/.openclaw/workspace-<id> DEST`)")
    return out, [*r.notes, *notes]


def _has_values(kit_yaml: Path, values: dict[str, Any]) -> bool:
    """Whether DEST's kit.yaml already holds every value (one it cannot read holds none)."""
    try:
        data, _ = load_mapping(config_text(kit_yaml, str(kit_yaml)))
    except (DocumentError, YamlError):
        return False
    return all(_get(data, dotted) == value for dotted, value in values.items())


def _get(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


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
            # not a conflict: --force would not change it, so "--force overwrites it" would be untrue
            # (as `kit init`, which keeps memory and says so); the exit code stays 0 for it
            self.actions.append(Action("skip", dest_rel, source_rel,
                                       f"{dest_rel} exists with other content: kept, as memory is never "
                                       f"overwritten (not even with --force); merge {self.src / source_rel} "
                                       "into it by hand"))
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

    def read(self, rel: str) -> str:
        """SRC's text `rel`; not UTF-8 stops the plan (`/…/MEMORY.md:2: not valid UTF-8 (byte 14)`):
        Markdown the threat scan cannot read is not imported unscanned."""
        return source_text(self.src / rel, str(self.src / rel))

    def copy(self, rel: str, dest_rel: str | None = None, note: str = "") -> None:
        dest_rel = dest_rel or rel
        if rel.endswith(".md"):
            self.text(dest_rel, rel, self.read(rel), note)
        else:
            self.put(dest_rel, rel, (self.src / rel).read_bytes(), note)

    def skip(self, rel: str, why: str) -> None:
        self.actions.append(Action("skip", "", rel, why))


def _plan_config(p: _Planner, config_path: Path | None) -> None:
    """kit.yaml from openclaw.json for a new workspace; for an existing one (never overwritten),
    a report of the values it lacks. openclaw.json that does not parse stops the plan."""
    values: dict[str, Any] = {}
    if config_path is not None:
        data = load_json5(config_path, str(config_path))
        if not isinstance(data, dict):
            raise DocumentError(f"the top level is {kind_of(data)}, not an object", path=str(config_path))
        values, config_notes = map_config(data)
        p.notes.extend(config_notes)
    kit_yaml = p.dest / CONFIG_FILE
    if kit_yaml.exists():
        if values and not _has_values(kit_yaml, values):
            shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
            p.notes.append(f"{CONFIG_FILE} exists and is not changed; openclaw.json would set: {shown}")
        return
    origin = f" and {config_path.name}" if config_path else ""
    header = (f"# Imported from the OpenClaw workspace {p.src}{origin} by `kit import openclaw`.\n"
              "# Everything not set here is Kit's default (`kit config show`).\n")
    body = yaml.safe_dump(nest(values), sort_keys=False, allow_unicode=True) if values else "{}\n"
    p.put(CONFIG_FILE, config_path.name if config_path else "", (header + body).encode("utf-8"),
          "from openclaw.json" if values else "Kit's defaults")


def _plan_gitignore(p: _Planner) -> None:
    """.gitignore: the source's lines plus Kit's .kit/ (never removes a line)."""
    gi_src = p.read(".gitignore") if (p.src / ".gitignore").is_file() else ""
    gi_dest = p.dest / ".gitignore"
    current = source_text(gi_dest, str(gi_dest)) if gi_dest.is_file() else None
    base = current if current is not None else gi_src
    if ".kit/" not in base.split():
        base = base + ("" if not base or base.endswith("\n") else "\n") + ".kit/\n"
    if current is None or base != current:
        p.actions.append(Action("append" if current is not None else "create", ".gitignore", ".gitignore",
                                "adds .kit/ (Kit's state)", base.encode("utf-8")))
    else:
        p.actions.append(Action("unchanged", ".gitignore", ".gitignore"))
    p.claimed.add(".gitignore")


def _plan_hook(p: _Planner, name: str, bundled_name: bool) -> None:
    """One hook folder as a disabled Kit hook (renamed openclaw-<name> when Kit bundles that name).
    Broken frontmatter stops the plan; a hook with no Kit event is left out and reported."""
    src_rel = f"hooks/{name}"
    kit_name = f"openclaw-{name}" if bundled_name else name
    target = f"hooks/{kit_name}"
    text, events, missing = convert_hook(p.read(f"{src_rel}/HOOK.md"), kit_name, str(p.src / src_rel / "HOOK.md"))
    if not events:
        why = f"Kit has no {', '.join(missing)} event" if missing else "its HOOK.md names no events"
        p.skip(f"{src_rel}/", f"not imported: {why} (an event would be a guess; it stays in SRC)")
        return
    p.text(f"{target}/HOOK.md", f"{src_rel}/HOOK.md", text, "Kit's frontmatter, enabled: false", converted=True)
    for rel in _files(p.src, src_rel):
        if rel != f"{src_rel}/HOOK.md":
            p.copy(rel, target + rel[len(src_rel):])
    handlers = [f for f in ("handler.ts", "handler.js", "index.ts", "index.js") if (p.src / src_rel / f).is_file()]
    if handlers:
        p.notes.append(f"{target}/{handlers[0]}: not runnable: port to handler.py or a command "
                       f"(the hook is imported disabled)")
    if bundled_name:
        p.notes.append(f"hooks/{name} is imported as {target}: Kit bundles a '{name}' hook, which stays in force")
    if bundled_name and p.in_place:
        # nothing of the person's is deleted in place, but Kit reads the original as a hook of its own
        # (invalid: OpenClaw's frontmatter) beside the bundled one: say so and how to end it
        p.skip(f"{src_rel}/", f"left as it is (in place, nothing is deleted), but Kit reads it as an invalid "
                              f"hook '{name}' (`kit doctor` reports it; the bundled one stays in force): "
                              f"delete {src_rel}/ once {target}/ holds what you need")
    if missing:
        p.notes.append(f"{target}: Kit has no {', '.join(missing)} event")


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
    done: set[str] = {".gitignore"}
    _plan_config(p, _find_config(src_path, Path(config).expanduser() if config else None))
    _plan_gitignore(p)

    # bootstrap files and MEMORY.md
    for name in BOOTSTRAP:
        if (src_path / name).is_file():
            p.copy(name)
            done.add(name)
    if (src_path / "MEMORY.md").is_file():
        converted, n = convert_memory(p.read("MEMORY.md"))
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
        _plan_hook(p, folder.name, folder.name in bundled_names)
        done.update(_files(src_path, f"hooks/{folder.name}"))

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
