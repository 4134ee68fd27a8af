"""The fleet journal's rollback is a compare-and-swap: it takes a failed dream's changes out of the
files as they are now, so an edit the user saved during the failed run is never reverted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers_dream import tree
from helpers_fleet import NOW, make_workspace
from kit.fleet.jobs import Runtime
from kit.fleet.journal import Journal, JournaledWorkspace, revert_change

MY_LINE = "- The boat is moored at pier 9.\n"
HEADER_END = "in a section below.\n"


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_NOW", NOW)
    return make_workspace(tmp_path / "ws", 3)


def save_in_place(path: Path, text: str) -> None:
    """How an editor that rewrites in place saves (the dream is running: no lock, no Kit)."""
    with open(path, "r+", encoding="utf-8") as f:
        f.seek(0)
        f.write(text)
        f.truncate()


def with_my_line(text: str) -> str:
    assert HEADER_END in text
    return text.replace(HEADER_END, HEADER_END + MY_LINE, 1)


def fail_after_memory_write(monkeypatch, user_edit=None):
    """The dream fails half-way, after MEMORY.md was written (the diary comes next); `user_edit`
    runs first, as the user saving MEMORY.md while the dream is still running."""

    def boom(*_a, **_k):
        if user_edit:
            user_edit()
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("kit.dreaming.reports.append_diary", boom)


def outside_kit(root: Path) -> dict:
    return {k: v for k, v in tree(root).items() if not k.startswith(".kit/")}


def test_an_edit_saved_after_the_dreams_write_survives_its_rollback(ws, monkeypatch):
    memory = ws / "MEMORY.md"
    original = memory.read_text()
    seen = {}

    def user_edit():  # the editor reloaded the dream's version, the user added a line and saved
        seen["dream"] = memory.read_text()
        save_in_place(memory, with_my_line(seen["dream"]))

    fail_after_memory_write(monkeypatch, user_edit)
    before = outside_kit(ws)
    out = Runtime().run("dream", str(ws), task_id="t1")
    assert (out.state, out.error) == ("failed", "RuntimeError: disk on fire")
    assert "## Promoted memories" in seen["dream"]  # the dream had written MEMORY.md
    assert memory.read_text() == with_my_line(original)  # its promotions out, the user's line in
    assert "MEMORY.md: the interrupted run's change taken out; the edit saved meanwhile kept" in out.notes
    assert any(n.startswith("rolled back") and "1 kept" not in n for n in out.notes)
    # everything else the run wrote is gone, as before
    assert {k: v for k, v in outside_kit(ws).items() if k != "MEMORY.md"} == \
           {k: v for k, v in before.items() if k != "MEMORY.md"}


def test_an_edit_merged_into_the_dreams_write_survives_its_rollback(ws, monkeypatch):
    """The user saved just after the journal kept MEMORY.md's original and before the dream's swap:
    the swap saw it, and the dream's compare-and-swap merged their line into what it wrote.
    Restoring the original would drop that line too."""
    memory = ws / "MEMORY.md"
    original = memory.read_text()
    real_save = Journal.save

    def save(self, rel):
        first = rel not in (self._manifest or {}).get("files", {})
        real_save(self, rel)
        if rel == "MEMORY.md" and first:
            save_in_place(memory, with_my_line(memory.read_text()))

    monkeypatch.setattr(Journal, "save", save)
    fail_after_memory_write(monkeypatch)
    out = Runtime().run("dream", str(ws), task_id="t1")
    assert out.state == "failed"
    assert memory.read_text() == with_my_line(original)
    assert "MEMORY.md: the interrupted run's change taken out; the edit saved meanwhile kept" in out.notes


def test_an_edit_of_the_dreams_own_lines_is_kept_as_saved_and_reported(ws, monkeypatch):
    memory = ws / "MEMORY.md"
    mine = {}

    def user_edit():  # the user rewrites a line the dream just promoted
        text = memory.read_text()
        promoted = [ln for ln in text.splitlines() if ln.startswith("- ") and "(#3-" in ln][0]
        mine["text"] = text.replace(promoted, "- Alice prefers tulips now.")
        save_in_place(memory, mine["text"])

    fail_after_memory_write(monkeypatch, user_edit)
    out = Runtime().run("dream", str(ws), task_id="t1")
    assert out.state == "failed"
    assert memory.read_text() == mine["text"]  # byte for byte what the user saved
    assert ("MEMORY.md: kept as it is now: it was edited after the interrupted run wrote it, and the run's "
            "change could not be taken out without touching that edit") in out.notes
    assert any(n.startswith("rolled back") and "; 1 kept as edited meanwhile)" in n for n in out.notes)
    assert not (ws / "memory" / "dreaming").exists() or not any((ws / "memory" / "dreaming").rglob("*.md"))


def test_a_write_killed_mid_way_is_undone_whether_or_not_it_landed(ws):
    """kill -9 between the journal's record of a write and its 'landed' mark."""
    memory = ws / "MEMORY.md"
    original = memory.read_text()
    w = JournaledWorkspace.open(ws)
    journal = Journal(w, "dream")
    journal.begin("t1")
    journal.save("MEMORY.md")
    dreamt = original + "\n## Promoted memories\n\n- half a dream\n"
    journal.intend("MEMORY.md", original, dreamt)
    memory.write_text(dreamt)  # it landed; then the worker died
    save_in_place(memory, with_my_line(dreamt))  # and the user saved before the rerun
    notes = Journal(JournaledWorkspace.open(ws), "dream").rollback()
    assert memory.read_text() == with_my_line(original)
    assert notes[0].startswith("rolled back an interrupted run of task t1")

    journal = Journal(w, "dream")  # the same, but the write never landed
    journal.begin("t2")
    journal.save("MEMORY.md")
    journal.intend("MEMORY.md", memory.read_text(), "something else\n")
    Journal(JournaledWorkspace.open(ws), "dream").rollback()
    assert memory.read_text() == with_my_line(original)


