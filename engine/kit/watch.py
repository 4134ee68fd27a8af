"""Hot reload: watch the workspace with watchdog and turn file events into `ws.reload(paths)` calls.

Pipeline (spec §3 "Watching", §1 principle 6):

    watchdog event ─► name/dir filter ─► pending {path: deadline} ─► worker thread:
        debounce per path, coalesce a burst ─► hash check (skip echoes and no-op saves)
        ─► ONE ws.reload(paths) per batch ─► on_reload(result)

The watcher is an optimisation, not the source of truth: a cheap mtime/size scan runs at start and
every `rescan_interval` seconds and feeds whatever the OS dropped into the same pipeline.

Only the worker thread calls `ws.reload`; watchdog's thread only files paths into `pending`.
"""

from __future__ import annotations

import collections
import errno
import hashlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.core import ReloadResult, WorkspaceCore
from kit.ignore import IGNORED_DIRS, is_ignored
from kit.paths import CONFIG_FILE
from kit.snapshot import is_tracked

log = logging.getLogger("kit.watch")

BACKENDS = ("auto", "native", "polling")
RESCAN_INTERVAL_S = 600.0
HASH_LIMIT_BYTES = 64 * 1024 * 1024  # bigger files are compared by size+mtime, not read
_BOM = b"\xef\xbb\xbf"
_HISTORY = 1000  # reload results kept for inspection; nothing grows without bound

ReloadCallback = Callable[[ReloadResult], None]


def file_digest(path: str | os.PathLike) -> str:
    """sha1 of the file's text, the same value as `Document.hash` / `fsutil.sha1_hex(text)`.

    Documents drop a leading UTF-8 BOM, so the digest does too; huge files are fingerprinted by
    size and mtime instead of being read.
    """
    st = os.stat(path)
    if st.st_size > HASH_LIMIT_BYTES:
        return f"stat:{st.st_size}:{st.st_mtime_ns}"
    if not stat.S_ISREG(st.st_mode):  # never opened: a FIFO would block the watcher forever
        return f"kind:{stat.S_IFMT(st.st_mode)}:{st.st_mtime_ns}"
    digest = hashlib.sha1()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a FIFO since the stat
            return f"kind:{stat.S_IFMT(os.fstat(fd).st_mode)}:{st.st_mtime_ns}"
        first = handle.read(65536)
        digest.update(first[len(_BOM):] if first.startswith(_BOM) else first)
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def scan_tree(root: Path) -> dict[str, tuple[int, int]]:
    """{rel path: (mtime_ns, size)} for every watched file; symlinked folders are not followed."""
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS)
        base = os.path.relpath(folder, root)
        for name in files:
            rel = name if base == "." else f"{Path(base).as_posix()}/{name}"
            if is_ignored(rel):
                continue
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue  # vanished or a dangling symlink
            found[rel] = (st.st_mtime_ns, st.st_size)
    return found


def inotify_advice(code: int | None) -> str:
    """How to raise the inotify limit behind errno 28 (watches) or 24 (instances / open files)."""
    if code == errno.EMFILE:
        return (
            "the inotify instance limit (or the open-file limit) was reached; raise it with "
            "`sudo sysctl fs.inotify.max_user_instances=1024` (persist it in /etc/sysctl.d/) "
            "or `ulimit -n 4096`"
        )
    return (
        "the inotify watch limit was reached; raise it with "
        "`sudo sysctl fs.inotify.max_user_watches=524288` "
        "(persist it in /etc/sysctl.d/, e.g. `echo fs.inotify.max_user_watches=524288 | "
        "sudo tee /etc/sysctl.d/90-kit.conf`)"
    )


@dataclass(frozen=True)
class WatchStats:
    """Counters for `kit watch`, doctor-style reports and tests."""

    backend: str  # native | polling
    fallback: str | None  # why native watching was abandoned, if it was
    reloads: int  # ws.reload calls made
    paths_reloaded: int  # paths handed to ws.reload
    skipped: int  # paths whose content hash had not changed (echoes of Kit's own writes, touch, …)
    rescans: int  # mtime/size scans run (the start scan included)
    failures: int  # reloads that raised


