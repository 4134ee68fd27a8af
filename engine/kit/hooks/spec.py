"""HOOK.md: discovery in the three roots, validation, and the content hash trust is keyed on."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kit import paths
from kit.core import WorkspaceCore
from kit.documents import split_frontmatter
from kit.errors import DocumentError
from kit.frontmatter import Key, check_keys, folder_problem, key_line, name_problem, unknown_keys
from kit.fsutil import read_bytes, read_text
from kit.hooks.events import unknown_event
from kit.problems import Problem, of_severity

ROOTS = ("bundled", "user", "workspace")  # lowest precedence first
EVENT_RE = re.compile(r"^(?:\*|[a-z][a-z0-9_-]*(?::[a-z0-9_*?\[\]-]+)?)$")
ALLOWED_KEYS = frozenset({"name", "description", "events", "enabled", "timeout_s", "command", "metadata"})
MAX_HASHED_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class HookSpec:
    name: str
    root: str  # bundled | user | workspace
    dir: Path
    description: str = ""
    events: tuple[str, ...] = ()
    enabled: bool = True
    timeout_s: float | None = None  # None: hooks.timeout_s
    command: str | None = None
    # what is wrong with HOOK.md, each at its key's line where one is known (area "hooks", path
    # display_path, details: the hook's name and root); any error makes the hook invalid
    problems: tuple[Problem, ...] = ()

    @property
    def errors(self) -> tuple[str, ...]:
        """The messages of the errors (invalid when non-empty)."""
        return tuple(p.message for p in of_severity(self.problems, "error"))

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(p.message for p in of_severity(self.problems, "warning"))

    @property
    def line(self) -> int | None:
        """Where the first error is, in HOOK.md (1: the frontmatter as a whole); None when valid."""
        first = next(iter(of_severity(self.problems, "error")), None)
        return None if first is None else first.line or 1

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def handler(self) -> Path:
        return self.dir / "handler.py"

    @property
    def kind(self) -> str:
        return "command" if self.command else "handler"

    @property
    def needs_trust(self) -> bool:
        """Workspace code may come from a cloned repository; bundled and the user's own hooks
        ($XDG_CONFIG_HOME/kit/hooks, which only the user writes) are trusted like kit.yaml."""
        return self.root == "workspace"

    @property
    def display_path(self) -> str:
        return display_path_of(self.dir, self.root)

    def digest(self) -> str:
        return hook_digest(self.dir)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "root": self.root, "path": str(self.dir), "description": self.description,
                "events": list(self.events), "enabled": self.enabled, "timeout_s": self.timeout_s,
                "kind": self.kind, "command": self.command, "valid": self.valid,
                "errors": list(self.errors), "warnings": list(self.warnings),
                "problems": [p.to_json() for p in self.problems],
                "file": self.display_path, "line": self.line}


def display_path_of(folder: Path, root: str, file: str = "HOOK.md") -> str:
    """How messages name a hook's HOOK.md (or another file of it): relative in the workspace, else in full."""
    return f"hooks/{folder.name}/{file}" if root == "workspace" else str(folder / file)


def _runs_handler(command: str) -> bool:
    """Whether a hook's command runs the handler.py beside it (`python3 "$KIT_HOOK_DIR/handler.py"`,
    `python -m handler`), so the two are one hook, not a command hiding a handler."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: read it as plain words
        words = command.split()
    return any(w.rsplit("/", 1)[-1] == "handler.py" for w in words) or any(
        a == "-m" and b == "handler" for a, b in zip(words, words[1:], strict=False))


def handler_problem(path: Path) -> tuple[str, int | None] | None:
    """Why handler.py can never run, read without running it (it may not be trusted): a syntax
    error, or no top-level `handle`. Each was only a line in .kit/logs/hooks.log at every event."""
    import ast
    import warnings

    try:
        source = path.read_bytes()
        with warnings.catch_warnings():  # a SyntaxWarning (an invalid escape) is the handler's, not Kit's to print
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=path.name)
    except OSError as exc:
        return f"handler.py cannot be read: {exc.strerror or exc}", None
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte
        line = getattr(exc, "lineno", None)
        return f"handler.py does not compile: {getattr(exc, 'msg', None) or exc}", line
    # only a file that binds `handle` nowhere is refused: wherever a binding is (a def under an if,
    # tuple unpacking, a walrus, a star import), only running the file would tell
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "handle":
            return None
        if isinstance(node, ast.Name) and node.id == "handle" and isinstance(node.ctx, ast.Store):
            return None
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == "handle" or a.name == "*" for a in node.names):
            return None
    return "handler.py defines no top-level handle(event) function", None


def hook_problem(folder: Path, root: str, message: str, line: int | None = None, severity: str = "error") -> Problem:
    """A problem with one HOOK.md: an error (the hook is invalid, it never runs) or a warning.
    `details` name the hook and its root, for `kit hooks list --json`."""
    return Problem(area="hooks", path=display_path_of(folder, root), line=line, message=message,
                   severity=severity, details={"hook": folder.name, "root": root})


IGNORED_SUFFIXES = (".pyc", ".pyo", ".log")


def hashed(name: str) -> bool:
    """Whether a file of a hook folder counts for its trust hash: not caches (`*.pyc`), logs
    (`*.log`) or dotfiles — what running a hook may leave behind must not untrust it."""
    return not name.startswith(".") and not name.endswith(IGNORED_SUFFIXES)


def hook_digest(folder: Path) -> str:
    """sha256 over every file of the hook folder (HOOK.md, handler.py, scripts a command runs),
    so editing any of them needs trusting again. Skipped: `__pycache__` and dot-folders, and
    `*.pyc`, `*.pyo`, `*.log` and dotfiles anywhere."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(filenames):
            if not hashed(name):
                continue
            full = Path(dirpath) / name
            rel = full.relative_to(folder).as_posix()
            h.update(rel.encode() + b"\0")
            try:  # regular files only: a FIFO in the folder must not block loading hooks
                h.update(read_bytes(full, max_bytes=MAX_HASHED_BYTES, cut=True))
            except DocumentError as exc:
                h.update(f"<unreadable {exc.message}>".encode())
            h.update(b"\0")
    return h.hexdigest()


