"""`kit doctor` and a damaged `.kit/state.db`: one error, exit 1, the file left as it is."""

from __future__ import annotations

import json
from pathlib import Path

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
    state-keeping command failed; `.kit/index.db` as a folder was `check failed: IsADirectoryError(21, …)`."""
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
    assert errors == [("memory", ".kit/index.db", "check failed: Is a directory")]
