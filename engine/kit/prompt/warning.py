"""When to show the truncation warning (§4): off | once | always. Its text is the template
`truncation-warning.md.j2`.

"once" means once per distinct set of cuts per session. The agent loop keeps one `WarningState`
per session and passes it to every `build_prompt` call; without one, every build is a fresh
session (so `kit prompt` always shows the block in "once" mode).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from kit.prompt.budget import FileBudget

REASON_TEXT = {"max_per_file": "per-file limit", "max_total": "total limit"}


def cut_signature(cuts: Sequence[FileBudget]) -> frozenset[tuple[str, str]]:
    """What makes a set of cuts "distinct": which files were cut and why (not by how many chars,
    so a MEMORY.md that grows by a line does not re-trigger the warning every turn)."""
    return frozenset((c.name, c.reason or "") for c in cuts)


@dataclass
class WarningState:
    """Session-scoped memory of which cut sets the model has already been warned about."""

    seen: set[frozenset[tuple[str, str]]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def should_warn(self, signature: frozenset[tuple[str, str]]) -> bool:
        """True the first time this signature is seen in the session (and records it)."""
        with self._lock:
            if signature in self.seen:
                return False
            self.seen.add(signature)
            return True


def describe_cut(cut: FileBudget, *, with_name: bool = True) -> str:
    """What was cut, with the allowance and what was really injected, so the numbers match the
    budget table: "SOUL.md: cut to an allowance of 20,000 of 25,000 characters (per-file limit):
    the first 14,000 and last 4,000 are kept, 18,133 injected with the marker".
    A file whose allowance cannot hold the marker line is said to be left out: "IDENTITY.md: left
    out: its allowance of 62 of 65 characters (total limit) cannot hold the truncation marker".
    `with_name=False` leaves out the leading name (for findings that carry the path already)."""
    why = REASON_TEXT.get(cut.reason or "", cut.reason)
    if cut.left_out:
        text = (f"left out: its allowance of {cut.allowance:,} of {cut.raw_chars:,} characters ({why}) "
                "cannot hold the truncation marker")
    else:
        text = (
            f"cut to an allowance of {cut.allowance:,} of {cut.raw_chars:,} characters ({why}): the first "
            f"{cut.kept_head:,} and last {cut.kept_tail:,} are kept, {cut.injected_chars:,} injected with the marker"
        )
    return f"{cut.name}: {text}" if with_name else text


def should_warn(cuts: Sequence[FileBudget], mode: str, state: WarningState | None) -> bool:
    """Whether this build shows the model the truncation warning (`truncation-warning.md.j2`):
    not with mode off or nothing cut, and in mode once not for cuts this session was warned of."""
    if not cuts or mode == "off":
        return False
    return mode != "once" or state is None or state.should_warn(cut_signature(cuts))
