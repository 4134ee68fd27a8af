"""Exclusive OS locks (flock, through the `filelock` package): held while the process lives, released
by the kernel the moment it dies (kill -9 included). No pid files, no timed takeover: a slow dream
keeps its lock for as long as it runs, and a crashed one never blocks the next.

Who holds a lock is written beside it (`<lock>.owner`: pid and start time), for messages only.
The lock file itself stays on disk after release: removing it would let a waiter that opened the
old file and a newcomer that creates a new one both "hold" the lock.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from kit.errors import BusyError
from kit.fsutil import pid_alive


class LockFile:
    """One exclusive lock on `path`. `try_acquire()` / `acquire(wait=…)` / `release()`, or `with`."""

    def __init__(self, path: str | os.PathLike, *, stale_after: float | None = None):
        # stale_after is accepted for old callers and ignored: the OS releases a dead holder's lock
        self.path = Path(path)
        self.owner_path = self.path.with_name(self.path.name + ".owner")
        self._lock = None  # a filelock.FileLock, made on first use (the import is not free)
        self.held = False

    def holder(self) -> tuple[int, float] | None:
        """(pid, started) of the process that holds the lock, when one that is alive says so."""
        try:
            pid_text, _, ts_text = self.owner_path.read_text(encoding="utf-8").strip().partition(":")
            pid, started = int(pid_text), float(ts_text)
        except (OSError, ValueError):
            return None
        return (pid, started) if pid_alive(pid) else None

    def is_locked(self) -> bool:
        """True when some process holds the lock right now (probed without waiting)."""
        if self.held:
            return True
        if not self.path.exists():
            return False
        if self._take():  # a probe: nothing written (doctor only reads)
            self._lock.release(force=True)
            return False
        return True

    def is_stale(self) -> bool:
        """An owner note left by a process that died holding the lock (the lock itself is free)."""
        return self.owner_path.exists() and not self.is_locked()

    def _take(self) -> bool:
        from filelock import FileLock, Timeout

        if self._lock is None:
            self._lock = FileLock(str(self.path), thread_local=False)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        return True

    def try_acquire(self) -> bool:
        if self.held:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self._take():
            return False
        self.held = True
        with contextlib.suppress(OSError):
            # wall time, not kit.clock: this is about real processes, not simulated days
            self.owner_path.write_text(f"{os.getpid()}:{time.time():.3f}", encoding="utf-8")
        return True

    def acquire(self, *, wait: float = 0.0, poll: float = 0.1, what: str = "lock") -> None:
        deadline = time.monotonic() + wait
        while True:
            if self.try_acquire():
                return
            if time.monotonic() >= deadline:
                info = self.holder()
                who = f" by pid {info[0]}" if info else ""
                raise BusyError(f"{what} is held{who} ({self.path}); try again later")
            time.sleep(min(poll, max(0.0, deadline - time.monotonic())) or poll / 10)

    def release(self) -> None:
        if not self.held:
            return
        with contextlib.suppress(OSError):
            self.owner_path.unlink()
        self.held = False
        self._lock.release(force=True)

    def __enter__(self) -> LockFile:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def locked(path: str | os.PathLike, *, wait: float = 0.0, what: str = "lock") -> Iterator[LockFile]:
    lock = LockFile(path)
    lock.acquire(wait=wait, what=what)
    try:
        yield lock
    finally:
        lock.release()
