"""The layer contracts in pyproject.toml hold (import-linter), and they do catch a breach: a CLI
module that imports an internal module fails `lint-imports`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is in the dev extra")


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root / "engine")}  # the tree under test, not the installed one
    return subprocess.run([str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=240)


def test_the_layer_contracts_hold():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 9 kept, 0 broken." in result.stdout


def test_a_cli_module_importing_the_memory_index_breaks_the_floor(tmp_path):
    copy = tmp_path / "kit"
    shutil.copytree(ROOT / "engine" / "kit", copy / "engine" / "kit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    command = copy / "engine" / "kit" / "cli" / "memory_cmd.py"
    command.write_text(command.read_text(encoding="utf-8") + "\nimport kit.memory.index  # noqa\n",
                       encoding="utf-8")
    result = _lint(copy)
    assert result.returncode == 1, result.stdout
    assert "The CLI is a floor: it imports only the public API (kit) and kit.cli BROKEN" in result.stdout
    assert "kit.cli.memory_cmd -> kit.memory.index" in result.stdout
    assert "Contracts: 8 kept, 1 broken." in result.stdout


def test_celery_outside_the_fleet_breaks_a_contract(tmp_path):
    """Only kit.fleet may import Celery or Redis: every other command must start without them."""
    copy = tmp_path / "kit"
    shutil.copytree(ROOT / "engine" / "kit", copy / "engine" / "kit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    module = copy / "engine" / "kit" / "dreaming" / "cron.py"
    module.write_text(module.read_text(encoding="utf-8") + "\nimport celery  # noqa\n", encoding="utf-8")
    result = _lint(copy)
    assert result.returncode == 1, result.stdout
    assert "Celery and Redis stay in the fleet (every other command starts without them) BROKEN" in result.stdout
    assert "kit.dreaming.cron -> celery" in result.stdout
