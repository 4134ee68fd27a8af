"""A turn in a workspace with nothing to recall does not load the embedding model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers_agent import write_script

PROBE = """
import sys
from kit.agent.loop import Agent
from kit.workspace import Workspace
ws = Workspace.open({ws!r})
result = Agent(ws, model="script:{script}").turn("what do you remember about deploys?")
print("REPLY=" + result.reply)
print("HEAVY=" + ",".join(m for m in ("torch", "sentence_transformers") if m in sys.modules))
print("EMBEDDER=" + ",".join(m for m in ("kit.memory.numpy_embedder", "sentence_transformers") if m in sys.modules))
"""


def run_probe(ws: Path, script: Path) -> dict[str, str]:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(ws=str(ws), script=script)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


def test_fresh_workspace_turn_skips_recall_and_the_model(ws_path: Path, tmp_path: Path):
    script = write_script(tmp_path, [{"text": "Nothing yet."}], record=False)
    out = run_probe(ws_path, script)
    assert out == {"REPLY": "Nothing yet.", "HEAVY": "", "EMBEDDER": ""}


def test_a_daily_note_makes_recall_run(ws_path: Path, tmp_path: Path):
    (ws_path / "memory" / "2026-05-07.md").write_text("# 2026-05-07\n\n- Deploys happen on Tuesdays.\n")
    script = write_script(tmp_path, [{"text": "Tuesdays."}], record=False)
    out = run_probe(ws_path, script)
    assert out["REPLY"] == "Tuesdays."
    # recall ran, on the fast numpy backend: no torch for a small query batch
    assert out["EMBEDDER"] == "kit.memory.numpy_embedder" and out["HEAVY"] == ""
