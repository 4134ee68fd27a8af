"""The workspace core: a directory's current snapshot, its config, reloads, Kit's own writes, and
the objects that live as long as the workspace does.

Subsystems (prompt, skills, hooks, memory, dreaming, agent) are written against `WorkspaceCore`
and import this module only; the facade `kit.workspace.Workspace` builds on it and adds the
subsystems as properties. So no subsystem ever imports the facade, and the facade may import them all.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from kit.config import Config, config_errors, defaults, load_config
from kit.documents import Document, load_document, rel_posix
from kit.errors import ConfigError, DocumentError, WorkspaceError
from kit.fsutil import is_symlink_loop, is_within, no_link_below, safe_join, sha1_hex
from kit.ignore import is_ignored
from kit.locks import LockFile
from kit.paths import CONFIG_FILE, foreign_workspace
from kit.problems import Problem
from kit.snapshot import (
    CONFIG_DEFAULTS,
    CONFIG_EARLIER,
    CONFIG_KEPT,
    CONFIG_OK,
    CONFIG_VALID,
    TRACKED_PATTERNS,
    Snapshot,
    is_tracked,
    wants_frontmatter,
)

if TYPE_CHECKING:
    from kit.filewrite import FileState, Update  # imported by the first write: reads never need it
    from kit.state import Migration, StateDB  # sqlite3: imported when a state.db is opened

T = TypeVar("T")

WRITE_LOCK_WAIT = 10.0  # seconds a write waits for another Kit process's write to the workspace
ANY = object()  # write_text(expected=ANY): write whatever the file holds now


@dataclass(frozen=True)
class ReloadResult:
    version: int
    changed: tuple[str, ...]  # workspace-relative paths whose content changed (any file)
    errors: tuple[Problem, ...]  # problems with the paths of this reload
    # listeners that raised (each is logged with its traceback; the others still ran)
    listener_errors: tuple[Problem, ...] = ()

    def to_json(self) -> dict[str, Any]:
        errors = [str(e) for e in (*self.errors, *self.listener_errors)]
        return {"version": self.version, "changed": list(self.changed), "errors": errors}


Listener = Callable[[ReloadResult, Snapshot], None]
W = TypeVar("W", bound="WorkspaceCore")


_FOREIGN = {"openclaw": "an OpenClaw", "hermes": "a Hermes"}


def _import_hint(kind: str, root: Path, shown: str) -> str:
    """The refusal for a foreign agent's folder, naming the command that fixes it."""
    if kind == "hermes":  # Hermes' home is its state folder: imported into a new one, never in place
        return (f"{root} looks like a Hermes home and has no {CONFIG_FILE}: run "
                f"`kit import hermes {shown} PATH` to make a Kit workspace of it at PATH")
    return (f"{root} looks like {_FOREIGN[kind]} workspace and has no {CONFIG_FILE}: "
            f"run `kit import {kind} {shown}` to make it a Kit workspace")


def find_workspace(start: str | os.PathLike | None = None) -> Path:
    """-w default: $KIT_WORKSPACE, else the nearest ancestor holding kit.yaml."""
    env = os.environ.get("KIT_WORKSPACE")
    if env:
        return Path(env)
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        # any entry named kit.yaml marks the workspace, even one that is not a regular file
        # (a link to /dev/zero, a symlink loop): opening it then names the file and what is wrong
        # with it, instead of "no workspace found"
        if os.path.lexists(folder / CONFIG_FILE):
            return folder
    kind = foreign_workspace(here)
    if kind:
        raise WorkspaceError(_import_hint(kind, here, "."))
    raise WorkspaceError(
        f"no workspace found: neither {here} nor any parent holds {CONFIG_FILE}. "
        "Create one with `kit init PATH`, or pass -w PATH / set KIT_WORKSPACE."
    )


