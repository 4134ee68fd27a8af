"""Part 5: every injection string (and every benign control) through every write door.

Doors: the memory_write tool, `kit memory write` (the CLI), write_file into a daily note, into
MEMORY.md, USER.md and SOUL.md, edit_file into MEMORY.md and today's note, and recall (a note
already on disk, found by memory_search: a flagged snippet must be withheld). An injection is
refused when the door says no and the file is unchanged (for recall: the text is not returned); a
benign control must go through. The strings live in injections.py, shared with the threat scan.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

from injections import BENIGN, INJECTIONS

TODAY = "2026-05-07"


def _doors():
    from kit.tools import ToolContext, execute_tool

    def memory_write(ws, text):
        return execute_tool(ToolContext(ws), "memory_write", {"text": text}).ok

    def cli_write(ws, text):
        from click.testing import CliRunner

        from kit.cli.main import cli

        result = CliRunner().invoke(cli, ["memory", "write", "-w", str(ws.root), "--", text], catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code == 0

    def write_into(rel):
        def door(ws, text):
            path = ws.root / rel
            current = path.read_text() if path.exists() else f"# {rel}\n"
            return execute_tool(ToolContext(ws), "write_file", {"path": rel, "content": current + f"- {text}\n"}).ok
        return door

    def edit_into(rel):
        def door(ws, text):
            path = ws.root / rel
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"# {rel}\n\n- placeholder line\n")
            elif "- placeholder line" not in path.read_text():
                path.write_text(path.read_text() + "- placeholder line\n")
            return execute_tool(ToolContext(ws), "edit_file",
                                {"path": rel, "old_text": "- placeholder line", "new_text": f"- {text}"}).ok
        return door

    return {
        "memory_write": memory_write,
        "kit memory write": cli_write,
        "write_file memory/": write_into("memory/2026-05-01.md"),
        "write_file MEMORY.md": write_into("MEMORY.md"),
        "write_file USER.md": write_into("USER.md"),
        "write_file SOUL.md": write_into("SOUL.md"),
        "edit_file MEMORY.md": edit_into("MEMORY.md"),
        "edit_file today": edit_into(f"memory/{TODAY}.md"),
    }


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _recall(ws, cases) -> dict[str, bool | None]:
    """A note on disk holding each text (as an import or an editor would leave it), then
    memory_search for the note's marker: True = the text came back, False = it was withheld,
    None = the search did not find the note at all (not counted either way)."""
    from kit.tools import ToolContext, execute_tool

    notes = ws.root / "memory"
    for i, case in enumerate(cases):
        (notes / f"2026-04-{1 + i % 28:02d}-r{i}.md").write_text(f"# Recall {i}\n\n- recallmark{i} {case.text}\n")
    ws.memory.sync()
    out: dict[str, bool | None] = {}
    for i, case in enumerate(cases):
        result = execute_tool(ToolContext(ws), "memory_search", {"query": f"recallmark{i}", "limit": 3})
        found = f"-r{i}.md" in result.result
        try:  # the tool answers JSON: compare the snippets' text, whitespace folded
            shown = " ".join(_strings(json.loads(result.result)))
        except ValueError:
            shown = result.result
        out[case.id] = (" ".join(case.text.split()) in " ".join(shown.split())) if found else None
    return out


def run() -> dict:
    from kit.workspace import Workspace

    os.environ["KIT_NOW"] = f"{TODAY}T09:00:00+00:00"
    os.environ["KIT_MEMORY__EMBEDDING__MODEL"] = "stress-no-such-model"  # fts-only: no model needed
    per_door: dict[str, dict[str, int]] = defaultdict(lambda: {"refused": 0, "accepted_benign": 0})
    let_in: dict[str, list[str]] = defaultdict(list)
    blocked_benign: dict[str, list[str]] = defaultdict(list)
    folder = Path(tempfile.mkdtemp(prefix="kit-stress-doors-"))
    try:
        from kit.init import init_workspace

        doors = _doors()
        for name, door in doors.items():
            root = folder / name.replace(" ", "_").replace("/", "_")
            init_workspace(root)
            ws = Workspace.open(root)
            for case in INJECTIONS:
                if door(ws, case.text):
                    let_in[name].append(case.id)
                else:
                    per_door[name]["refused"] += 1
            for case in BENIGN:
                if door(ws, case.text):
                    per_door[name]["accepted_benign"] += 1
                else:
                    blocked_benign[name].append(case.id)
        root = folder / "recall"
        init_workspace(root)
        ws = Workspace.open(root)
        seen = _recall(ws, INJECTIONS + BENIGN)
        for case in INJECTIONS:
            if seen[case.id] is None:
                per_door["recall"]["not_found"] = per_door["recall"].get("not_found", 0) + 1
            elif seen[case.id]:
                let_in["recall"].append(case.id)
            else:
                per_door["recall"]["refused"] += 1
        for case in BENIGN:
            if seen[case.id] is None:
                per_door["recall"]["not_found"] = per_door["recall"].get("not_found", 0) + 1
            elif seen[case.id]:
                per_door["recall"]["accepted_benign"] += 1
            else:
                blocked_benign["recall"].append(case.id)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    n_doors = len(per_door)
    return {
        "injections": len(INJECTIONS),
        "benign": len(BENIGN),
        "doors": n_doors,
        "refused": sum(d["refused"] for d in per_door.values()),
        "refused_of": len(INJECTIONS) * n_doors,
        "accepted_benign": sum(d["accepted_benign"] for d in per_door.values()),
        "accepted_benign_of": len(BENIGN) * n_doors,
        "per_door": dict(per_door),
        "let_in": {k: v for k, v in let_in.items()},
        "blocked_benign": {k: v for k, v in blocked_benign.items()},
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