def test_a_file_the_run_created_is_removed_unless_it_was_edited(ws):
    w = JournaledWorkspace.open(ws)
    journal = Journal(w, "dream")
    journal.begin("t1")
    w.journal = journal
    light, deep = "memory/dreaming/light/2026-05-07.md", "memory/dreaming/deep/2026-05-07.md"
    w.write_text(light, "report\n")
    w.write_text(deep, "# Deep\n\n- the run's report\n")
    (ws / deep).write_text("# Deep\n\n- the run's report\n- my own note\n")
    w.journal = None
    notes = journal.rollback()
    assert not (ws / light).exists()
    assert (ws / deep).read_text() == "- my own note\n"  # the run's text out, the user's in
    assert f"{deep}: the interrupted run's change taken out; the edit saved meanwhile kept" in notes


@pytest.mark.parametrize("before, after, current, expected", [
    ("a\nb\n", "a\nb\nK\n", "a\nb\nK\n", "a\nb\n"),                      # nothing else changed
    ("a\nb\n", "a\nb\nK\n", "U\na\nb\nK\n", "U\na\nb\n"),                # an edit elsewhere stays
    ("a\nb\nc\n", "a\nK\nc\n", "a\nK\nc\nU\n", "a\nb\nc\nU\n"),          # a replaced line comes back
    ("a\nb\nc\n", "a\nc\n", "U\na\nc\n", "U\na\nb\nc\n"),                # a removed line too
    ("a\nb\n", "a\nb\nK\n", "a\nb\nK2\n", None),                         # the run's line was edited
    ("a\nb\nc\n", "a\nc\n", "a\nU\nc\n", None),                          # next to a removed line
    ("", "K\n", "K\nU\n", "U\n"),                                        # a file the run created
])
def test_revert_change(before, after, current, expected):
    assert revert_change(before, after, current) == expected


def test_a_journal_of_an_older_kit_restores_as_before(ws):
    """Manifests without 'writes' (a worker of the previous version died): the old restore."""
    import json

    memory = ws / "MEMORY.md"
    original = memory.read_text()
    w = JournaledWorkspace.open(ws)
    journal = Journal(w, "dream")
    journal.begin("t1")
    journal.save("MEMORY.md")
    memory.write_text("dreamt\n")
    manifest = json.loads(journal.manifest_path.read_text())
    manifest.pop("writes", None)
    journal.manifest_path.write_text(json.dumps(manifest))
    Journal(JournaledWorkspace.open(ws), "dream").rollback()
    assert memory.read_text() == original
    shutil.rmtree(ws / ".kit" / "fleet", ignore_errors=True)
