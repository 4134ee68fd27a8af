"""Shared by the benchmarks: run against a throwaway HOME, never the user's own config, skills,
hooks or trust store (a bench must not read or change them). Not a benchmark itself (run_all
skips names starting with "_")."""

from __future__ import annotations

import os
from pathlib import Path


def isolate_home(tmp: str | Path) -> Path:
    """Point HOME and the XDG folders into `tmp`, work offline; returns the new HOME."""
    home = Path(tmp) / "home"
    os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
                      XDG_DATA_HOME=str(home / ".local/share"), HF_HUB_OFFLINE="1")
    return home
