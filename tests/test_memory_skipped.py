"""Files the indexer skips (not UTF-8, too many lines, a symlink to nothing …): one story everywhere.

Regression (new-user walkthrough): a daily note saved as Latin-1 was counted in `kit memory index`'s
"indexed N files" but in none of its buckets, `kit doctor` said "fresh: N-1 files", and `kit memory
status` called the workspace stale ("1 new: run `kit memory index`") forever, whatever was run.
Real files, real SQLite, fts-only (no model) to stay fast.
"""

from __future__ import annotations

import json
import os

import pytest

from helpers_memory import write
from kit.memory.service import Memory, doctor_checks

GOOD = "memory/2026-05-11.md"
BAD = "memory/2026-05-16.md"
LATIN1 = b"# 2026-05-16\n\n- Caf\xe9 order for Friday is at noon.\n"  # \xe9 is not UTF-8
NO_MODEL = {"KIT_MEMORY__EMBEDDING__MODEL": "no-such-model"}  # fts-only: no model is loaded


def _workspace_with_a_latin1_note(root) -> None:
    write(root, GOOD, "# 2026-05-11\n\n- Standup is at 9:30.\n")
    (root / BAD).write_bytes(LATIN1)


def _adds_up(result) -> bool:
    return result.files == len(result.added) + len(result.updated) + result.unchanged + len(result.skipped)


def _doctor(workspace) -> list[tuple[str, str]]:
    return [(f.severity, str(f)) for f in doctor_checks(workspace) if f.area == "memory"]


def test_an_undecodable_note_is_skipped_named_and_counted(workspace):
    _workspace_with_a_latin1_note(workspace.root)
    mem = Memory(workspace, embedder=None)
    first = mem.sync()
    assert first.files == 3 and sorted(first.added) == ["MEMORY.md", GOOD] and _adds_up(first)
    [skip] = first.skipped
    assert (skip.path, skip.line, skip.reason, skip.kept) == (BAD, 3, "not valid UTF-8 (byte 19)", False)
    assert skip.describe() == f"{BAD}:3: not valid UTF-8 (byte 19); not indexed"
    assert first.errors == (skip.describe(),) and first.problems == ()  # one line, not two
    assert first.to_json()["skipped"] == [{"path": BAD, "line": 3, "reason": "not valid UTF-8 (byte 19)",
                                          "kept": False, "message": skip.describe()}]

    again = mem.sync()  # the next sync skips it again, and still adds up
    assert (again.files, again.unchanged, again.added, again.updated) == (3, 2, (), ())
    assert [s.path for s in again.skipped] == [BAD] and _adds_up(again)
    assert (workspace.root / BAD).read_bytes() == LATIN1  # nothing the user wrote is rewritten


def test_status_and_doctor_call_a_skipped_note_skipped_not_stale_until_it_is_fixed(workspace):
    _workspace_with_a_latin1_note(workspace.root)
    mem = Memory(workspace, embedder=None)
    mem.sync()
    status = mem.status()
    assert status.fresh and status.stale_paths.new == () and status.files == 2
    assert [(s.path, s.line, s.kept) for s in status.skipped] == [(BAD, 3, False)]
    assert status.to_json()["stale_paths"]["new"] == [] and status.to_json()["fresh"] is True
    assert status.to_json()["skipped"][0]["message"] == f"{BAD}:3: not valid UTF-8 (byte 19); not indexed"
    findings = _doctor(workspace)
    assert ("warning", f"{BAD}:3: not valid UTF-8 (byte 19); not indexed") in findings
    assert ("info", "memory index fresh: 2 files, 1 chunk, 0 embedded; 1 file skipped (named above)") in findings
    assert not [m for _, m in findings if "stale" in m]

    # fixed (saved as UTF-8): now it is new, and stale, until the next sync indexes it
    (workspace.root / BAD).write_text(LATIN1.decode("latin-1") + "- Bring cash.\n", encoding="utf-8")
    status = mem.status()
    assert not status.fresh and status.stale_paths.new == (BAD,) and status.skipped == ()
    result = mem.sync()
    assert result.added == (BAD,) and result.skipped == () and _adds_up(result)
    status = mem.status()
    assert status.fresh and status.skipped == () and status.files == 3
    assert mem.search("Café order").results[0].path == BAD


def test_a_note_that_turns_undecodable_keeps_its_last_indexed_version(workspace):
    write(workspace.root, BAD, "# 2026-05-16\n\n- Cafe order for Friday is at noon.\n")
    mem = Memory(workspace, embedder=None)
    mem.sync()
    (workspace.root / BAD).write_bytes(LATIN1 + b"- Bring cash.\n")
    result = mem.sync()
    assert result.updated == () and result.unchanged == 1 and _adds_up(result)
    [skip] = result.skipped
    assert skip.kept and skip.describe() == (f"{BAD}:3: not valid UTF-8 (byte 19); "
                                             "the last indexed version stays searchable")
    status = mem.status()
    assert status.fresh and status.stale_paths.changed == () and [s.kept for s in status.skipped] == [True]
    assert ("warning", f"{BAD}:3: not valid UTF-8 (byte 19); the last indexed version stays searchable") \
        in _doctor(workspace)
    assert mem.search("Cafe order Friday").results[0].path == BAD  # the last good version


