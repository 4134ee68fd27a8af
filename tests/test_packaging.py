"""The wheel carries workspace/, skills/ and hooks/: a non-editable install can `kit init`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_install_in_fresh_venv_runs_kit_init(tmp_path: Path):
    src = tmp_path / "src"
    shutil.copytree(
        REPO, src,
        ignore=shutil.ignore_patterns(".venv", ".git", ".kit", "__pycache__", "*.egg-info", "build",
                                      "dist", "demo-workspace", ".pytest_cache", ".ruff_cache"),
    )
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", wheels, src],
        check=True, capture_output=True, timeout=300,
    )
    [wheel] = list(wheels.glob("kit_agent-*.whl"))

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    purelib = Path(
        subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       capture_output=True, text=True, check=True).stdout.strip()
    )
    # The wheel goes into the fresh venv; its dependencies are borrowed from the test venv
    # through a .pth line (no network, and the editable finder of the test venv stays off).
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", purelib, wheel],
        check=True, capture_output=True, timeout=300,
    )
    (purelib / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # the fresh venv must import the wheel: a PYTHONPATH pointing at a source tree (how the suite is
    # run from a worktree, PYTHONPATH=$PWD/engine) would put that tree's kit first
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    where = subprocess.run([venv / "bin" / "python", "-c", "import kit; print(kit.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path, env=clean).stdout.strip()
    assert where.startswith(str(purelib)), where
    for name in ("workspace/SOUL.md", "workspace/kit.yaml", "workspace/.gitignore"):
        assert (purelib / "kit" / "data" / name).is_file(), name
    assert (purelib / "kit" / "data" / "skills").is_dir()
    assert (purelib / "kit" / "data" / "hooks").is_dir()

    target = tmp_path / "agent"
    proc = subprocess.run([venv / "bin" / "python", "-m", "kit", "init", target],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, env=clean)
    assert proc.returncode == 0, proc.stderr
    assert (target / "SOUL.md").read_text() == (REPO / "workspace" / "SOUL.md").read_text()
    doctor = subprocess.run([venv / "bin" / "python", "-m", "kit", "doctor", "-w", target],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120, env=clean)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
