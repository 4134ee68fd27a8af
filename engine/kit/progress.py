"""Progress and status events: how long library calls say what they are doing without printing.

A call that takes a while (`Memory.sync`, `run_dream`) accepts `progress=`, a callable that gets
each event as it happens; the CLI renders them (a rich bar or spinner on a terminal, nothing with
--json or a pipe), a fleet worker can log them, a test can collect them in a list:

    events = []
    ws.memory.sync(progress=events.append)
    [e for e in events if isinstance(e, Step)]   # Step(task="embedding", done=32, total=120) …

A leaf module: it imports nothing of Kit, so every layer may report through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """How far a counted task has come: `done` of `total` (None while the total is unknown)."""

    task: str  # what is being counted: "embedding"
    done: int
    total: int | None = None


@dataclass(frozen=True)
class Status:
    """What is happening now, in a few words: "dreaming: REM", "waiting for the dream lock …"."""

    message: str
    task: str = ""  # the call it belongs to: "dream"


Event = Step | Status
ProgressCallback = Callable[[Event], None]


def report(callback: ProgressCallback | None, event: Event) -> None:
    """Send `event` when someone listens; a failing listener must not fail the work it watches."""
    if callback is None:
        return
    try:
        callback(event)
    except Exception:  # noqa: BLE001 - progress is a courtesy, never a reason to stop
        import logging

        logging.getLogger("kit.progress").exception("progress callback failed on %r", event)
