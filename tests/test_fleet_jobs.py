"""Fleet jobs without Celery: the same library calls as `kit dream`, made safe to run twice or to
be killed half-way (locks, finished-task ids, the undo journal)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers_dream import tree
from helpers_fleet import NOW, dream_tables, git_view, make_workspace
from helpers_memory import record_model_loads
from kit.dreaming.runner import acquire_lock
from kit.fleet.jobs import AlreadyRunning, Runtime
from kit.fleet.journal import DREAM_TABLES, Journal, JournaledWorkspace
from kit.workspace import Workspace


@pytest.fixture
def ws_pair(tmp_path, monkeypatch):
    """A generated workspace and an identical copy to dream locally."""
    monkeypatch.setenv("KIT_NOW", NOW)
    ws = make_workspace(tmp_path / "ws", 3)
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy, symlinks=True)
    return ws, copy


def local(copy: Path) -> dict:
    return Workspace.open(copy).dream().to_json()


def strip_sha(data: dict) -> dict:
    data = json.loads(json.dumps(data))
    if data.get("git"):
        data["git"]["commit"] = "<sha>"
    return data


def same_workspace(a: Path, b: Path) -> None:
    assert tree(a, skip_kit=True) == tree(b, skip_kit=True)
    assert dream_tables(a) == dream_tables(b)
    assert git_view(a) == git_view(b)


def test_a_dream_job_is_a_local_dream(ws_pair):
    ws, copy = ws_pair
    out = Runtime().run("dream", str(ws), task_id="t1")
    assert (out.state, out.exit_code, out.error) == ("ok", 0, None)
    assert out.summary.startswith("promoted ")
    assert strip_sha(out.result) == strip_sha(local(copy))
    same_workspace(ws, copy)
    assert not (ws / ".kit" / "fleet" / "journal" / "dream").exists()
    assert not (ws / ".kit" / "fleet" / "running" / "dream.json").exists()


def test_a_second_delivery_of_a_finished_task_returns_its_outcome_and_runs_nothing(ws_pair):
    ws, _ = ws_pair
    rt = Runtime()
    first = rt.run("dream", str(ws), task_id="t1")
    before = tree(ws)
    again = rt.run("dream", str(ws), task_id="t1")
    assert again.duplicate and again.result == first.result and again.state == "ok"
    assert tree(ws) == before
    other = rt.run("dream", str(ws), task_id="t2")  # a new task is a new (idle, same-day) dream
    assert not other.duplicate and other.result["changed"] == []


def test_a_held_dream_lock_makes_the_job_busy_exit_3(ws_pair):
    ws, _ = ws_pair
    before = tree(ws)
    lock = acquire_lock(Workspace.open(ws), 0)  # a local `kit dream` is running
    try:
        out = Runtime().run("dream", str(ws), task_id="t1")
    finally:
        lock.release()
    assert (out.state, out.exit_code) == ("busy", 3)
    assert "another dream is running in this workspace" in out.error
    assert tree(ws) == before


def test_the_same_task_still_running_elsewhere_is_already_running_not_busy(ws_pair):
    ws, _ = ws_pair
    w = Workspace.open(ws)
    lock = acquire_lock(w, 0)
    marker = ws / ".kit" / "fleet" / "running" / "dream.json"
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps({"task_id": "t1", "host": "another-machine", "pid": 1}))
    try:
        with pytest.raises(AlreadyRunning):
            Runtime().run("dream", str(ws), task_id="t1")
        assert Runtime().run("dream", str(ws), task_id="t2").state == "busy"
    finally:
        lock.release()


def test_a_killed_dream_is_rolled_back_before_its_rerun(ws_pair):
    """What a SIGKILL after the MEMORY.md write leaves: journal, new files, table rows, a staged
    commit in progress. The next attempt must end exactly as one clean run."""
    ws, copy = ws_pair
    w = JournaledWorkspace.open(ws)
    journal = Journal(w, "dream")
    journal.begin("t1")
    w.journal = journal
    w.write_text("MEMORY.md", "# Memory\n\n- half a dream\n")
    w.write_text("memory/dreaming/light/2026-05-07.md", "partial report\n")
    db = w.open_state()
    db.execute("INSERT INTO dream_promotions(key, claim, snippet, score, recalls, queries, promoted_day,"
               " last_recall_day, status, status_day) VALUES ('k','c','s',1,1,1,'d','d','active','d')")
    db.close()
    import subprocess

    subprocess.run(["git", "-C", str(ws), "add", "MEMORY.md"], check=True)
    # ... and the worker dies here

    out = Runtime().run("dream", str(ws), task_id="t1")
    assert out.state == "ok"
    assert out.notes[0].startswith("rolled back an interrupted run of task t1")
    assert strip_sha(out.result) == strip_sha(local(copy))
    same_workspace(ws, copy)


def test_a_rollback_also_undoes_a_dream_commit_but_never_a_users(ws_pair):
    import subprocess

    ws, _ = ws_pair
    start, memory = git_view(ws), (ws / "MEMORY.md").read_text()
    w = JournaledWorkspace.open(ws)
    journal = Journal(w, "dream")
    journal.begin("t1")
    w.journal = journal
    w.write_text("MEMORY.md", "# Memory\n\n- promoted then killed\n")
    env = ["-c", "user.name=K", "-c", "user.email=k@x"]
    subprocess.run(["git", "-C", str(ws), *env, "commit", "-qam", "dream: promote 1 memory (2026-05-07)"], check=True)
    journal.rollback()
    assert git_view(ws) == start and (ws / "MEMORY.md").read_text() == memory
    assert subprocess.run(["git", "-C", str(ws), "status", "--porcelain"], capture_output=True, text=True).stdout == ""

    journal = Journal(w, "dream")
    journal.begin("t2")
    w.journal = journal
    (ws / "notes.txt").write_text("mine")
    subprocess.run(["git", "-C", str(ws), "add", "notes.txt"], check=True)
    subprocess.run(["git", "-C", str(ws), *env, "commit", "-qm", "my own work"], check=True)
    notes = journal.rollback()
    assert git_view(ws)["log"][0] == "my own work"  # left alone, and said so
    assert any("not only by dream commits" in n for n in notes)


def test_an_error_half_way_rolls_back_at_once_and_fails_alone(ws_pair, monkeypatch):
    ws, _ = ws_pair
    before = (tree(ws), dream_tables(ws), git_view(ws))

    def boom(*_a, **_k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("kit.dreaming.reports.append_diary", boom)  # after MEMORY.md was written
    out = Runtime().run("dream", str(ws), task_id="t1")
    assert (out.state, out.exit_code, out.error) == ("failed", 1, "RuntimeError: disk on fire")
    assert any(n.startswith("rolled back") for n in out.notes)
    after = (tree(ws), dream_tables(ws), git_view(ws))
    assert {k: v for k, v in after[0].items() if not k.startswith(".kit/")} == \
           {k: v for k, v in before[0].items() if not k.startswith(".kit/")}
    assert {t: rows for t, rows in after[1].items() if rows} == before[1] == {}  # (empty tables may stay)
    assert after[2] == before[2]


def test_a_missing_or_broken_workspace_is_a_failed_outcome(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_NOW", NOW)
    out = Runtime().run("dream", str(tmp_path / "gone"), task_id="t")
    assert out.state == "failed" and "does not exist" in out.error
    ws = make_workspace(tmp_path / "ws", 1)
    (ws / "MEMORY.md").write_bytes(b"\xff\xfe")
    out = Runtime().run("dream", str(ws), task_id="t")
    assert out.state == "failed" and out.error.startswith("MEMORY.md") and "UTF-8" in out.error
    assert git_view(ws)["log"] == ["start"]


def test_the_runtime_loads_the_model_once_per_process(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_NOW", NOW)
    a, b = make_workspace(tmp_path / "a", 1), make_workspace(tmp_path / "b", 2)
    loads = record_model_loads(monkeypatch)
    rt = Runtime()
    outcomes = [rt.run("index", str(a), task_id="x"), rt.run("dream", str(a), task_id="y"),
                rt.run("index", str(b), task_id="z")]
    assert [o.state for o in outcomes] == ["ok", "ok", "ok"]
    assert [o.result["embedded"] for o in outcomes[::2]] == [13, 14]  # both indexes embedded
    # three tasks over two workspaces: one model load, by the worker's own Embedders
    assert loads == [rt.embedders.get(None).active]


def test_journal_tables_are_the_dreaming_stores_tables(tmp_path):
    from kit.dreaming import store
    from kit.state import StateDB

    db = StateDB(tmp_path / "state.db")
    before = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    store.ensure_schema(db)
    after = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.close()
    assert after - before == set(DREAM_TABLES)


def test_a_run_on_another_machine_is_seen_by_its_marker_until_it_is_stale(ws_pair):
    """On a shared filesystem the pid lock cannot see another machine's process; the marker can."""
    from datetime import UTC, datetime, timedelta

    ws, _ = ws_pair
    marker = ws / ".kit" / "fleet" / "running" / "dream.json"
    marker.parent.mkdir(parents=True)
    now = datetime.now(UTC)
    marker.write_text(json.dumps({"task_id": "t1", "host": "other-host", "pid": 4242, "started": now.isoformat()}))
    before = tree(ws)
    out = Runtime().run("dream", str(ws), task_id="t2")
    assert (out.state, out.exit_code) == ("busy", 3) and "on other-host" in out.error
    with pytest.raises(AlreadyRunning):
        Runtime().run("dream", str(ws), task_id="t1")
    assert tree(ws) == before
    old = (now - timedelta(hours=2)).isoformat()  # older than the hard time limit: that run is dead
    marker.write_text(json.dumps({"task_id": "t1", "host": "other-host", "pid": 4242, "started": old}))
    assert Runtime(stale_after=3600).run("dream", str(ws), task_id="t2").state == "ok"