def parse_hook(folder: Path, root: str, text: str | None, *, default_line: int | None = None) -> HookSpec:
    """Validate one hook folder; an invalid hook comes back with error `problems`, never raises."""
    display = display_path_of(folder, root)
    try:
        if text is None:
            text = read_text(folder / "HOOK.md", display=display)
        meta, _body, _line = split_frontmatter(text, display)
    except DocumentError as exc:
        return HookSpec(folder.name, root, folder,
                        problems=(hook_problem(folder, root, exc.message, exc.line or default_line),))
    return validate(meta, folder.name, root, folder, text)


# the keys checked by kind (the name, events and command have rules of their own, below)
KEYS: dict[str, Key] = {
    "description": Key("text", required=True, message="missing 'description'"),
    "enabled": Key("bool"),
    "timeout_s": Key("number", nullable=True, positive=True,
                     message="'timeout_s' must be a positive number of seconds, not {value!r}"),
}


def validate(meta: Mapping[str, Any], folder_name: str, root: str, folder: Path, text: str = "") -> HookSpec:
    """Check the frontmatter; `text` (the HOOK.md) lets each problem name its key's line."""
    problems: list[Problem] = []

    def error(message: str, key: str | None = None) -> None:
        problems.append(hook_problem(folder, root, message, key_line(text, key) if key else None))

    def warn(message: str, key: str | None = None) -> None:
        problems.append(hook_problem(folder, root, message, key_line(text, key) if key else None, "warning"))

    def record(found: list[Problem]) -> None:  # the shared checkers' problems, as this hook's
        problems.extend(hook_problem(folder, root, p.message, p.line, p.severity) for p in found)

    if not meta:
        error("HOOK.md needs YAML frontmatter with name, description and events")
    name = meta.get("name")
    problem = name_problem(name)
    if problem:
        error(problem, "name")
        name = folder_name
    elif name != folder_name:
        error(folder_problem(name, folder_name), "name")
        name = folder_name  # reported under the folder it lives in
    raw_events = meta.get("events")
    events: list[str] = []
    if isinstance(raw_events, str):
        raw_events = [raw_events]
    if not isinstance(raw_events, list) or not raw_events:
        error("'events' must be a non-empty list of event names, such as tool:before", "events")
    else:
        for item in raw_events:
            if not isinstance(item, str) or not EVENT_RE.match(item):
                error(f"event {item!r} is not an event name like 'tool:before' or 'command'", "events")
                continue
            unknown = unknown_event(item)
            if unknown:
                warn(unknown, "events")
            events.append(item)
    good, found = check_keys(meta, KEYS, text=text, area="hooks", path=None)
    record(found)
    description = str(good.get("description", "")).strip()
    enabled = good.get("enabled", "enabled" not in meta)  # absent: enabled; refused: not
    timeout = good.get("timeout_s")
    command = meta.get("command")
    if command is not None:
        if isinstance(command, list) and all(isinstance(c, str) for c in command):
            import shlex

            command = shlex.join(command)
        if not isinstance(command, str) or not command.strip():
            error("'command' must be a non-empty string", "command")
            command = None
        else:
            for rel in _unhashed_files(command, folder):
                warn(f"'command' names {rel}, which the trust hash does not cover (dotfiles, *.log, *.pyc, "
                     "__pycache__): editing it would not untrust the hook; rename it", "command")
            if (folder / "handler.py").is_file() and not _runs_handler(command):
                warn("'command' runs and the handler.py beside it never does (a guard written there does not "
                     "guard): remove one", "command")
    elif enabled and not (folder / "handler.py").is_file():  # a disabled hook may be just HOOK.md
        error("no handler.py next to HOOK.md and no 'command' in its frontmatter")
    elif enabled:
        found_problem = handler_problem(folder / "handler.py")
        if found_problem is not None:
            message, line = found_problem
            problems.append(Problem(area="hooks", path=display_path_of(folder, root, "handler.py"), line=line,
                                    message=message, details={"hook": folder.name, "root": root}))
    record(unknown_keys(meta, ALLOWED_KEYS, text=text, area="hooks", path=None))
    # errors first, then warnings (each in the order found)
    problems.sort(key=lambda p: p.severity != "error")
    return HookSpec(
        name=name, root=root, dir=folder, description=description, events=tuple(events),
        enabled=enabled, timeout_s=float(timeout) if timeout is not None else None, command=command,
        problems=tuple(problems),
    )


