"""state.db: WAL, per-component migrations applied once."""

from __future__ import annotations

from pathlib import Path

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
        try:
            db.migrate("x", ["CREATE TABLE ok (a)", "CREATE TABLE ok2 (a);\nTHIS IS NOT SQL"])
        except Exception:
            pass
        assert db.version("x") == 1
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "ok" in tables and "ok2" not in tables
