"""The fleet registry: the workspace paths and globs `kit fleet` dispatches to, in one YAML file.

    # Kit fleet registry …
    workspaces:
      - /srv/kit/team                  # one workspace
      - /srv/kit/users/*               # a glob: every folder it matches that holds kit.yaml
      - path: /mnt/shard-b/**/agent    # an entry routed to its own queue
        queue: shard-b

Paths are stored absolute. `add`/`remove` rewrite the file (its entries and this header; other
comments are not kept) as a compare-and-swap: an edit saved meanwhile is merged, never reverted.
A malformed file is one error naming the file and line.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kit.errors import ConfigError, DocumentError, WorkspaceError
from kit.filewrite import update_file
from kit.fsutil import read_text
from kit.paths import CONFIG_FILE
from kit.yamlsafe import YamlError, load_yaml

HEADER = """\
# Kit fleet registry: the workspaces `kit fleet dream|index|heartbeat` dispatch to.
# Written by `kit fleet add` and `kit fleet remove`; you may edit it (comments are not kept).
# An entry is a path or a glob (every folder it matches that holds kit.yaml), optionally with
# the queue its tasks go to: `- {path: /srv/shard-b/*, queue: shard-b}`. See docs/fleet.md.
"""
GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Entry:
    pattern: str
    queue: str | None = None

    @property
    def is_glob(self) -> bool:
        return any(c in GLOB_CHARS for c in self.pattern)

    def to_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "queue": self.queue, "glob": self.is_glob}


@dataclass(frozen=True)
class Member:
    """One workspace of the fleet (an entry's path, or a folder one of its globs matched)."""

    path: str
    queue: str | None
    pattern: str
    problem: str | None = None  # a registered path that is gone or no longer a workspace

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "queue": self.queue, "pattern": self.pattern, "problem": self.problem}


@dataclass(frozen=True)
class Change:
    done: tuple[str, ...]  # added / removed patterns
    unchanged: tuple[str, ...]  # already registered / not registered
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"done": list(self.done), "unchanged": list(self.unchanged), "notes": list(self.notes)}


def normalise(pattern: str | os.PathLike, cwd: str | os.PathLike | None = None) -> str:
    """An absolute, tidy pattern (~ expanded, relative to `cwd`); symlinks are kept as written."""
    text = os.path.expanduser(str(pattern))
    if not os.path.isabs(text):
        text = os.path.join(os.fspath(cwd or os.getcwd()), text)
    return os.path.normpath(text)


def is_workspace(path: str | os.PathLike) -> bool:
    return (Path(path) / CONFIG_FILE).is_file()


class Registry:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    # ------------------------------------------------------------------ reading

    def entries(self) -> list[Entry]:
        """The registered entries, in file order; [] when the file does not exist yet."""
        if not os.path.lexists(self.path):
            return []
        try:
            text = read_text(self.path, display=str(self.path))
        except DocumentError as exc:  # not UTF-8, a FIFO or device, a symlink loop: one line, no hang
            raise ConfigError(exc.message, path=str(self.path), line=exc.line) from None
        return _parse(text, str(self.path))

    def members(self) -> list[Member]:
        """Every workspace the entries name, each once (the first entry naming it sets its queue)."""
        seen: set[str] = set()
        out: list[Member] = []
        for entry in self.entries():
            if entry.is_glob:
                found = sorted(p for p in glob.glob(entry.pattern, recursive=True) if is_workspace(p))
                candidates = [(os.path.normpath(p), None) for p in found]
            else:
                candidates = [(entry.pattern, _problem(entry.pattern))]
            for path, problem in candidates:
                if path not in seen:
                    seen.add(path)
                    out.append(Member(path, entry.queue, entry.pattern, problem))
        return out

    # ------------------------------------------------------------------ writing

    def add(self, patterns: Iterable[str | os.PathLike], *, queue: str | None = None,
            cwd: str | os.PathLike | None = None) -> Change:
        """Register paths or globs. A plain path must be a workspace (a typo is an error, and then
        nothing is added); a glob may match nothing yet."""
        wanted = [Entry(normalise(raw, cwd), queue or None) for raw in patterns]
        notes: list[str] = []
        for entry in wanted:
            if not entry.is_glob:
                problem = _problem(entry.pattern)
                if problem:
                    raise WorkspaceError(f"{entry.pattern}: {problem}; nothing was added")
            elif not any(is_workspace(p) for p in glob.glob(entry.pattern, recursive=True)):
                notes.append(f"{entry.pattern} matches no workspace yet")

        def change(entries: list[Entry]) -> Change:
            known = {e.pattern: e for e in entries}
            done: list[str] = []
            unchanged: list[str] = []
            for entry in wanted:
                old = known.get(entry.pattern)
                if old == entry:
                    unchanged.append(entry.pattern)
                    continue
                if old is not None:  # same pattern, new queue: update in place
                    entries[entries.index(old)] = entry
                else:
                    entries.append(entry)
                known[entry.pattern] = entry
                done.append(entry.pattern)
            return Change(tuple(done), tuple(unchanged), tuple(notes))

        return self._update(change)

    def remove(self, patterns: Iterable[str | os.PathLike], *, cwd: str | os.PathLike | None = None) -> Change:
        """Unregister entries by their pattern (as given to `add`). A path that only a glob covers
        cannot be removed alone: the note names the glob."""
        wanted = [normalise(raw, cwd) for raw in patterns]

        def change(entries: list[Entry]) -> Change:
            done: list[str] = []
            unchanged: list[str] = []
            notes: list[str] = []
            for pattern in wanted:
                match = [e for e in entries if e.pattern == pattern]
                if match:
                    entries[:] = [e for e in entries if e.pattern != pattern]
                    done.append(pattern)
                    continue
                unchanged.append(pattern)
                covering = [e.pattern for e in entries if e.is_glob and fnmatch.fnmatch(pattern, e.pattern)]
                if covering:
                    notes.append(f"{pattern} is not an entry of its own; the glob {covering[0]!r} covers it "
                                 "(remove that glob, or narrow it)")
            return Change(tuple(done), tuple(unchanged), tuple(notes))

        return self._update(change)

    def _update(self, change: Callable[[list[Entry]], Change]) -> Change:
        """Apply `change` to the entries as the file holds them at the moment of writing: a person
        editing the registry meanwhile is re-read and merged, never overwritten (compare-and-swap)."""
        display = str(self.path)
        outcome: list[Change] = []

        def merge(text: str | None) -> str | None:
            entries = _parse(text, display) if text is not None else []
            outcome[:] = [change(entries)]
            return _render(entries) if outcome[0].done else None

        try:
            update_file(self.path, merge, display=display)
        except DocumentError as exc:
            raise ConfigError(exc.message, path=display, line=exc.line) from None
        return outcome[0]


