"""What a `kit dream` process loads and compiles: nothing it does not use. A dream syncs the index
and reads vectors but never searches, and ASCII notes never need the CJK character classes, each
milliseconds to compile (measured in bench/dream.py's `kit dream` in a new process). A real
`kit dream` subprocess reports, as it exits, which of them it loaded or compiled."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers_dream import days, searched, write_note

PROBE = """
import atexit, runpy, sys

def report():
    patterns = {"kit.tokens": ["_CJK"], "kit.memory.chunker": ["_CJK"], "kit.dreaming.tags": ["_WORD", "_CJK"],
                "kit.dreaming.junk": ["_CJK"]}
    compiled = sorted(f"{m}.{p}" for m, names in patterns.items() for p in names
                      if m in sys.modules and getattr(sys.modules[m], p)._compiled is not None)
    loaded = sorted(m for m in patterns if m in sys.modules)
    print("PROBE=" + repr(("kit.memory.search" in sys.modules, loaded, compiled)), file=sys.stderr)

atexit.register(report)
sys.argv = ["kit", "dream", "-w", ROOT]
runpy.run_module("kit", run_name="__main__")
"""


def dream_probe(root, now: str) -> tuple[bool, list[str], list[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE.replace("ROOT", repr(str(root)))], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "KIT_NOW": now})
    assert proc.returncode == 0, proc.stderr
    [probe] = [line for line in proc.stderr.splitlines() if line.startswith("PROBE=")]
    assert "promoted 1" in proc.stdout
    return eval(probe.removeprefix("PROBE="))  # noqa: S307 - our own repr


def test_a_dream_of_ascii_notes_never_loads_search_nor_compiles_the_cjk_classes(workspace):
    fact = "Production deploys happen on Tuesdays after the 10:00 standup."
    write_note(workspace.root, "2026-05-01", [fact, "Rain all day, took the tram.", "Supercalifragilistic"])
    for i, day in enumerate(days("2026-05-02", 3)):  # a one-word line too: the junk rule that asks about CJK
        searched(workspace, day, f"deploy day {i}", [(fact, 0.8), ("Supercalifragilistic", 0.4)], note_day="2026-05-01")
    searched_modules, loaded, compiled = dream_probe(workspace.root, "2026-05-04T20:00:00+00:00")
    assert not searched_modules
    assert loaded == ["kit.dreaming.junk", "kit.dreaming.tags", "kit.memory.chunker"]  # (not kit.tokens)
    assert compiled == []
    # a note in Chinese needs them, and compiles them
    zh = "部署改到每周四上午十点,站会之后。"
    write_note(workspace.root, "2026-05-05", [zh])
    for i, day in enumerate(days("2026-05-06", 3)):
        searched(workspace, day, f"部署 {i}", [(zh, 0.8)], note_day="2026-05-05")
    _, _, compiled = dream_probe(workspace.root, "2026-05-08T20:00:00+00:00")
    assert "kit.dreaming.tags._CJK" in compiled and "kit.memory.chunker._CJK" in compiled
