"""`make demo` (scripts/demo.py) replaces only the folder it made itself."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _demo_module():
    spec = importlib.util.spec_from_file_location("kit_demo_script", ROOT / "scripts" / "demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_folder_the_demo_did_not_make_is_never_deleted(tmp_path, capsys):
    """Regression (a new-user pass): a re-run deleted ./demo-workspace without a word, whatever
    was in it."""
    demo = _demo_module()
    demo.DEMO = tmp_path / "demo-workspace"
    demo.DEMO.mkdir()
    (demo.DEMO / "mine.md").write_text("my notes\n")
    assert demo.main() == 1
    assert (demo.DEMO / "mine.md").read_text() == "my notes\n"
    assert capsys.readouterr().err == (f"make demo: {demo.DEMO} exists and was not made by make demo: move it "
                                       "away first (nothing was changed)\n")