class WorkspaceCore:
    """A loaded workspace. Thread-safe for one writer (the watcher) and many readers.

    `embedders` is a per-process resource a caller may share between workspaces (the embedding
    model cache of `kit.memory.embeddings`, so a fleet worker loads the model once); None lets
    the workspace make its own on first use.
    """

    def __init__(self, root: Path, *, flags: Mapping[str, Any] | None = None, embedders: Any = None):
        self.root = root
        self.flags = dict(flags or {})
        self.embedders = embedders
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._documents: dict[str, Document] = {}
        self._doc_issues: dict[str, Problem] = {}
        self._config_issues: list[Problem] = []
        self._config: Config | None = None
        self._config_state = CONFIG_OK  # what is in force while _config_issues is not empty
        self._known_hashes: dict[str, str] = {}
        self._version = 0
        self._snapshot: Snapshot | None = None
        self._cache: dict[str, tuple[int, Any]] = {}
        self._read_only = 0  # > 0 inside read_only(): state is read, never written
        self._owned: dict[str, Any] = {}
        self._owned_lock = threading.Lock()
        self._write_guard = threading.RLock()  # one Kit write at a time in this process …
        self._write_depth = 0
        self._write_lock: LockFile | None = None  # … and across processes (.kit/locks/write.lock)

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls: type[W], path: str | os.PathLike, *, flags: Mapping[str, Any] | None = None, embedders: Any = None
    ) -> W:
        """Open and load the workspace at `path` (WorkspaceError if it is not one)."""
        root = Path(path).expanduser()
        if not root.exists():
            raise WorkspaceError(f"workspace {root} does not exist; create it with `kit init {root}`")
        if not root.is_dir():
            raise WorkspaceError(f"workspace {root} is not a directory")
        if not os.path.lexists(root / CONFIG_FILE):
            kind = foreign_workspace(root)
            if kind:
                raise WorkspaceError(_import_hint(kind, root, str(root)))
            raise WorkspaceError(f"{root} has no {CONFIG_FILE}, so it is not a Kit workspace; run `kit init {root}`")
        ws = cls(root.resolve(), flags=flags, embedders=embedders)
        ws.reload()
        return ws

    # ------------------------------------------------------------------ state

    @property
    def snapshot(self) -> Snapshot:
        assert self._snapshot is not None
        return self._snapshot

    @property
    def config(self) -> Config:
        return self.snapshot.config

    @property
    def version(self) -> int:
        return self.snapshot.version

    @property
    def kit_dir(self) -> Path:
        return self.root / ".kit"

    def open_state(self, component: str | None = None, migrations: Sequence[Migration] = ()) -> StateDB:
        """A new connection to .kit/state.db for the calling thread; close it when done. With a
        `component`, its `migrations` not applied yet are applied first. Inside `read_only()` the
        connection never writes (see StateDB's read_only)."""
        from kit.state import StateDB

        db = StateDB(self.kit_dir / "state.db", read_only=self.is_read_only)
        if component is not None:
            try:
                db.migrate(component, migrations)
            except BaseException:
                db.close()
                raise
        return db

    @property
    def is_read_only(self) -> bool:
        """True inside `read_only()`: code that opens its own files (index.db …) must not write."""
        return self._read_only > 0

    @contextmanager
    def read_only(self: W) -> Iterator[W]:
        """Within this block nothing is written into the workspace through the facade:
        `open_state()` gives read-only connections and `write_text()` refuses. `kit doctor`
        runs its checks this way."""
        with self._lock:
            self._read_only += 1
        try:
            yield self
        finally:
            with self._lock:
                self._read_only -= 1

    def path(self, rel: str) -> Path:
        """A workspace-confined path (refuses .., absolute paths and escaping symlinks)."""
        return safe_join(self.root, rel)

    def cached(self, key: str, build: Callable[[], Any]) -> Any:
        """Memoise `build()` per snapshot version (prompt, skill catalog, hook registry …)."""
        with self._lock:
            version = self.snapshot.version
            hit = self._cache.get(key)
            if hit and hit[0] == version:
                return hit[1]
        value = build()
        with self._lock:
            self._cache[key] = (version, value)
        return value

    def owned(self, key: str, build: Callable[[], T]) -> T:
        """The object this workspace owns under `key`, built by `build()` on first use (the memory
        service, the skills' last valid versions, the script provider's positions …). It lives as
        long as the workspace: nothing Kit keeps is a module global."""
        with self._owned_lock:
            if key not in self._owned:
                self._owned[key] = build()
            return self._owned[key]

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    # ------------------------------------------------------------------ reload

    def _scan_tracked(self) -> set[str]:
        found: set[str] = set()
        for pattern in TRACKED_PATTERNS:
            for p in self.root.glob(pattern):
                rel = rel_posix(self.root, p)
                if is_tracked(rel) and not is_ignored(rel):
                    found.add(rel)
        return found

    def _load_config(self) -> bool:
        """Reload kit.yaml; on failure keep the last good config. True if the config changed."""
        try:
            cfg = load_config(self.root, flags=self.flags)
        except ConfigError as exc:
            self._config_issues = [
                Problem.from_error(e, CONFIG_FILE, area="config") for e in config_errors(exc)
            ]
            partial = getattr(exc, "partial", None)
            if self._config is None:
                # first load failed: start on every value that is valid (else the defaults), and say so
                self._config = partial if partial is not None else Config(data=defaults(), sources={})
                self._config_state = CONFIG_VALID if partial is not None else CONFIG_DEFAULTS
                return True
            # a broken edit: what was in force stays (unless it is just what the edit's valid values give)
            if self._config_state == CONFIG_OK:
                self._config_state = CONFIG_KEPT
            elif self._config_state == CONFIG_VALID and (
                    partial is None or dict(partial.flat()) != dict(self._config.flat())):
                self._config_state = CONFIG_EARLIER
            elif self._config_state == CONFIG_DEFAULTS and partial is not None:
                self._config_state = CONFIG_EARLIER
            return False
        self._config_issues = []
        self._config_state = CONFIG_OK
        changed = self._config is None or dict(cfg.flat()) != dict(self._config.flat())
        self._config = cfg
        return changed

    def _load_doc(self, rel: str) -> bool:
        """Load one tracked document. True if the snapshot's view of it changed."""
        full = self.root / rel
        if not full.exists() and not full.is_symlink():
            self._doc_issues.pop(rel, None)
            return self._documents.pop(rel, None) is not None
        if (not no_link_below(self.root, rel) and not is_within(self.root, full)
                and not is_symlink_loop(full)):  # a loop is reported by the read
            self._doc_issues[rel] = Problem(area="documents", path=rel,
                                           message="symlink leads outside the workspace; ignored")
            return self._documents.pop(rel, None) is not None
        try:
            doc = load_document(self.root, rel, parse_frontmatter=wants_frontmatter(rel))
        except DocumentError as exc:
            # keep the last good version in force
            self._doc_issues[rel] = Problem.from_error(exc, rel, area="documents")
            return False
        self._doc_issues.pop(rel, None)
        old = self._documents.get(rel)
        self._documents[rel] = doc
        self._known_hashes[rel] = doc.hash
        return old is None or old.hash != doc.hash

    def reload(self, paths: Iterable[str] | None = None) -> ReloadResult:
        """Re-read `paths` (workspace-relative), or everything when None; publish a new version."""
        with self._lock:
            before_issues, before_state = self._issues(), self._config_state
            changed: list[str] = []
            if paths is None:
                targets = self._scan_tracked() | set(self._documents) | {CONFIG_FILE}
                extra: set[str] = set()
            else:
                targets = {p for p in paths if is_tracked(p) or p == CONFIG_FILE}
                extra = {p for p in paths} - targets
            for rel in sorted(targets):
                if rel == CONFIG_FILE:
                    if self._load_config():
                        changed.append(rel)
                    continue
                if self._load_doc(rel):
                    changed.append(rel)
            changed.extend(sorted(extra))
            issues = self._issues()
            if changed or issues != before_issues or self._config_state != before_state or self._snapshot is None:
                self._version += 1
                self._snapshot = Snapshot(
                    version=self._version,
                    root=self.root,
                    config=self._config,  # type: ignore[arg-type]
                    documents=MappingProxyType(dict(self._documents)),
                    issues=issues,
                    config_state=self._config_state,
                )
            touched = set(targets) | extra
            errors = tuple(i for i in issues if i.path in touched or (paths is None))
            result = ReloadResult(self._snapshot.version, tuple(changed), errors)
            snapshot = self._snapshot
        if changed or errors:
            failed = self._notify(result, snapshot)
            if failed:
                result = dataclasses.replace(result, listener_errors=failed)
        return result

    def _notify(self, result: ReloadResult, snapshot: Snapshot) -> tuple[Problem, ...]:
        """Call every listener. One that raises is logged and reported, and must not starve the
        ones after it (the auto-indexer) nor make a write that already happened look failed."""
        failed: list[Problem] = []
        for listener in list(self._listeners):
            try:
                listener(result, snapshot)
            except Exception as exc:
                name = getattr(listener, "__qualname__", None) or type(listener).__qualname__
                import logging  # only here: importing it costs every `kit` command ~4 ms at start-up

                logging.getLogger("kit.workspace").exception(
                    "reload listener %s failed on %s", name, ", ".join(result.changed) or "errors")
                failed.append(Problem(area="workspace", message=f"reload listener {name} failed: "
                                      f"{exc.__class__.__name__}: {exc}"))
        return tuple(failed)

    def _issues(self) -> tuple[Problem, ...]:
        return tuple(self._config_issues) + tuple(self._doc_issues[k] for k in sorted(self._doc_issues))

    # ------------------------------------------------------------------ own writes

    def expected_hash(self, rel: str) -> str | None:
        """The content hash Kit last saw or wrote for `rel` (the watcher skips its own echoes)."""
        return self._known_hashes.get(rel)

    def remember_hash(self, rel: str, digest: str) -> None:
        self._known_hashes[rel] = digest

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the workspace's write lock: Kit's writers (a dream, memory_write, the agent's file
        tools, another `kit` process) take turns; re-entrant within this thread. Editors do not
        take it, which is why every write is also a compare-and-swap."""
        with self._write_guard:
            if self._write_depth == 0:
                lock = LockFile(self.kit_dir / "locks" / "write.lock")
                lock.acquire(wait=WRITE_LOCK_WAIT, what="the workspace write lock")
                self._write_lock = lock
            self._write_depth += 1
            try:
                yield
            finally:
                self._write_depth -= 1
                if self._write_depth == 0 and self._write_lock is not None:
                    self._write_lock.release()
                    self._write_lock = None

    def write_text(self, rel: str, text: str, *, expected: FileState | None | object = ANY) -> ReloadResult:
        """Kit's own write: atomic, confined, applied directly so the watcher's echo is a no-op.

        With `expected` (a `kit.filewrite.FileState` read earlier, or None for "must not exist")
        it is a compare-and-swap: ConflictError, and the file left as it is, when it no longer
        holds that version. Without, it replaces whatever is there (Kit's own files)."""
        if self.is_read_only:
            raise WorkspaceError(f"{rel}: not written, the workspace is open read-only here")
        from kit.filewrite import write_file

        target = self.path(rel)
        previous = self._known_hashes.get(rel)
        # record the hash first: with a tiny debounce the watcher may see the file before we return
        self._known_hashes[rel] = sha1_hex(text.removeprefix("\ufeff"))  # as the watcher hashes it (BOM dropped)
        try:
            with self.writing():
                if expected is ANY:
                    write_file(target, text, display=rel)
                else:
                    write_file(target, text, expected=expected, display=rel)
        except BaseException:
            if previous is None:
                self._known_hashes.pop(rel, None)
            else:
                self._known_hashes[rel] = previous
            raise
        return self.reload([rel])

    def update_text(self, rel: str, change: Callable[[str | None], str | None], *,
                    attempts: int | None = None) -> Update:
        """Change a file people also edit without ever reverting their edit: `change(current text or
        None)` returns the new text (None: leave the file alone) and is applied to the file as it
        is at the moment of writing, again on the newer text whenever someone wrote in between.
        Every write goes through `write_text`. ConflictError when the file never held still."""
        if self.is_read_only:
            raise WorkspaceError(f"{rel}: not written, the workspace is open read-only here")
        from kit.filewrite import update_file

        target = self.path(rel)
        options = {} if attempts is None else {"attempts": attempts}
        with self.writing():
            return update_file(target, change, display=rel,
                               write=lambda text, state: self.write_text(rel, text, expected=state), **options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r}, version={self._version})"
