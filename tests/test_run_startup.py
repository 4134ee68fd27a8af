"""What a `kit run` turn loads before it can answer: nothing it does not use (measured in
bench/first_token). A real `kit run --stream-json` subprocess reports, as it exits, which
modules it imported and how many of the date parser's patterns it compiled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers_agent import write_script

PROBE = """
import atexit, runpy, sys

def report():
    names = ("kit.mcp_client", "kit.hooks.claude", "asyncio", "rich.markdown", "torch", "mcp")
    loaded = [n for n in names if n in sys.modules]
    dates = sys.modules.get("kit.memory.dates")
    compiled = None if dates is None else sum(p._compiled is not None for p, _ in dates._EN + dates._ZH)
    print("PROBE=" + repr((loaded, compiled)), file=sys.stderr)

atexit.register(report)
sys.argv = ["kit", "run", "--stream-json", "--model", "script:" + {script!r}, {question!r}]
runpy.run_module("kit", run_name="__main__")
"""


def run_probe(ws: Path, script: Path, question: str) -> tuple[list[str], int | None, list[dict]]:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(script=str(script), question=question)],
                          cwd=ws, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    [probe] = [line for line in proc.stderr.splitlines() if line.startswith("PROBE=")]
    loaded, compiled = eval(probe.removeprefix("PROBE="))  # noqa: S307 - our own repr
    return loaded, compiled, [json.loads(line) for line in proc.stdout.splitlines()]


def test_a_turn_loads_only_what_it_uses(ws_path: Path, tmp_path: Path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    # no digit and no date word in the note or the question: the date parser has nothing to read
    (ws_path / "memory" / "2026-05-05.md").write_text("- The door code is kestrel.\n")
    script = write_script(tmp_path, [{"text": "Kestrel."}], record=False)
    loaded, compiled, events = run_probe(ws_path, script, "what is the door code?")
    assert events[-1]["reply"] == "Kestrel."
    # no MCP servers, hooks.claude_code off, no coroutine hook, no terminal: none of them loaded
    assert loaded == []
    assert compiled == 0  # the question has no date word: no date pattern was compiled
    _, compiled, _ = run_probe(ws_path, script, "did we change it last week?")
    assert compiled > 0  # "last week" needs them
