"""Helpers for the watcher tests: a recording listener and a sentinel write to flush the pipeline."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

WAIT = 20.0  # generous: the machine is shared; waits end as soon as the outcome is there


class Recorder:
    """A ws.subscribe listener that remembers every ReloadResult it saw."""

    def __init__(self) -> None:
        self.results: list = []
        self._lock = threading.Lock()

    def __call__(self, result, snapshot) -> None:
        with self._lock:
            self.results.append(result)

    def changed(self) -> Counter:
        with self._lock:
            counts: Counter = Counter()
            for result in self.results:
                counts.update(result.changed)
            return counts


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def flush_with_sentinel(watcher, root: Path, rel: str = "memory/zz-sentinel.md", text: str = "sentinel") -> None:
    """Write a file after the changes under test and wait until it was reloaded.

    Events reach the watcher in order, so once the sentinel is through, every event caused by the
    earlier writes has been filed and processed: negative assertions ("never reloaded") are then
    exact, not a guess about timing.
    """
    before = watcher.reloaded_paths()[rel]
    write(root, rel, text)
    assert watcher.wait_until(lambda w: w.reloaded_paths()[rel] > before, WAIT), f"{rel} never reloaded"
    assert watcher.wait_idle(WAIT)
