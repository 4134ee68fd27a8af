"""`kit watch` as a real subprocess: start, edit, read the reload line, terminate."""

from __future__ import annotations

import json
import os
import queue
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
    assert json.loads(out.next()) == {"version": 2, "changed": ["SOUL.md"], "errors": []}

    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: [100\n")
    line = json.loads(out.next())
    assert line["version"] == 3
    assert line["changed"] == []
    assert len(line["errors"]) == 1 and line["errors"][0].startswith("kit.yaml:2: invalid YAML")

    write(ws_path, "memory/2026-05-07.md", "- a note\n")
    # errors are those of the reloaded paths: the note's reload does not repeat kit.yaml's
    assert json.loads(out.next()) == {"version": 4, "changed": ["memory/2026-05-07.md"], "errors": []}

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
    assert json.loads(out.next()) == {"version": 2, "changed": ["AGENTS.md"], "errors": []}
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
    }
    write(ws_path, "templates/system.md.j2", "{{ kind }}\n")
    assert json.loads(out.next()) == {"version": 3, "changed": ["templates/system.md.j2"], "errors": []}
    # an edit elsewhere does not repeat a template problem that is unchanged (there is none now)
    write(ws_path, "SOUL.md", "# Soul\n\nStill fine.\n")
    assert json.loads(out.next()) == {"version": 4, "changed": ["SOUL.md"], "errors": []}
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_human_output_shows_template_errors(start_watch, ws_path: Path):
    proc, out, err = start_watch()
    write(ws_path, "templates/system.md.j2", "{{ kind }\n")
    assert out.until("v2").rstrip().endswith("v2 templates/system.md.j2")
    assert out.next().strip().startswith("error templates/system.md.j2:1: template syntax error")
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0


def test_watch_reports_the_reload_that_fixes_an_error(start_watch, ws_path: Path):
    """Regression: restoring the last good kit.yaml bumped the version but printed nothing."""
    proc, out, err = start_watch("--json")
    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: [100\n")
    broken = json.loads(out.next())
    assert broken["version"] == 2 and broken["errors"][0].startswith("kit.yaml:2: invalid YAML")
    write(ws_path, "kit.yaml", "watch:\n  debounce_ms: 100\n")
    assert json.loads(out.next()) == {"version": 3, "changed": [], "errors": []}
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
