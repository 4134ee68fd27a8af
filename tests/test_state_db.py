"""state.db: WAL, per-component migrations applied once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kit.state import StateDB


def test_wal_and_core_schema(tmp_path: Path):
    db = StateDB(tmp_path / ".kit" / "state.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.versions() == {"kit": 1}


def test_migrations_apply_in_order_once(tmp_path: Path):
    path = tmp_path / "state.db"
    calls = []
    steps = [
        "CREATE TABLE t (a INTEGER);\nCREATE INDEX t_a ON t(a)",
        lambda conn: calls.append(1) or conn.execute("ALTER TABLE t ADD COLUMN b TEXT"),
    ]
    with StateDB(path) as db:
        assert db.migrate("demo", steps) == 2
        assert db.version("demo") == 2
    with StateDB(path) as db:
        db.migrate("demo", steps)
        db.migrate("demo", [*steps, "ALTER TABLE t ADD COLUMN c TEXT"])
        cols = [r[1] for r in db.execute("PRAGMA table_info(t)")]
        assert cols == ["a", "b", "c"]
        assert db.versions() == {"demo": 3, "kit": 1}
    assert calls == [1]


def test_failed_migration_rolls_back(tmp_path: Path):
    with StateDB(tmp_path / "s.db") as db:
        with pytest.raises(sqlite3.OperationalError, match='near "THIS": syntax error'):
            db.migrate("x", ["CREATE TABLE ok (a)", "CREATE TABLE ok2 (a);\nTHIS IS NOT SQL"])
        assert db.version("x") == 1  # step 1 committed, step 2 rolled back as a whole
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "ok" in tables and "ok2" not in tables
        # fixed, the failed step runs again (it was never recorded) and only it
        assert db.migrate("x", ["CREATE TABLE ok (a)", "CREATE TABLE ok2 (a)"]) == 2
        assert db.version("x") == 2
    with StateDB(tmp_path / "s.db") as db:  # and all of it is on disk
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"ok", "ok2"} <= tables and db.version("x") == 2


def _files(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


def test_read_only_reads_and_migrates_only_in_the_connection(tmp_path: Path):
    path = tmp_path / "state.db"
    with StateDB(path) as db:
        db.migrate("demo", ["CREATE TABLE t (a INTEGER)"])
        db.execute("INSERT INTO t VALUES (7)")
    before = _files(tmp_path)
    with StateDB(path, read_only=True) as db:
        assert [r[0] for r in db.execute("SELECT a FROM t")] == [7]
        # a component not migrated yet can still be read: its tables exist for this connection only
        assert db.migrate("other", ["CREATE TABLE o (b TEXT)"]) == 1
        assert db.execute("SELECT count(*) FROM o").fetchone()[0] == 0
        with db.transaction():
            db.execute("INSERT INTO t VALUES (8)")
        assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 2
    assert _files(tmp_path) == before  # same files, same bytes, same mtimes; no -wal/-shm left
    with StateDB(path) as db:
        assert db.versions() == {"demo": 1, "kit": 1}
        assert [r[0] for r in db.execute("SELECT a FROM t")] == [7]


def test_read_only_missing_file_reads_empty_and_creates_nothing(tmp_path: Path):
    with StateDB(tmp_path / ".kit" / "state.db", read_only=True) as db:
        assert db.versions() == {"kit": 1}
        db.migrate("demo", ["CREATE TABLE t (a INTEGER)"])
        assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    assert list(tmp_path.iterdir()) == []


def test_per_thread_gives_each_thread_its_own_connection_and_closes_the_callers(tmp_path: Path):
    import threading

    from kit.state import PerThread

    opened: list[StateDB] = []
    conns = PerThread(lambda: opened.append(StateDB(tmp_path / "state.db")) or opened[-1])
    mine = conns.get()
    assert conns.get() is mine and len(opened) == 1
    theirs: list[StateDB] = []

    def other() -> None:
        theirs.append(conns.get())
        assert conns.get() is theirs[0]
        conns.close()  # closes the other thread's only

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert theirs[0] is not mine and len(opened) == 2
    with pytest.raises(sqlite3.ProgrammingError):
        theirs[0].conn.execute("SELECT 1")
    assert mine.conn.execute("SELECT 1").fetchone()[0] == 1  # this thread's is still open
    conns.close()
    with pytest.raises(sqlite3.ProgrammingError):
        mine.conn.execute("SELECT 1")
    assert conns.get() is not mine and len(opened) == 3  # a new one after close
    conns.close()


# --------------------------------------------------------------------------- a damaged state.db

ADVICE = ("move it aside and Kit starts a new one; sessions are re-indexed from .kit/sessions/, but the "
          "recall log and dreaming's history (promotions, rejections, the verify queue) start empty unless "
          "`sqlite3 MOVED-FILE .recover` saves them")


def _db_with_rows(path: Path) -> bytes:
    with StateDB(path) as db:
        db.migrate("demo", ["CREATE TABLE t (a TEXT)"])
        with db.transaction():
            for _ in range(400):  # some 25 pages
                db.execute("INSERT INTO t VALUES (?)", ("x" * 200,))
    return path.read_bytes()


@pytest.mark.parametrize("read_only", [False, True])
def test_not_a_database_is_one_state_error_naming_the_file(tmp_path: Path, read_only: bool):
    from kit.errors import StateError

    path = tmp_path / "state.db"
    path.write_bytes(b"garbage\n")
    with pytest.raises(StateError) as caught:
        StateDB(path, read_only=read_only)
    assert str(caught.value) == f"{path}: not a readable SQLite database (file is not a database): {ADVICE}"
    assert (caught.value.path, caught.value.exit_code) == (str(path), 1)
    # never repaired, replaced or deleted behind the user's back, and no -wal/-shm beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]
    assert path.read_bytes() == b"garbage\n"


def test_a_malformed_image_is_a_state_error_at_open_or_at_the_query_that_meets_it(tmp_path: Path):
    from kit.errors import StateError

    good = _db_with_rows(tmp_path / "good.db")
    schema = tmp_path / "schema.db"  # page 1 (the schema) damaged: found when opening
    schema.write_bytes(good[:100] + b"A" * 3996 + good[4096:])
    with pytest.raises(StateError) as caught:
        StateDB(schema)
    assert caught.value.message == f"not a readable SQLite database (database disk image is malformed): {ADVICE}"

    deep = tmp_path / "deep.db"  # a table page damaged: opens; the query reading it fails, typed
    deep.write_bytes(good[: 4096 * 10] + b"A" * 4096 + good[4096 * 11:])
    with StateDB(deep) as db:
        with pytest.raises(StateError) as caught:
            db.execute("SELECT count(*) FROM t").fetchone()
        assert str(caught.value) == f"{deep}: not a readable SQLite database (database disk image is malformed): {ADVICE}"
        assert db.check() == ["database disk image is malformed"]  # what `kit doctor` runs
    with StateDB(tmp_path / "good.db") as db:
        assert db.check() == []


def test_other_sqlite_errors_stay_as_they_are(tmp_path: Path):
    # a mistake in a statement (or a lock) is not a damaged file: not turned into a StateError
    with StateDB(tmp_path / "s.db") as db:
        with pytest.raises(sqlite3.OperationalError, match="no such table: nope"):
            db.execute("SELECT * FROM nope")


def test_a_state_db_that_cannot_be_opened_says_so(tmp_path: Path):
    from kit.errors import StateError

    path = tmp_path / "state.db"
    path.mkdir()  # a folder where the file should be
    with pytest.raises(StateError) as caught:
        StateDB(path)
    assert str(caught.value) == (f"{path}: cannot be opened or written (unable to open database file): "
                                 "check that it is a file you can write, in a folder you can write")
