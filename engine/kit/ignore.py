"""What Kit never watches, scans, indexes or copies: the one ignore list.

The watcher, the workspace scan, the memory index, the skill scanner, `kit init` and the wheel
build (setup.py loads this file on its own) all use it. A leaf module with no imports from Kit.
"""

from __future__ import annotations

import fnmatch

# Folders: Kit's machine state, VCS internals and tool caches.
IGNORED_DIRS = frozenset({".kit", ".git", "__pycache__", "node_modules", ".venv"})
# Files: editor temp and backup names (vim's 4913 probe, emacs lock files), caches, Finder litter,
# and fsutil.atomic_write's own `.<name>.<random>.tmp` (matched by *.tmp).
IGNORED_NAMES = ("*.tmp", "*~", ".#*", "*.swp", "*.swx", "*.swo", "4913", "*.pyc", ".DS_Store")


def ignored_name(name: str) -> bool:
    """True for a file name Kit never reads (temp, backup, cache)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in IGNORED_NAMES)


def is_ignored(rel: str) -> bool:
    """True for a workspace-relative POSIX path inside an ignored folder, or with an ignored name
    (and for paths that are not inside the workspace at all)."""
    if rel in ("", ".") or rel.startswith("../") or rel == "..":
        return True
    parts = rel.split("/")
    if any(part in IGNORED_DIRS for part in parts):
        return True
    return ignored_name(parts[-1])