def _unhashed_files(command: str, folder: Path) -> list[str]:
    """Files of the hook folder that `command` names (other than as a redirection target) but the
    trust hash skips: editing one could change what runs without untrusting the hook."""
    import shlex

    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    out = []
    for index, token in enumerate(tokens):
        if token.startswith((">", "2>", "&>")) or (index and tokens[index - 1].endswith(">")):
            continue  # a file the command writes (its log, its state) is fine
        for prefix in ("$KIT_HOOK_DIR/", "${KIT_HOOK_DIR}/", "./"):
            token = token.removeprefix(prefix)
        parts = Path(token).parts
        if not parts or Path(token).is_absolute() or ".." in parts:
            continue
        skipped = any(p.startswith(".") or p == "__pycache__" for p in parts) or not hashed(parts[-1])
        if skipped and (folder / token).is_file() and token not in out:
            out.append(token)
    return out


def _scan_dir(root_dir: Path, root: str) -> list[HookSpec]:
    if not root_dir.is_dir():
        return []
    out = []
    for folder in sorted(root_dir.iterdir()):
        if folder.is_dir() and not folder.name.startswith((".", "_")) and (folder / "HOOK.md").is_file():
            out.append(parse_hook(folder, root, None))
    return out


def discover(ws: WorkspaceCore) -> list[HookSpec]:
    """Every hook, winners only (same name: workspace > user > bundled), sorted by root then name.

    An invalid hook never replaces a valid one of the same name in a lower root: the lower one
    stays in force and the invalid one is listed next to it, with its errors and one warning
    saying so (at the invalid file: the lower hook's own HOOK.md has nothing wrong with it, and
    `kit doctor` states the fact once), so `kit doctor` and `kit hooks list` say why."""
    found: dict[str, HookSpec] = {}
    kept_out: list[HookSpec] = []

    def add(spec: HookSpec) -> None:
        previous = found.get(spec.name)
        if previous is not None and previous.valid and not spec.valid:
            kept_out.append(replace(spec, problems=spec.problems + (hook_problem(
                spec.dir, spec.root, f"the {previous.root} hook {spec.name!r} stays in force until this one "
                "is valid", severity="warning"),)))
            return
        found[spec.name] = spec

    for spec in _scan_dir(paths.bundled("hooks"), "bundled") + _scan_dir(paths.user_hooks_dir(), "user"):
        add(spec)
    snapshot = ws.snapshot
    # workspace hooks come from the snapshot, which keeps the last good HOOK.md of a broken edit
    for rel in snapshot.names("hooks/*/HOOK.md"):
        folder = ws.root / "hooks" / rel.split("/")[1]
        add(parse_hook(folder, "workspace", snapshot.documents[rel].text))
    for issue in snapshot.issues:
        parts = issue.path.split("/")
        if len(parts) == 3 and parts[0] == "hooks" and parts[2] == "HOOK.md" and parts[1] not in {
            n.split("/")[1] for n in snapshot.names("hooks/*/HOOK.md")
        }:
            folder = ws.root / "hooks" / parts[1]
            # the snapshot's own words, path and line: doctor keeps this one report of the file
            add(HookSpec(parts[1], "workspace", folder,
                         problems=(hook_problem(folder, "workspace", issue.message, issue.line),)))
    order = {r: i for i, r in enumerate(ROOTS)}
    return sorted([*found.values(), *kept_out], key=lambda s: (order[s.root], s.name))
