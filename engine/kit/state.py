"""`.kit/state.db`: SQLite in WAL mode with per-component schema versions and migrations.

Each subsystem owns its tables and calls `migrate(component, steps)` when it opens the database,
so the state file grows with the features used and no layer imports another to create tables.
A connection belongs to the thread that opened it (sqlite3's default check), never shared.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from kit.errors import StateError

Migration = str | Callable[[sqlite3.Connection], None]

_CORE = "kit"
_CORE_MIGRATIONS: tuple[Migration, ...] = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class PerThread(Generic[C]):
    """One connection per thread, opened by `open()` on that thread's first `get()`: a SQLite
    connection must stay on the thread that opened it. `close()` closes the calling thread's."""

    def __init__(self, open: Callable[[], C]):
        self._open = open
        self._local = threading.local()

    def get(self) -> C:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._open()
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()


def connect(path: str | Path, *, timeout: float = 10.0) -> sqlite3.Connection:
    """Open a SQLite file the Kit way: WAL, NORMAL sync, a busy timeout, Row factory."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(p), timeout=timeout, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")  # the first read of the file: "not a database" is raised here
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        conn.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        conn.close()
        raise
    return conn


def can_write_beside(path: str | Path) -> bool:
    """Whether SQLite could write `path` and its -wal/-shm files: its folder is writable (False on
    a read-only mount, for root too)."""
    return os.access(Path(path).parent, os.W_OK)


def connect_read_only(path: str | Path) -> sqlite3.Connection:
    """A connection that cannot write, for a database in a folder Kit cannot write (a read-only
    mount, a copy without write permission): reading must still work there. `mode=ro` reads a WAL
    database whose -shm file exists; a cleanly closed one has none, and SQLite cannot create it in
    that folder, so the file is then opened `immutable` — on such a folder nothing can change it."""
    uri = Path(path).resolve().as_uri()
    error: sqlite3.OperationalError | None = None
    for query in ("mode=ro", "immutable=1"):
        conn = sqlite3.connect(f"{uri}?{query}", uri=True, isolation_level=None)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            conn.close()
            error = exc
            continue
        except BaseException:
            conn.close()
            raise
        conn.row_factory = sqlite3.Row
        return conn
    assert error is not None
    raise error


@contextmanager
def transaction(conn: sqlite3.Connection, *, immediate: bool = True) -> Iterator[sqlite3.Connection]:
    """BEGIN … COMMIT, rolled back on any exception (connections run in autocommit mode)."""
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def _savepoint(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("SAVEPOINT kit_step")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK TO kit_step")
        conn.execute("RELEASE kit_step")
        raise
    conn.execute("RELEASE kit_step")


class StateDB:
    """The workspace's machine state. Open one per thread; close when done.

    `read_only=True` (for `kit doctor`, which must never write into the workspace) reads the
    file as it is: a missing file reads as an empty database (nothing is created), and the
    whole connection runs inside one transaction that `close()` rolls back, so migrations a
    component has not applied yet exist only for this connection and nothing reaches the disk.
    The connection itself stays read-write on purpose: SQLite removes the -wal/-shm files it
    opened only when the last read-write connection closes (`mode=ro` leaves them behind).
    """

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self.copied = False  # a read-only folder's file, read into memory (see below)
        self._catching_up = False  # migrating that copy
        conn: sqlite3.Connection | None = None
        try:
            if read_only and not self.path.exists():
                conn = sqlite3.connect(":memory:", isolation_level=None)
                conn.row_factory = sqlite3.Row
            elif self.path.is_file() and not can_write_beside(self.path):
                # a read-only folder: what only reads works (sessions list, status, a dry run) on
                # a copy in memory whose schema can catch up; a write fails as SQLite's
                # "readonly database", worded by `unusable` (query_only)
                source = connect_read_only(self.path)
                conn = sqlite3.connect(":memory:", isolation_level=None)
                try:
                    source.backup(conn)
                finally:
                    source.close()
                conn.row_factory = sqlite3.Row
                self.copied = True
            else:
                conn = connect(self.path)
            self.conn = conn
            if read_only:
                conn.execute("BEGIN")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            self.migrate(_CORE, _CORE_MIGRATIONS)
            if self._frozen:
                conn.execute("PRAGMA query_only=ON")
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            error = unusable(exc, self.path)
            if error is None:
                raise
            raise error from exc

    def migrate(self, component: str, steps: Sequence[Migration]) -> int:
        """Apply the steps of `component` not applied yet, each in its own transaction."""
        current = self.version(component)
        if self._frozen and current < len(steps):
            # the copy of a read-only folder's file: its schema catches up in memory only
            self.conn.execute("PRAGMA query_only=OFF")
            self._catching_up = True
            try:
                return self._migrate(component, steps, current)
            finally:
                self._catching_up = False
                self.conn.execute("PRAGMA query_only=ON")
        return self._migrate(component, steps, current)

    def _migrate(self, component: str, steps: Sequence[Migration], current: int) -> int:
        for number, step in enumerate(steps, start=1):
            if number <= current:
                continue
            with self.transaction():
                if callable(step):
                    step(self.conn)
                else:
                    for statement in _split(step):
                        self.conn.execute(statement)
                self.conn.execute(
                    "INSERT INTO schema_versions(component, version) VALUES (?, ?) "
                    "ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                    (component, number),
                )
        return max(current, len(steps))

    def version(self, component: str) -> int:
        row = self.conn.execute(
            "SELECT version FROM schema_versions WHERE component = ?", (component,)
        ).fetchone()
        return int(row[0]) if row else 0

    def versions(self) -> dict[str, int]:
        rows = self.conn.execute("SELECT component, version FROM schema_versions ORDER BY component")
        return {r[0]: int(r[1]) for r in rows}

    def execute(self, sql: str, params: Sequence | dict = ()) -> sqlite3.Cursor:
        try:
            return self.conn.execute(sql, params)
        except sqlite3.DatabaseError as exc:
            error = unusable(exc, self.path)
            if error is None:
                raise
            raise error from exc

    def check(self) -> list[str]:
        """What SQLite's `quick_check` finds wrong in the file (empty when it is sound): reads
        every page, so for `kit doctor`, not for every open."""
        try:
            rows = [str(r[0]) for r in self.conn.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as exc:
            if unusable(exc, self.path) is None:
                raise
            return [str(exc)]
        return [] if rows == ["ok"] else rows

    def transaction(self):
        """BEGIN IMMEDIATE … COMMIT; in read-only mode a savepoint inside the connection's
        transaction (released, but rolled back with everything else at close)."""
        if self._frozen and not self._catching_up:  # the copy of a read-only folder's file: refused in words
            raise StateError("cannot be written: its folder is read-only (commands that only read still work)",
                             path=str(self.path))
        return _savepoint(self.conn) if self.read_only else transaction(self.conn)

    @property
    def _frozen(self) -> bool:
        """A read-only folder's file, copied, in a mode that writes: writes are refused. In
        read-only mode (doctor, a dry run) writes go into the copy and are rolled back, as they are
        rolled back from a writable folder's file."""
        return self.copied and not self.read_only

    def close(self) -> None:
        if self.read_only and self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.conn.close()

    def __enter__(self) -> StateDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# SQLite's primary result codes that mean the file itself cannot be used
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_SQLITE_CANTOPEN, _SQLITE_IOERR, _SQLITE_READONLY, _SQLITE_PERM = 14, 10, 8, 3


def unusable(exc: sqlite3.DatabaseError, path: Path) -> StateError | None:
    """The StateError an sqlite3 error on `path` means when the file itself is the trouble (not
    a database, damaged, cannot be opened), with what to do; None for any other error (a locked
    database, a bad statement), which stays the caller's to handle."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or (code == 0 and type(exc) is sqlite3.DatabaseError):
        # What it held (keep in step with the components' tables): the session index, rebuilt from
        # the transcripts; the recall log and dreaming's tables, which nothing else holds; caches
        # (vectors, junk verdicts, model stats, cooldowns) that refill by themselves.
        return StateError(
            f"not a readable SQLite database ({exc}): move it aside and Kit starts a new one; sessions "
            f"are re-indexed from .kit/sessions/, but the recall log and dreaming's history "
            f"(promotions, rejections, the verify queue) start empty unless `sqlite3 MOVED-FILE .recover` "
            f"saves them",
            path=str(path))
    if code in (_SQLITE_CANTOPEN, _SQLITE_IOERR, _SQLITE_READONLY, _SQLITE_PERM):
        return StateError(f"cannot be opened or written ({exc}): check that it is a file you can write, "
                          f"in a folder you can write", path=str(path))
    return None


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";\n") if s.strip()]
