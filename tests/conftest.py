"""Shared fixtures: isolated XDG folders, workspaces in tmp_path, a frozen clock, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def shared_data_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An XDG_DATA_HOME whose `kit/models` every test's fresh HOME links to: the ONNX graph of the
    embedding model is built once per session (by the first test that embeds), not once per test."""
    data = tmp_path_factory.mktemp("shared-data")
    (data / "kit" / "models").mkdir(parents=True)
    return data


@pytest.fixture(scope="session")
def shared_models_dir(shared_data_home: Path) -> Path:
    return shared_data_home / "kit" / "models"


@pytest.fixture(scope="session")
def shared_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An XDG_CACHE_HOME whose `kit/onnx` every test's fresh HOME links to: the mapped copy of the
    ONNX model (kit.memory.onnx_embedder.MappedCopy) is written once per session, not once per test."""
    cache = tmp_path_factory.mktemp("shared-cache")
    (cache / "kit" / "onnx").mkdir(parents=True)
    return cache


@pytest.fixture(scope="session")
def shared_embedders():
    """One `kit.memory.embeddings.Embedders` for the session: each backend's model loads once per
    test process (workspaces get it with `Workspace.open(path, embedders=shared_embedders)`)."""
    from kit.memory.embeddings import Embedders

    return Embedders()


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, shared_models_dir: Path,
                  shared_cache_home: Path):
    """Never read or write the real user's config, skills, hooks, trust store, caches or crontab."""
    home = tmp_path_factory.mktemp("home")
    (home / ".local" / "share" / "kit").mkdir(parents=True)
    (home / ".local" / "share" / "kit" / "models").symlink_to(shared_models_dir, target_is_directory=True)
    (home / ".cache" / "kit").mkdir(parents=True)
    (home / ".cache" / "kit" / "onnx").symlink_to(shared_cache_home / "kit" / "onnx", target_is_directory=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    for name in list(os.environ):
        if name.startswith("KIT_"):
            monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def ws_path(tmp_path: Path) -> Path:
    """A freshly initialised workspace folder (not opened)."""
    from kit.init import init_workspace

    root = tmp_path / "ws"
    init_workspace(root)
    return root


@pytest.fixture
def workspace(ws_path: Path):
    """An opened Workspace over a fresh `kit init`."""
    from kit.workspace import Workspace

    return Workspace.open(ws_path)


@pytest.fixture
def kit_now(monkeypatch: pytest.MonkeyPatch):
    """Freeze the clock: kit_now("2026-05-07T09:00:00+00:00")."""

    def set_now(value: str) -> None:
        monkeypatch.setenv("KIT_NOW", value)

    return set_now


@pytest.fixture
def cli():
    """Invoke the click CLI in-process: cli("prompt", "--json", "-w", path)."""
    from kit.cli.main import cli as kit_cli

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, env: dict | None = None):
        return runner.invoke(kit_cli, [str(a) for a in args], input=input, env=env, catch_exceptions=False)

    return invoke


def run_kit(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120, input: str | None = None):
    """Run `python -m kit` in a real subprocess (used sparingly)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "kit", *map(str, args)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )


@pytest.fixture(scope="session")
def real_embedder(shared_embedders, shared_data_home, shared_cache_home):
    """The installed all-MiniLM-L6-v2 with the default backend (`auto`: ONNX), offline."""
    with pytest.MonkeyPatch.context() as mp:  # session scope: runs before the per-test HOME is set
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("XDG_DATA_HOME", str(shared_data_home))
        mp.setenv("XDG_CACHE_HOME", str(shared_cache_home))
        embedder = shared_embedders.get(None)
        assert embedder is not None, "kit-agent[embeddings] must be installed for the memory tests"
        embedder.encode(["warm up"])
    return embedder
