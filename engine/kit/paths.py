"""Where things live: bundled resources and the user's XDG folders."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent

CONFIG_FILE = "kit.yaml"  # the workspace's config file; its presence makes a folder a workspace


def bundled(name: str) -> Path:
    """The bundled `workspace`, `skills` or `hooks` folder.

    An installed wheel carries them in kit/data/; a source checkout has them at the repo root.
    """
    shipped = _PACKAGE / "data" / name
    if shipped.is_dir():
        return shipped
    return _PACKAGE.parent.parent / name


def xdg_config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def xdg_data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def xdg_cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def user_cache_dir() -> Path:
    """Derived data of the user's own files (skill scans): safe to delete."""
    return xdg_cache_home() / "kit"


def user_config_file() -> Path:
    return xdg_config_home() / "kit" / CONFIG_FILE


def fleet_registry_file() -> Path:
    """The fleet's registry of workspace paths and globs (`kit fleet add/remove/list`)."""
    return xdg_config_home() / "kit" / "fleet.yaml"


def fleet_data_dir() -> Path:
    """Where `kit fleet beat` keeps its schedule state."""
    return xdg_data_home() / "kit" / "fleet"


def user_skills_dir() -> Path:
    return xdg_data_home() / "kit" / "skills"


def user_hooks_dir() -> Path:
    return xdg_config_home() / "kit" / "hooks"


def trust_file() -> Path:
    return xdg_data_home() / "kit" / "trust.json"


def templates_dir() -> Path:
    return _PACKAGE / "templates"


def foreign_workspace(root: Path) -> str | None:
    """"openclaw" or "hermes" when `root` (without kit.yaml) holds that agent's files, else None.

    Refusals name the fix (`kit import openclaw .`) instead of only saying "not a workspace".
    """
    try:
        if (root / CONFIG_FILE).exists():
            return None
        if (root / "memories").is_dir() and (root / "config.yaml").is_file():
            return "hermes"
        if (root / "SOUL.md").is_file() or (root / "AGENTS.md").is_file():
            return "openclaw"
    except OSError:
        return None
    return None
