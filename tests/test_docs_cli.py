"""docs/cli.md is generated from the commands' own --help by cog (`make docs`); it must not go stale."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "cli.md"
COG = Path(sys.executable).with_name("cog")

pytestmark = pytest.mark.skipif(not COG.exists(), reason="cogapp is in the dev extra")


def _check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(COG), "--check", str(path)], capture_output=True, text=True, timeout=120)


def test_the_cli_reference_is_current():
    result = _check(DOC)
    assert result.returncode == 0, "docs/cli.md is stale: run `make docs`\n" + result.stdout + result.stderr


def test_a_stale_reference_is_caught(tmp_path):
    stale = tmp_path / "cli.md"
    shutil.copy(DOC, stale)
    text = stale.read_text(encoding="utf-8")
    marker = "Show the system prompt Kit builds for this workspace"
    assert marker in text
    stale.write_text(text.replace(marker, "Show an old description", 1), encoding="utf-8")
    result = _check(stale)
    assert result.returncode == 5, result.stdout + result.stderr  # cog's exit code for a changed file
    assert "Check failed" in result.stdout + result.stderr


def test_every_command_has_a_section():
    from kit.cli.reference import _paths, cli

    text = DOC.read_text(encoding="utf-8")
    for path in _paths(cli):
        assert f"`{' '.join(('kit', *path))}`" in text
