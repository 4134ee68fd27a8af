"""`kit watch` as a real subprocess: start, edit, read the reload line, terminate."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers_watch import WAIT, write


class Lines:
    """Read a pipe on a thread so the test can wait for a line with a timeout, never hang."""

    def __init__(self, stream) -> None:
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def next(self, timeout: float = WAIT) -> str:
        line = self._queue.get(timeout=timeout)
        assert line is not None, "stream closed"
        return line

    def until(self, needle: str, timeout: float = WAIT) -> str:
        while True:
            line = self.next(timeout)
            if needle in line:
                return line


@pytest.fixture
def start_watch(ws_path: Path):
    procs: list[subprocess.Popen] = []

    def start(*extra: str) -> tuple[subprocess.Popen, Lines, Lines]:
        (ws_path / "kit.yaml").write_text("watch:\n  debounce_ms: 100\n")
        proc = subprocess.Popen(
            [sys.executable, "-m", "kit", "watch", "-w", str(ws_path), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        procs.append(proc)
        out, err = Lines(proc.stdout), Lines(proc.stderr)
        # the banner is printed once the observer is running: edits from now on are seen
        banner = err.until("watching")
        assert str(ws_path) in banner and "debounce 100 ms" in banner
        return proc, out, err

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT)


def test_watch_json_prints_one_object_per_reload(start_watch, ws_path: Path):
    proc, out, err = start_watch("--json")
    write(ws_path, "SOUL.md", "# Soul\n\nEdited under kit watch.\n")
    assert json.loads(out.next()) == {"version": 2, "changed": ["SOUL.md"], "errors": [], "removed": [], "fixed": []}

    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: [100\n")
    line = json.loads(out.next())
    assert line["version"] == 3
    assert line["changed"] == []
    assert len(line["errors"]) == 1 and line["errors"][0].startswith("kit.yaml:2: invalid YAML")

    write(ws_path, "memory/2026-05-07.md", "- a note\n")
    # errors are those of the reloaded paths: the note's reload does not repeat kit.yaml's
    assert json.loads(out.next()) == {"version": 4, "changed": ["memory/2026-05-07.md"], "errors": [],
                                      "removed": [], "fixed": []}

    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_human_output_names_changes_and_errors(start_watch, ws_path: Path):
    proc, out, err = start_watch()
    write(ws_path, "USER.md", "---\nname: [Ana\n---\n# User\n")
    first = out.until("v2")
    assert first.rstrip().endswith("v2 nothing applied (the last good version stays)")
    assert out.next().strip().startswith("error USER.md:2: invalid frontmatter YAML")
    write(ws_path, "USER.md", "---\nname: Ana\n---\n# User\n")
    assert out.until("v3").rstrip().endswith("v3 USER.md (fixed)")
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_json_skips_comment_only_config_edit(start_watch, ws_path: Path):
    proc, out, err = start_watch("--json")
    write(ws_path, "kit.yaml", "# just a comment\nwatch:\n  debounce_ms: 100\n")
    write(ws_path, "AGENTS.md", "# Agents\n\nAfter the comment edit.\n")
    # the first line printed is the AGENTS.md reload: the comment edit changed nothing
    assert json.loads(out.next()) == {"version": 2, "changed": ["AGENTS.md"], "errors": [], "removed": [], "fixed": []}
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_reports_template_errors_and_their_fix(start_watch, ws_path: Path):
    (ws_path / "templates").mkdir(exist_ok=True)
    (ws_path / "templates" / "system.md.j2").write_text("{{ kind }}\n{% if %}\n")
    proc, out, err = start_watch("--json")
    # a template broken before the watch started is named in the banner's problem list
    assert err.until("system.md.j2").strip() == (
        "error: templates/system.md.j2:2: template syntax error: Expected an expression, got 'end of statement block'"
    )
    write(ws_path, "templates/system.md.j2", "{{ kind }}\n\n{{ no_such_variable }}\n")
    assert json.loads(out.next()) == {
        "version": 2,
        "changed": ["templates/system.md.j2"],
        "errors": ["templates/system.md.j2:3: template error: 'no_such_variable' is undefined"],
        "removed": [],
        "fixed": [],
    }
    write(ws_path, "templates/system.md.j2", "{{ kind }}\n")
    assert json.loads(out.next()) == {"version": 3, "changed": ["templates/system.md.j2"], "errors": [],
                                      "removed": [], "fixed": ["templates/system.md.j2"]}
    # an edit elsewhere does not repeat a template problem that is unchanged (there is none now)
    write(ws_path, "SOUL.md", "# Soul\n\nStill fine.\n")
    assert json.loads(out.next()) == {"version": 4, "changed": ["SOUL.md"], "errors": [], "removed": [], "fixed": []}
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_human_output_shows_template_errors(start_watch, ws_path: Path):
    proc, out, err = start_watch()
    write(ws_path, "templates/system.md.j2", "{{ kind }\n")
    assert out.until("v2").rstrip().endswith("v2 templates/system.md.j2")
    assert out.next().strip().startswith("error templates/system.md.j2:1: template syntax error")
    write(ws_path, "templates/system.md.j2", "{{ kind }}\n")
    assert out.until("v3").rstrip().endswith("v3 templates/system.md.j2 (fixed)")
    write(ws_path, "templates/system.md.j2", "{{ kind }\n")
    assert out.until("v4").rstrip().endswith("v4 templates/system.md.j2")
    (ws_path / "templates" / "system.md.j2").unlink()  # broken, then deleted: the built-in one is used
    assert out.until("v5").rstrip().endswith("v5 templates/system.md.j2 (removed)")
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_reports_the_reload_that_fixes_an_error(start_watch, ws_path: Path):
    """Regression: restoring the last good kit.yaml bumped the version but printed nothing."""
    proc, out, err = start_watch("--json")
    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: [100\n")
    broken = json.loads(out.next())
    assert broken["version"] == 2 and broken["errors"][0].startswith("kit.yaml:2: invalid YAML")
    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: 100\n")
    assert json.loads(out.next()) == {"version": 3, "changed": [], "errors": [], "removed": [],
                                      "fixed": ["kit.yaml"]}
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_human_output_says_errors_fixed_and_summarises_bursts(start_watch, ws_path: Path):
    proc, out, err = start_watch()
    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: [100\n")
    out.until("v2")
    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: 100\n")
    assert out.until("v3").rstrip().endswith("v3 nothing changed (fixed: kit.yaml)")
    for i in range(12):
        (ws_path / "memory" / f"2026-05-{i + 1:02d}.md").write_text(f"- note {i}\n")
    line = out.until("v4").rstrip()
    assert line.endswith("and 4 more"), line
    assert line.count("memory/") == 8
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_says_fixed_only_for_what_was_fixed(start_watch, ws_path: Path):
    """Regression: with a broken skill left as it was, any other edit printed "(errors fixed)"
    (a reload's errors are only those of its own paths)."""
    write(ws_path, "skills/broken/SKILL.md", "---\nname: broken\ndescription: [unclosed\n---\n")
    proc, out, err = start_watch()
    assert "skills/broken/SKILL.md:3" in err.until("skills/broken")
    write(ws_path, "SOUL.md", "# Soul\n\nEdited while a skill is broken.\n")
    assert out.until("v2").rstrip().endswith("v2 SOUL.md")
    write(ws_path, "skills/broken/SKILL.md", "---\nname: broken\ndescription: Fixed now.\n---\n")
    assert out.until("v3").rstrip().endswith("v3 skills/broken/SKILL.md (fixed)")
    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: [100\n")
    assert out.until("v4").rstrip().endswith("v4 nothing applied (the last good version stays)")
    write(ws_path, "AGENTS.md", "# Agents\n\nkit.yaml is still broken.\n")
    assert out.until("v5").rstrip().endswith("v5 AGENTS.md")
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_says_removed_for_a_deleted_file_broken_or_not(start_watch, ws_path: Path):
    """Regression (new-user report): deleting a broken skill printed `(fixed)`. Each state says
    what happened: a good file broken, a broken file fixed, a broken file deleted (with and
    without a last good version), a good file deleted."""
    write(ws_path, "skills/foo/SKILL.md", "---\nname: foo\ndescription: [unclosed\n---\n")
    proc, out, err = start_watch()
    assert "skills/foo/SKILL.md:3" in err.until("skills/foo")
    shutil.rmtree(ws_path / "skills" / "foo")  # broken, never loaded: nothing in force changes
    assert out.until("v2").rstrip().endswith("v2 skills/foo/SKILL.md (removed)")
    write(ws_path, "skills/bar/SKILL.md", "---\nname: bar\ndescription: Bar.\n---\n")
    assert out.until("v3").rstrip().endswith("v3 skills/bar/SKILL.md")
    write(ws_path, "skills/bar/SKILL.md", "---\nname: bar\ndescription: [unclosed\n---\n")
    assert out.until("v4").rstrip().endswith("v4 nothing applied (the last good version stays)")
    assert out.next().strip().startswith("error skills/bar/SKILL.md:3: invalid frontmatter YAML")
    write(ws_path, "skills/bar/SKILL.md", "---\nname: bar\ndescription: Fixed.\n---\n")
    assert out.until("v5").rstrip().endswith("v5 skills/bar/SKILL.md (fixed)")
    write(ws_path, "skills/bar/SKILL.md", "---\nname: bar\ndescription: [unclosed\n---\n")
    assert out.until("v6").rstrip().endswith("v6 nothing applied (the last good version stays)")
    (ws_path / "skills" / "bar" / "SKILL.md").unlink()  # broken, its last good version in force
    assert out.until("v7").rstrip().endswith("v7 skills/bar/SKILL.md (removed)")
    (ws_path / "SOUL.md").unlink()  # a good file
    assert out.until("v8").rstrip().endswith("v8 SOUL.md (removed)")
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_json_lists_removed_and_fixed_paths(start_watch, ws_path: Path):
    write(ws_path, "skills/foo/SKILL.md", "---\nname: foo\ndescription: [unclosed\n---\n")
    write(ws_path, "USER.md", "---\nname: [Ana\n---\n# User\n")
    proc, out, err = start_watch("--json")
    err.until("USER.md")
    shutil.rmtree(ws_path / "skills" / "foo")
    assert json.loads(out.next()) == {"version": 2, "changed": [], "errors": [], "removed": ["skills/foo/SKILL.md"],
                                      "fixed": []}
    write(ws_path, "USER.md", "---\nname: Ana\n---\n# User\n")
    assert json.loads(out.next()) == {"version": 3, "changed": ["USER.md"], "errors": [], "removed": [],
                                      "fixed": ["USER.md"]}
    (ws_path / "USER.md").unlink()
    assert json.loads(out.next()) == {"version": 4, "changed": ["USER.md"], "errors": [], "removed": ["USER.md"],
                                      "fixed": []}
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


@pytest.mark.parametrize(
    ("changed", "before", "now", "present", "line"),
    [
        ([], {"a.md": True}, {}, [], "a.md (removed)"),  # broken, no last good version, deleted
        (["a.md"], {"a.md": True}, {}, [], "a.md (removed)"),  # broken with a last good version, deleted
        (["a.md"], {}, {}, [], "a.md (removed)"),  # good, deleted
        (["a.md"], {"a.md": True}, {}, ["a.md"], "a.md (fixed)"),  # broken, fixed
        ([], {}, {"a.md": True}, ["a.md"], "nothing applied (the last good version stays)"),  # good, broken
        ([], {"kit.yaml": True}, {}, ["kit.yaml"], "nothing changed (fixed: kit.yaml)"),
        (["a.md", "b.md"], {"b.md": True, "c.md": True}, {}, ["a.md", "b.md"],
         "a.md, b.md, c.md (fixed: b.md; removed: c.md)"),
        ([], {"some problem: text": False}, {}, [], "nothing changed (fixed: some problem: text)"),
    ],
)
def test_reload_outcome_tells_removed_from_fixed(tmp_path: Path, changed, before, now, present, line):
    from kit.cli.watch_cmd import describe, reload_outcome

    for rel in present:
        (tmp_path / rel).write_text("x")
    outcome = reload_outcome(tmp_path, changed, before, now)
    assert describe(outcome, has_errors=bool(now)) == line


def test_watch_reports_a_skill_or_hook_edit_that_breaks_a_rule_and_its_fix(start_watch, ws_path: Path):
    """Regression (new-user pass): an edit that reads fine but breaks a rule (a skill named unlike its
    folder, a hook's timeout_s: soon) printed as a plain reload while the last good version stayed."""
    write(ws_path, "skills/w1/SKILL.md", "---\nname: w1\ndescription: good\n---\nbody\n")
    proc, out, err = start_watch("--json")
    write(ws_path, "skills/w1/SKILL.md", "---\nname: w1-renamed\ndescription: bad\n---\nbody\n")
    line = json.loads(out.next())
    assert (line["changed"], line["errors"]) == (["skills/w1/SKILL.md"], [
        "skills/w1/SKILL.md:2: 'name' 'w1-renamed' must equal the folder name 'w1' (keeping the last good version)"])
    write(ws_path, "skills/w1/SKILL.md", "---\nname: w1\ndescription: good again\n---\nbody\n")
    line = json.loads(out.next())
    assert (line["errors"], line["fixed"]) == ([], ["skills/w1/SKILL.md"])
    write(ws_path, "hooks/h/HOOK.md", "---\nname: h\ndescription: d\nevents: [tool:after]\ncommand: 'true'\n"
                                      "timeout_s: soon\n---\n")
    line = json.loads(out.next())
    assert line["changed"] == ["hooks/h/HOOK.md"] and len(line["errors"]) == 1
    assert line["errors"][0].startswith("hooks/h/HOOK.md:6: ") and "timeout_s" in line["errors"][0]
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0