class _Handler:
    """A watchdog event handler that only forwards events (watchdog calls `dispatch`)."""

    def __init__(self, watcher: Watcher):
        self._watcher = watcher

    def dispatch(self, event: Any) -> None:
        try:
            self._watcher._on_event(event)
        except Exception:  # never kill watchdog's dispatcher thread
            log.exception("kit.watch: could not handle %r", event)


class Watcher:
    """Watch a workspace and hot-reload what changed.

        with Watcher(ws, on_reload=print) as watcher:
            ...  # edits to the workspace now reach ws.snapshot within debounce_ms
            watcher.wait_until(lambda w: w.reload_count >= 1, timeout=5)

    `backend`: "auto" | "native" | "polling" (default: `watch.backend` from kit.yaml). `debounce_ms`
    defaults to `watch.debounce_ms`, read at each event so a hot-reloaded kit.yaml applies at once.
    `native_factory` builds the native observer (tests inject failures through it).
    """

    def __init__(
        self,
        ws: WorkspaceCore,
        *,
        on_reload: ReloadCallback | None = None,
        backend: str | None = None,
        debounce_ms: int | None = None,
        rescan_interval: float = RESCAN_INTERVAL_S,
        poll_interval: float = 1.0,
        native_factory: Callable[[], Any] | None = None,
    ):
        self.ws = ws
        self.root = Path(ws.root)
        self.on_reload = on_reload
        self.requested_backend = backend or ws.config.watch.backend
        if self.requested_backend not in BACKENDS:
            from kit.errors import ConfigError

            raise ConfigError(f"watch.backend must be one of {', '.join(BACKENDS)}, not {self.requested_backend!r}")
        self._debounce_override = debounce_ms
        self.rescan_interval = rescan_interval
        self.poll_interval = poll_interval
        self._native_factory = native_factory

        self._cond = threading.Condition()
        self._pending: dict[str, float] = {}  # rel -> monotonic deadline
        self._last_event = 0.0
        self._oldest_pending = 0.0
        self._resync = False  # a top-level folder came or went: the worker re-syncs the watches
        self._stat: dict[str, tuple[int, int]] = {}
        self._busy = False
        self._stopping = False
        self._next_rescan = float("inf")
        self._worker: threading.Thread | None = None
        self._observer: Any = None
        self._watches: dict[str, Any] = {}  # "" (root, non-recursive) or top-level folder -> watch
        self._inodes: dict[str, int] = {}  # top-level folder -> inode it was watched under
        self._handler = _Handler(self)

        self.backend: str | None = None
        self.fallback: str | None = None
        self.history: collections.deque = collections.deque(maxlen=_HISTORY)
        self.skipped: collections.deque[str] = collections.deque(maxlen=_HISTORY)
        self.reload_count = 0
        self.paths_reloaded = 0
        self.skipped_count = 0
        self.rescan_count = 0
        self.failures = 0

    # ------------------------------------------------------------------ lifecycle

    @property
    def debounce_s(self) -> float:
        ms = self._debounce_override
        if ms is None:
            ms = self.ws.config.watch.debounce_ms
        return max(0.0, float(ms)) / 1000.0

    @property
    def running(self) -> bool:
        return self._worker is not None and self._worker.is_alive()

    def start(self) -> Watcher:
        if self.running:
            return self
        self._stopping = False
        self._start_observer()
        # Baseline after the observer is up, so nothing slips between the scan and the first event.
        self._start_scan()
        self._next_rescan = time.monotonic() + self.rescan_interval
        self._worker = threading.Thread(target=self._run, name="kit-watch", daemon=True)
        self._worker.start()
        log.debug("watching %s with the %s backend", self.root, self.backend)
        return self

    def stop(self) -> None:
        """Stop watching. Changes still waiting for their debounce are dropped."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._worker is not None:
            self._worker.join(timeout=10)
            self._worker = None
        self._stop_observer()

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> WatchStats:
        with self._cond:
            return WatchStats(
                backend=self.backend or "",
                fallback=self.fallback,
                reloads=self.reload_count,
                paths_reloaded=self.paths_reloaded,
                skipped=self.skipped_count,
                rescans=self.rescan_count,
                failures=self.failures,
            )

    # ------------------------------------------------------------------ waiting (tests, CLI)

    def wait_until(self, predicate: Callable[[Watcher], bool], timeout: float = 10.0) -> bool:
        """Block until `predicate(watcher)` holds (re-checked after every batch); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)

    def wait_for_reloads(self, count: int, timeout: float = 10.0) -> bool:
        """Block until at least `count` reloads happened since start."""
        return self.wait_until(lambda w: w.reload_count >= count, timeout)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until nothing is pending and no batch is running.

        Events still in the OS or watchdog queues are not visible here: wait for an outcome
        (`wait_until`) after making a change, then use this to let stragglers settle.
        """
        return self.wait_until(lambda w: not w._pending and not w._resync and not w._busy, timeout)

    def reloaded_paths(self) -> collections.Counter:
        """How often each path was handed to ws.reload (within the kept history)."""
        counts: collections.Counter = collections.Counter()
        with self._cond:
            for result in self.history:
                counts.update(result.changed)
        return counts

    # ------------------------------------------------------------------ observers

    def _make_observer(self, kind: str) -> Any:
        if kind == "polling":
            from watchdog.observers.polling import PollingObserver

            return PollingObserver(timeout=self.poll_interval)
        if self._native_factory is not None:
            return self._native_factory()
        from watchdog.observers import Observer

        return Observer()

    def _start_observer(self) -> None:
        kind = "polling" if self.requested_backend == "polling" else "native"
        if kind == "native":
            try:
                self._launch(kind)
                return
            except OSError as exc:
                self._stop_observer()  # release whatever the half-started observer holds
                # auto: any failure of the OS watcher degrades to polling; native: only the limits
                if self.requested_backend == "native" and exc.errno not in (errno.ENOSPC, errno.EMFILE):
                    raise
                self._note_fallback(exc)
        self._launch("polling")

    def _note_fallback(self, exc: OSError) -> None:
        if exc.errno in (errno.ENOSPC, errno.EMFILE):
            self.fallback = f"{exc.strerror or exc} (errno {exc.errno}): {inotify_advice(exc.errno)}"
        else:
            self.fallback = f"native file watching failed: {exc}"
        log.warning("watcher: %s; falling back to polling", self.fallback)

    def _launch(self, kind: str) -> None:
        observer = self._make_observer(kind)
        self._observer = observer
        self._watches = {}
        self._inodes = {}
        self._schedule("")
        self._sync_watches(initial=True)
        observer.start()
        self.backend = kind

    def _stop_observer(self) -> None:
        observer, self._observer = self._observer, None
        self._watches = {}
        if observer is None:
            return
        try:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=10)
        except Exception:  # a half-started observer: nothing more to release
            log.debug("observer stop failed", exc_info=True)

    def _event_filter(self) -> list[type]:
        from watchdog import events as ev

        return [
            ev.FileCreatedEvent,
            ev.FileModifiedEvent,
            ev.FileClosedEvent,
            ev.FileDeletedEvent,
            ev.FileMovedEvent,
            ev.DirCreatedEvent,
            ev.DirDeletedEvent,
            ev.DirMovedEvent,
        ]

    def _schedule(self, top: str) -> None:
        """Watch the root itself non-recursively and each top-level folder recursively.

        Scheduling per folder keeps `.kit/` and `.git/` out of the OS watch set entirely (their
        churn would cost inotify watches and events), instead of filtering them afterwards.
        """
        if top in self._watches or self._observer is None:
            return
        path = self.root / top if top else self.root
        watch = self._observer.schedule(
            self._handler, str(path), recursive=bool(top), event_filter=self._event_filter()
        )
        self._watches[top] = watch

    def _unschedule(self, top: str) -> None:
        self._inodes.pop(top, None)
        watch = self._watches.pop(top, None)
        if watch is not None and self._observer is not None:
            try:
                self._observer.unschedule(watch)
            except Exception:  # already gone with its folder
                log.debug("unschedule %s failed", top, exc_info=True)

    def _top_folders(self) -> dict[str, int]:
        """Top-level folders to watch -> inode (a folder replaced under the same name differs)."""
        found: dict[str, int] = {}
        with os.scandir(self.root) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name not in IGNORED_DIRS:
                    found[entry.name] = entry.inode()
        return found

    def _sync_watches(self, *, initial: bool = False) -> None:
        """Make the scheduled folder watches match the top-level folders on disk.

        Runs at launch, after top-level folder events and at every rescan, so a watch lost to a
        late or dropped event heals itself. Files in a folder that is new to us are queued, since
        they may have been written before its watch existed.
        """
        want = self._top_folders()
        for top in sorted(t for t in self._watches if t):
            if want.get(top) != self._inodes.get(top):
                self._unschedule(top)
                if not initial:
                    self._enqueue(self._known_under(top))
        for top in sorted(want):
            if top in self._watches:
                continue
            try:
                self._schedule(top)
            except OSError as exc:
                if initial:
                    raise  # _start_observer decides whether to fall back
                if exc.errno not in (errno.ENOSPC, errno.EMFILE) or self.backend == "polling":
                    log.warning("watcher: cannot watch %s/: %s", top, exc)
                    continue
                self._note_fallback(exc)
                self._stop_observer()
                self._launch("polling")
                self.rescan()  # events may have been lost while switching
                return
            self._inodes[top] = want[top]
            if not initial:
                self._enqueue_tree(top)

    # ------------------------------------------------------------------ events -> pending

    def _rel(self, path: str | bytes) -> str | None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path:
            return None
        rel = Path(os.path.relpath(path, self.root)).as_posix()
        return None if is_ignored(rel) else rel

    def _on_event(self, event: Any) -> None:
        kind = event.event_type
        if kind not in ("created", "modified", "closed", "deleted", "moved"):
            return  # opened / closed_no_write / attrib: content did not change
        src = self._rel(event.src_path)
        dest = self._rel(getattr(event, "dest_path", "") or "")
        if event.is_directory:
            if kind in ("deleted", "moved") and src:
                self._forget_tree(src)
            if kind == "created" and src:
                self._dir_created(src)
            if kind == "moved" and dest:
                self._dir_created(dest)
            return
        # a move is a save by rename: the destination changed, the source is (usually) gone
        paths = [p for p in (src, dest if kind == "moved" else None) if p]
        if paths:
            self._enqueue(paths)

    def _dir_created(self, rel: str) -> None:
        if "/" not in rel:
            self._request_sync()  # the worker schedules a watch, then queues the folder's files
        else:
            self._enqueue_tree(rel)

    def _forget_tree(self, rel: str) -> None:
        """A folder went away: every file known under it is now a deletion."""
        if "/" not in rel:
            self._request_sync()
        self._enqueue(self._known_under(rel))

    def _known_under(self, rel: str) -> list[str]:
        prefix = rel + "/"
        with self._cond:
            known = {p for p in self._stat if p.startswith(prefix)}
        known |= {p for p in self.ws.snapshot.documents if p.startswith(prefix)}
        return sorted(known)

    def _request_sync(self) -> None:
        with self._cond:
            self._resync = True
            self._cond.notify_all()

    def _enqueue_tree(self, rel: str) -> None:
        folder = self.root / rel
        if folder.is_dir():
            self._enqueue(f"{rel}/{sub}" for sub in scan_tree(folder))

    def _enqueue(self, paths: Iterable[str], *, delay: float | None = None) -> None:
        now = time.monotonic()
        deadline = now + (self.debounce_s if delay is None else delay)
        with self._cond:
            added = False
            for rel in paths:
                if is_ignored(rel):
                    continue
                if not self._pending:
                    self._oldest_pending = now
                self._pending[rel] = deadline  # per-path debounce: each event restarts its timer
                added = True
            if added:
                self._last_event = now
                self._cond.notify_all()

    def _take_due(self, now: float) -> tuple[list[str], float]:
        """(paths to process now, when to look again). Caller holds the lock.

        A burst is coalesced: once no event arrived for a whole debounce window everything pending
        goes in ONE batch. Under a steady stream of events nothing waits longer than two windows:
        then the paths whose own debounce has elapsed go out alone.
        """
        if not self._pending:
            return [], float("inf")
        window = self.debounce_s
        quiet_at = self._last_event + window
        if now >= quiet_at:
            due = sorted(self._pending)
        elif now >= self._oldest_pending + 2 * window:
            due = sorted(p for p, d in self._pending.items() if d <= now)
        else:
            return [], min(quiet_at, self._oldest_pending + 2 * window)
        if not due:
            return [], min(self._pending.values())
        for rel in due:
            del self._pending[rel]
        if self._pending:
            self._oldest_pending = now
        return due, now

    # ------------------------------------------------------------------ worker

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopping:
                        return
                    now = time.monotonic()
                    resync, self._resync = self._resync, False
                    batch, wake = self._take_due(now)
                    rescan = now >= self._next_rescan
                    if resync or batch or rescan:
                        self._busy = True
                        break
                    wake = min(wake, self._next_rescan)
                    self._cond.wait(None if wake == float("inf") else max(0.0, wake - now))
            try:
                if rescan:
                    # set first: a scan that raises must not make the loop spin
                    self._next_rescan = time.monotonic() + self.rescan_interval
                if resync or rescan:
                    self._sync_watches()
                if rescan:
                    self.rescan()
                if batch:
                    self._process(batch)
            except Exception:  # the watcher outlives any single bad batch
                log.exception("watcher: batch failed")
                with self._cond:
                    self.failures += 1
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _process(self, batch: list[str]) -> None:
        """Hash-check each path and hand what really changed to ONE ws.reload call."""
        ws = self.ws
        to_reload: list[str] = []
        skipped: list[str] = []
        for rel in batch:
            full = self.root / rel
            digest: str | None = None
            stat: tuple[int, int] | None = None
            try:
                if full.is_file():
                    st = full.stat()
                    stat = (st.st_mtime_ns, st.st_size)
                    digest = file_digest(full)
            except OSError:
                digest = None  # deleted while we looked: treat as gone
            with self._cond:
                was_known = self._stat.pop(rel, None) is not None
                if digest is not None and stat is not None:
                    self._stat[rel] = stat
            if digest is not None:
                if digest == ws.expected_hash(rel):
                    skipped.append(rel)  # unchanged: a touch, a no-op save or Kit's own write
                    continue
                ws.remember_hash(rel, digest)
                to_reload.append(rel)
            elif was_known or ws.expected_hash(rel) or rel in ws.snapshot.documents:
                ws.remember_hash(rel, "")  # "" = gone; a re-created file always differs from it
                to_reload.append(rel)
            else:
                skipped.append(rel)  # created and deleted within one window: nothing to say
        with self._cond:
            self.skipped.extend(skipped)
            self.skipped_count += len(skipped)
        if not to_reload:
            return
        try:
            result = ws.reload(to_reload)
        except Exception:
            log.exception("watcher: reload of %s failed", ", ".join(to_reload))
            with self._cond:
                self.failures += 1
            return
        with self._cond:
            self.history.append(result)
            self.reload_count += 1
            self.paths_reloaded += len(to_reload)
        if self.on_reload is not None:
            try:
                self.on_reload(result)
            except Exception:
                log.exception("watcher: on_reload callback failed")
        else:
            for issue in result.errors:
                log.warning("watcher: %s", issue)

    # ------------------------------------------------------------------ scans

    def _start_scan(self) -> None:
        """Baseline for later rescans; tracked files that differ from the snapshot are queued now."""
        current = scan_tree(self.root)
        ws = self.ws
        stale: list[str] = []
        problem_paths = {issue.path for issue in ws.snapshot.issues}
        for rel in current:
            if not (is_tracked(rel) or rel == CONFIG_FILE):
                continue
            try:
                digest = file_digest(self.root / rel)
            except OSError:
                continue
            expected = ws.expected_hash(rel)
            if expected is None and (rel == CONFIG_FILE or rel in problem_paths):
                # loaded (or already reported as broken) by Workspace.open: this is the baseline
                ws.remember_hash(rel, digest)
            elif digest != expected:
                stale.append(rel)
        stale += [rel for rel in ws.snapshot.documents if rel not in current]
        with self._cond:
            self._stat = current
            self.rescan_count += 1
        if stale:
            self._enqueue(stale, delay=0.0)

    def rescan(self) -> list[str]:
        """Compare mtime/size with the last scan; queue what differs. Returns the queued paths."""
        current = scan_tree(self.root)
        with self._cond:
            previous = self._stat
            differ = [rel for rel, sig in current.items() if previous.get(rel) != sig]
            differ += [rel for rel in previous if rel not in current]
            self.rescan_count += 1
        differ.sort()
        if differ:
            log.debug("rescan found %d changed paths", len(differ))
            self._enqueue(differ)
        return differ
