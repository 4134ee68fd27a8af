"""Run kinds (§4): what a run is for, and what that changes — defined once.

The prompt builder takes each kind's files, the agent loop its recall and skip rules, and the
CLI's `--kind` choices its names. A kind's note to the model is the template
`templates/kind-note.md.j2`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kit.errors import KitError

# The workspace files a prompt is made of, in prompt order.
BOOTSTRAP_FILES = (
    "AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md", "MEMORY.md",
)
PERSONA = frozenset({"AGENTS.md", "TOOLS.md", "SOUL.md", "IDENTITY.md", "USER.md"})
PRIVATE = frozenset({"MEMORY.md", "USER.md"})  # about the user: never shown to a shared audience


@dataclass(frozen=True)
class RunKind:
    name: str
    files: frozenset[str]  # which of BOOTSTRAP_FILES its prompt carries
    summary: str  # for --help
    recall: bool = True  # active recall of the private notes before each user turn
    skip_without_tasks: bool = False  # skipped (no model call) while HEARTBEAT.md has no tasks


RUN_KINDS: Mapping[str, RunKind] = MappingProxyType({k.name: k for k in (
    RunKind("default", frozenset(BOOTSTRAP_FILES), "a conversation with the user"),
    RunKind("subagent", PERSONA, "a delegated task; long-term memory only through memory_search"),
    RunKind("cron", PERSONA, "a scheduled run with no one watching"),
    RunKind("heartbeat", frozenset({"HEARTBEAT.md"}), "the HEARTBEAT.md checklist; skipped while it has no tasks",
            skip_without_tasks=True),
    RunKind("shared", frozenset(BOOTSTRAP_FILES) - PRIVATE,
            "a conversation several people see: no MEMORY.md, USER.md or recall of private notes", recall=False),
)})
KINDS = tuple(RUN_KINDS)


def run_kind(name: str) -> RunKind:
    """The kind called `name`; a KitError naming the valid ones otherwise."""
    found = RUN_KINDS.get(name)
    if found is None:
        raise KitError(f"unknown run kind '{name}'; expected one of {', '.join(KINDS)}")
    return found