def _render(entries: list[Entry]) -> str:
    items: list[Any] = [e.pattern if e.queue is None else {"path": e.pattern, "queue": e.queue} for e in entries]
    body = yaml.safe_dump({"workspaces": items}, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return HEADER + body


def _problem(path: str) -> str | None:
    p = Path(path)
    if not p.exists():
        return "does not exist"
    if not p.is_dir():
        return "is not a directory"
    if not is_workspace(p):
        return f"has no {CONFIG_FILE}, so it is not a Kit workspace"
    return None


def _parse(text: str, display: str) -> list[Entry]:
    try:  # bounded: depth, aliases, string size (a registry nested 10,000 deep is one line, not a crash)
        _, root = load_yaml(text, construct=False)
    except YamlError as exc:
        raise ConfigError(f"invalid YAML: {exc.message}", path=display, line=exc.line) from None
    if root is None:
        return []

    def fail(node: yaml.Node, message: str) -> ConfigError:
        return ConfigError(message, path=display, line=node.start_mark.line + 1)

    if not isinstance(root, yaml.MappingNode):
        raise fail(root, "the registry must be a mapping with a 'workspaces' list")
    seq = None
    for key, value in root.value:
        if key.value != "workspaces":
            raise fail(key, f"unknown key '{key.value}' (the registry holds only 'workspaces')")
        seq = value
    if seq is None or (isinstance(seq, yaml.ScalarNode) and seq.value in ("", "null", "~")):
        return []
    if not isinstance(seq, yaml.SequenceNode):
        raise fail(seq, "'workspaces' must be a list of paths or globs")
    out: list[Entry] = []
    for item in seq.value:
        if isinstance(item, yaml.ScalarNode) and item.value.strip():
            out.append(Entry(normalise(item.value)))
            continue
        if isinstance(item, yaml.MappingNode):
            fields = {k.value: v for k, v in item.value}
            unknown = set(fields) - {"path", "queue"}
            if unknown:
                raise fail(item, f"unknown key '{sorted(unknown)[0]}' in a workspaces entry (use path and queue)")
            path, queue = fields.get("path"), fields.get("queue")
            if not isinstance(path, yaml.ScalarNode) or not path.value.strip():
                raise fail(item, "a workspaces entry needs 'path: PATH-OR-GLOB'")
            if queue is not None and (not isinstance(queue, yaml.ScalarNode) or not queue.value.strip()):
                raise fail(queue, "'queue' must be a queue name")
            out.append(Entry(normalise(path.value), queue.value.strip() if queue is not None else None))
            continue
        raise fail(item, "each workspaces entry is a path, a glob, or {path: …, queue: …}")
    return out