def test_a_sync_of_named_paths_records_the_skip_too(workspace):
    """The watcher and `mem.write` sync only the paths that changed: their skips count as well."""
    mem = Memory(workspace, embedder=None)
    mem.sync()
    (workspace.root / BAD).write_bytes(LATIN1)
    assert mem.status().stale_paths.new == (BAD,)
    result = mem.sync([BAD])
    assert result.files == 1 and [s.path for s in result.skipped] == [BAD] and _adds_up(result)
    status = mem.status()
    assert status.fresh and [s.path for s in status.skipped] == [BAD]
    (workspace.root / BAD).unlink()
    status = mem.status()  # gone: neither stale nor skipped
    assert status.fresh and status.skipped == ()


def test_a_note_over_the_line_limit_is_skipped_not_stale(workspace, monkeypatch):
    import kit.memory.index as index

    monkeypatch.setattr(index, "MAX_INDEX_LINES", 5)
    write(workspace.root, "memory/2026-05-01.md", "# 2026-05-01\n\n" + "- line\n" * 10)
    mem = Memory(workspace, embedder=None)
    result = mem.sync()
    assert [s.path for s in result.skipped] == ["memory/2026-05-01.md"] and _adds_up(result)
    assert "12 lines, over the 5-line limit" in result.skipped[0].reason
    assert mem.status().fresh
    assert [m for _, m in _doctor(workspace) if "5-line limit" in m]


def test_a_symlink_to_a_missing_file_is_skipped_not_silently_counted(workspace):
    (workspace.root / "memory").mkdir(exist_ok=True)
    os.symlink("nowhere.txt", workspace.root / "memory/link.md")
    mem = Memory(workspace, embedder=None)
    result = mem.sync()
    assert result.files == 2 and _adds_up(result)
    [skip] = result.skipped
    assert skip.describe() == "memory/link.md: symlink to a missing file (nowhere.txt); not indexed"
    status = mem.status()
    assert status.fresh and [s.path for s in status.skipped] == ["memory/link.md"]


@pytest.mark.parametrize("as_json", [False, True])
def test_the_cli_tells_one_story(ws_path, cli, kit_now, as_json):
    kit_now("2026-05-16T10:00:00+00:00")
    _workspace_with_a_latin1_note(ws_path)
    json_flag = ("--json",) if as_json else ()
    index = cli("memory", "index", "-w", ws_path, *json_flag, env=NO_MODEL)
    assert index.exit_code == 0, index.output
    line = f"{BAD}:3: not valid UTF-8 (byte 19); not indexed"
    if as_json:
        data = json.loads(index.output)
        assert data["files"] == 3 and len(data["added"]) == 2 and data["unchanged"] == 0
        assert [s["message"] for s in data["skipped"]] == [line] and data["errors"] == [line]
    else:
        assert "indexed 3 files (fts-only): 2 added, 0 updated, 0 removed, 0 unchanged, 1 skipped;" in index.output
        assert index.output.count(BAD) == 1 and f"skipped {line}" in index.output
        # embedded counts distinct texts, and says so ("54 chunks written, 18 embedded" read as a third unembedded)
        assert "; 1 chunk written (0 distinct texts embedded, 0 from cache) in " in index.output
    status = cli("memory", "status", "-w", ws_path, *json_flag, env=NO_MODEL)
    assert status.exit_code == 0, status.output
    if as_json:
        data = json.loads(status.output)
        assert data["fresh"] is True and data["stale_paths"]["new"] == []
        assert [s["path"] for s in data["skipped"]] == [BAD]
    else:
        assert "stale" not in status.output and "fresh" in status.output
        assert f"skipped   {line}" in status.output
    doctor = cli("doctor", "--offline", "-w", ws_path, env=NO_MODEL)
    assert "1 file skipped" in doctor.output and "stale" not in doctor.output
    # a search that finds nothing says which note it could not search (regression, a new-user pass:
    # only "no matches"); on stderr, so --json's stdout stays one document
    search = cli("memory", "search", "Café order", "-w", ws_path, *json_flag, env=NO_MODEL)
    assert search.exit_code == 0 and search.stderr == f"kit: warning: {line}\n"
    assert json.loads(search.stdout)["results"] == [] if as_json else search.stdout.splitlines()[-1] == "no matches"
    assert (ws_path / BAD).read_bytes() == LATIN1
