"""Typed library errors. The CLI turns each into one line on stderr and an exit code."""

from __future__ import annotations

from kit.problems import located


class KitError(Exception):
    """Base class: a message, optionally anchored at a file and line."""

    exit_code = 1

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    def __str__(self) -> str:
        return located(self.path, self.line, self.message)


class WorkspaceError(KitError):
    """The workspace is missing, unreadable or not a workspace."""


class ConfigError(KitError):
    """kit.yaml (or another config layer) is invalid."""


class DocumentError(KitError):
    """A workspace document could not be loaded."""


class PathEscapeError(KitError):
    """A path would leave its root (via .., an absolute path or a symlink)."""


class BusyError(KitError):
    """A lock is held by another process."""

    exit_code = 3


class ConflictError(BusyError):
    """A file changed under a write (another program edited it) more often than Kit retried."""


class NotFoundError(KitError):
    """A named thing (skill, hook, session, candidate) does not exist."""


class ListenError(KitError):
    """A server cannot listen on the address it was given (in use, not permitted)."""


class StateError(KitError):
    """`.kit/state.db` cannot be used: not a SQLite database, damaged, or not openable."""
