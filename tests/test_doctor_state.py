"""`kit doctor` and a damaged `.kit/state.db`: one error, exit 1, the file left as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.state import StateDB

ADVICE = ("move it aside and Kit starts a new one; sessions are re-indexed from .kit/sessions/, but the "
          "recall log and dreaming's history (promotions, rejections, the verify queue) start empty unless "
          "`sqlite3 MOVED-FILE .recover` saves them")


def _state_with_rows(ws_path: Path) -> Path:
    path = ws_path / ".kit" / "state.db"
    with StateDB(path) as db:
        db.migrate("demo", ["CREATE TABLE t (a TEXT)"])
        with db.transaction():
            for _ in range(400):  # some 25 pages
                db.execute("INSERT INTO t VALUES (?)", ("x" * 200,))
    return path


def test_a_state_db_that_is_not_a_database_is_one_doctor_error(cli, ws_path: Path):
    state = _state_with_rows(ws_path)
    state.write_bytes(b"garbage\n")
    result = cli("doctor", "-w", ws_path, "--json", "--offline")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert (data["ok"], data["errors"], data["warnings"]) == (False, 1, 0)
    # reported once, as what it is: the cooldown check that could not read it does not repeat it
    assert [f for f in data["findings"] if f["area"] not in ("memory", "dreaming")] == [
        {"path": str(state), "line": None, "severity": "error", "area": "state",
         "message": f"not a readable SQLite database (file is not a database): {ADVICE}"},
    ]
    text = cli("doctor", "-w", ws_path, "--offline")
    assert text.exit_code == 1
    assert [line for line in text.stdout.splitlines() if "state.db" in line] == [
        f"error   state     {state}: not a readable SQLite database (file is not a database): {ADVICE}"]
    assert text.stdout.splitlines()[-1] == "1 error"
    assert state.read_bytes() == b"garbage\n"  # never moved, repaired or deleted by Kit
    assert sorted(p.name for p in state.parent.iterdir() if p.name.startswith("state.db")) == ["state.db"]


def test_damage_inside_a_state_db_that_still_opens_is_a_doctor_error(cli, ws_path: Path):
    state = _state_with_rows(ws_path)
    healthy = cli("doctor", "-w", ws_path, "--json", "--offline")
    assert healthy.exit_code == 0
    assert [f["area"] for f in json.loads(healthy.stdout)["findings"]] == ["memory", "dreaming"]

    good = state.read_bytes()
    state.write_bytes(good[: 4096 * 10] + b"A" * 4096 + good[4096 * 11:])  # one table page
    result = cli("doctor", "-w", ws_path, "--json", "--offline")
    assert result.exit_code == 1
    assert [(f["severity"], f["area"], f["path"], f["message"]) for f in json.loads(result.stdout)["findings"]
            if f["area"] == "state"] == [
        ("error", "state", str(state),
         f"not a readable SQLite database (quick_check: database disk image is malformed): {ADVICE}")]


def test_a_kit_file_and_an_unreadable_index_are_named_errors(cli, ws_path: Path):
    """Regression (interruption pass): `.kit` as a plain file passed doctor (exit 0) while every
    state-keeping command failed; `.kit/index.db` as a folder was `check failed: IsADirectoryError(21, …)`
    (and opening it deleted whatever was there: only a damaged file is thrown away now)."""
    import shutil

    shutil.rmtree(ws_path / ".kit", ignore_errors=True)
    (ws_path / ".kit").write_text("hello\n")
    result = cli("doctor", "-w", ws_path, "--json", "--offline")
    assert result.exit_code == 1
    errors = [(f["path"], f["message"]) for f in json.loads(result.stdout)["findings"] if f["severity"] == "error"]
    assert errors == [(".kit", "is not a folder: Kit keeps its state there (index, sessions, locks); move the "
                               "file aside and Kit makes the folder")]
    assert (ws_path / ".kit").read_text() == "hello\n"

    (ws_path / ".kit").unlink()
    (ws_path / ".kit" / "index.db").mkdir(parents=True)
    result = cli("doctor", "-w", ws_path, "--json", "--offline")
    errors = [(f["area"], f["path"], f["message"]) for f in json.loads(result.stdout)["findings"]
              if f["severity"] == "error"]
    assert errors == [("memory", ".kit/index.db", "cannot be opened or written (unable to open database file): "
                                                  "check that it is a file you can write, in a folder you can write")]


def test_a_read_only_folder_still_serves_every_command_that_only_reads(cli, ws_path: Path, monkeypatch):
    """Regression (interruption pass): on a read-only mount, memory search/status, sessions list,
    a dry-run dream and doctor all failed (`Read-only file system`, `state.db cannot be opened`).
    A read-only folder is `can_write_beside` False; as root a chmod would not show it, so it is
    stood in for here (a real read-only bind mount was tried by hand: the same outcomes)."""
    import kit.memory.index as index_module
    import kit.state as state_module

    assert cli("memory", "write", "Ada deploys on Tuesdays", "-w", ws_path).exit_code == 0
    assert cli("memory", "search", "deploys", "--record", "-w", ws_path).exit_code == 0
    kit_dir = ws_path / ".kit"

    def contents() -> dict[str, list[str]]:  # what each holds (the bytes move with WAL checkpoints)
        import sqlite3

        out = {}
        for name in ("index.db", "state.db"):
            conn = sqlite3.connect(kit_dir / name)
            out[name] = list(conn.iterdump())
            conn.close()
        return out

    before = contents()
    monkeypatch.setattr(state_module, "can_write_beside", lambda path: False)
    monkeypatch.setattr(index_module, "can_write_beside", lambda path: False)

    found = cli("memory", "search", "deploys", "--json", "-w", ws_path)
    assert found.exit_code == 0, found.output
    assert [r["snippet"] for r in json.loads(found.stdout)["results"]] == ["- Ada deploys on Tuesdays"]
    # a query never searched before: its vector is not stored (it was a write to the read-only index)
    fresh = cli("memory", "search", "who ships code on which weekday", "-w", ws_path)
    assert fresh.exit_code == 0 and "Ada deploys on Tuesdays" in fresh.stdout, fresh.output
    status = json.loads(cli("memory", "status", "--json", "-w", ws_path).stdout)
    assert status["recall_events"] == 1
    assert cli("sessions", "list", "-w", ws_path).exit_code == 0
    assert cli("dream", "--dry-run", "-w", ws_path).exit_code == 0
    report = json.loads(cli("doctor", "--offline", "--json", "-w", ws_path).stdout)
    assert report["errors"] == 0, report
    # what writes says why, in one line
    recorded = cli("memory", "search", "deploys", "--record", "-w", ws_path)
    assert recorded.exit_code == 1
    assert recorded.stderr == (f"kit: {kit_dir / 'state.db'}: cannot be written: its folder is read-only "
                               "(commands that only read still work)\n")
    indexed = cli("memory", "index", "-w", ws_path)
    assert indexed.exit_code == 1
    assert indexed.stderr == (f"kit: {kit_dir / 'index.db'}: cannot be updated: its folder is read-only "
                              "(searching what it holds still works)\n")
    assert contents() == before
    # an index another Kit built cannot be rebuilt here: said, not searched with the wrong tables
    monkeypatch.undo()
    conn = __import__("sqlite3").connect(kit_dir / "index.db")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    monkeypatch.setattr(state_module, "can_write_beside", lambda path: False)
    monkeypatch.setattr(index_module, "can_write_beside", lambda path: False)
    old = cli("memory", "search", "deploys", "-w", ws_path)
    assert old.exit_code == 1
    assert old.stderr.startswith(f"kit: {kit_dir / 'index.db'}: was built by another Kit (schema 1, now ")


def _on_a_read_only_mount(ws_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`kit ARGS` with the workspace bind-mounted read-only over itself, in a mount namespace of its
    own (`unshare -rm`: nothing outside the process sees the mount)."""
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'
    return subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", str(ws_path), sys.executable, "-m", "kit",
                           *args, "-w", str(ws_path)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _can_mount_read_only(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.mkdir()
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && ! touch "$1/x" 2>/dev/null'
    try:
        return subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", str(probe)],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def test_on_a_real_read_only_mount_reads_work_and_writes_say_why(cli, ws_path: Path, tmp_path: Path):
    """The same as above on the real thing: a read-only bind mount (the kernel refuses every write,
    root's included). Skipped where the machine lets no process make a mount namespace."""
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no unprivileged mount namespace here (unshare -rm)")
    assert cli("memory", "write", "Ada deploys on Tuesdays", "-w", ws_path).exit_code == 0
    assert cli("memory", "search", "deploys", "--record", "-w", ws_path).exit_code == 0
    found = _on_a_read_only_mount(ws_path, "memory", "search", "who ships code on which weekday", "--json")
    assert found.returncode == 0, found.stderr
    assert [r["snippet"] for r in json.loads(found.stdout)["results"]] == ["- Ada deploys on Tuesdays"]
    for args in (["memory", "status"], ["sessions", "list"], ["dream", "--dry-run"], ["doctor", "--offline"]):
        done = _on_a_read_only_mount(ws_path, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    recorded = _on_a_read_only_mount(ws_path, "memory", "search", "deploys", "--record")
    assert recorded.returncode == 1
    assert recorded.stderr == (f"kit: {ws_path / '.kit' / 'state.db'}: cannot be written: its folder is read-only "
                               "(commands that only read still work)\n")
