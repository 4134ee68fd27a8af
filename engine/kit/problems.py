"""One located problem: what is wrong, where (file and line), how bad, and which part of Kit
found it. Config and document loading, the prompt template, skills, the security scan, hooks and
doctor all report through this type, so there is one rendering (`path:line: message`) and one
JSON shape.

A leaf module: it imports nothing of Kit, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# error | warning | info for most areas; the security scan grades critical | high | medium | low
SEVERITIES = ("error", "warning", "info", "critical", "high", "medium", "low")


def located(path: str | None, line: int | None, message: str) -> str:
    """`path:line: message`, `path: message`, or just the message when nothing locates it."""
    if not path:
        return message
    return f"{path}:{line}: {message}" if line else f"{path}: {message}"


@dataclass(frozen=True, kw_only=True)
class Problem:
    """A problem at a place. `details` holds what only one area knows (a skill's name and root,
    a scan rule and the offending line); it is part of the JSON but not of the one-line text.
    Keyword-only: `Problem(area="skills", path=..., line=..., message=...)` reads unambiguously."""

    area: str  # documents, config, prompt, skills, hooks, memory, dreaming, agent, trust …
    message: str
    path: str | None = None
    line: int | None = None
    severity: str = "error"
    # a plain dict (picklable, comparable), copied so the caller's dict cannot change it later
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", dict(self.details))

    def __str__(self) -> str:
        return located(self.path, self.line, self.message)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message,
                "severity": self.severity, "area": self.area, **self.details}

    @classmethod
    def from_error(cls, exc: BaseException, path: str | None = None, **fields: Any) -> Problem:
        """The problem a located error (anything with message/path/line, e.g. KitError) describes."""
        return cls(path=getattr(exc, "path", None) or path, line=getattr(exc, "line", None),
                   message=getattr(exc, "message", None) or str(exc), **fields)


def of_severity(problems: Iterable[Problem], severity: str) -> tuple[Problem, ...]:
    """The problems of one severity, in their order."""
    return tuple(p for p in problems if p.severity == severity)
