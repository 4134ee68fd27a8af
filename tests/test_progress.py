"""Library code never prints: long calls report kit.progress events to a callback, and the CLI
renders them (a terminal gets a bar or a spinner; --json and pipes get nothing)."""

from __future__ import annotations

import json

from helpers_memory import write
from kit import Status, Step


def test_memory_sync_reports_embedding_steps_and_prints_nothing(workspace, real_embedder, capfd):
    for day in range(1, 4):
        write(workspace.root, f"memory/2026-05-0{day}.md", f"# 2026-05-0{day}\n\n- note {day} about the boiler\n")
    workspace.memory.use_embedder(real_embedder)
    events: list = []
    result = workspace.memory.sync(progress=events.append)
    steps = [e for e in events if isinstance(e, Step)]
    assert steps and all(s.task == "embedding" for s in steps)
    # a step per file indexed; the untouched MEMORY.md template is no chunk, so only the notes embed
    assert steps[-1].done == steps[-1].total == result.files == 4
    assert result.embedded == 3
    assert [s.done for s in steps] == sorted(s.done for s in steps)
    assert capfd.readouterr() == ("", "")


def test_a_failing_progress_callback_does_not_fail_the_sync(workspace, real_embedder, caplog):
    write(workspace.root, "memory/2026-05-01.md", "- the boiler is due in June\n")
    workspace.memory.use_embedder(real_embedder)

    def broken(event):
        raise RuntimeError("display gone")

    assert workspace.memory.sync(progress=broken).embedded == 1  # the note (the MEMORY.md template is no chunk)
    assert "progress callback failed" in caplog.text


def test_dream_reports_its_phases_and_prints_nothing(workspace, capfd):
    events: list = []
    workspace.dream(dry_run=True, progress=events.append)
    assert [e.message for e in events if isinstance(e, Status)] == [
        "dreaming…", "dreaming: light", "dreaming: REM", "dreaming: deep"]
    assert capfd.readouterr() == ("", "")


def test_cli_json_output_stays_one_document(cli, ws_path):
    result = cli("dream", "-w", ws_path, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["applied"] is False
    index = cli("memory", "index", "-w", ws_path, "--json")
    assert index.exit_code == 0, index.output
    assert "files" in json.loads(index.output)


def test_the_cli_display_is_off_without_a_terminal():
    from kit.cli.common import progress_display

    with progress_display(True) as show:  # pytest's stderr is not a terminal
        assert show is None
    with progress_display(False) as show:
        assert show is None


def test_no_library_module_prints():
    """Only kit/cli renders: a print, a rich Console or a write to stdout/stderr below it is a bug."""
    import ast
    from pathlib import Path

    import kit

    engine = Path(kit.__file__).parent
    found = []
    for path in sorted(engine.rglob("*.py")):
        rel = path.relative_to(engine).as_posix()
        if rel.startswith("cli/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if name in ("print", "Console", "click.echo") or name.endswith(("stdout.write", "stderr.write")):
                found.append(f"{rel}:{node.lineno}: {name}")
    assert found == []
