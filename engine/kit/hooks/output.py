"""What a Python hook handler prints goes to its log, never to Kit's own stdout or stderr.

Handlers run on worker threads inside Kit's process, and `print()` writes to `sys.stdout`, which
is the process's: a handler that prints would corrupt `kit run --json`. While any handler runs,
`sys.stdout` and `sys.stderr` are routers: text written from a handler's thread is collected for
that run (and written to `.kit/logs/hooks.log`), text from every other thread goes where it
always went. The routers stay in place until the last handler thread has finished, abandoned
ones (past their timeout) included, and are then taken out again, so nothing else notices them.

Process-wide on purpose, like the streams it guards. Output that bypasses `sys.stdout` (a child
process the handler starts without capturing its output, a C library writing to file
descriptor 1) is not caught here: capture it in the handler, or use a command hook.
"""

from __future__ import annotations

import io
import sys
import threading
from typing import Any, TextIO


class _Router(io.TextIOBase):
    """Stands in for sys.stdout / sys.stderr: hook threads write to their sink, others pass."""

    def __init__(self, capture: OutputCapture, real: TextIO, stream: str):
        self._capture = capture
        self._real = real
        self._stream = stream

    def write(self, text: str) -> int:
        sink = self._capture.sink()
        if sink is None:
            return self._real.write(text)
        sink.append((self._stream, str(text)))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._capture.sink() is None:
            self._real.flush()

    def isatty(self) -> bool:
        return self._real.isatty()

    def fileno(self) -> int:
        return self._real.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._real, "encoding", "utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class OutputCapture:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sinks: dict[int, list[tuple[str, str]]] = {}
        self._installed: tuple[_Router, _Router, TextIO, TextIO] | None = None

    def sink(self) -> list[tuple[str, str]] | None:
        return self._sinks.get(threading.get_ident())

    def begin(self) -> list[tuple[str, str]]:
        """Called on the handler's thread before it runs: its output goes to the list returned."""
        sink: list[tuple[str, str]] = []
        with self._lock:
            self._sinks[threading.get_ident()] = sink
            if self._installed is None:
                out, err = _Router(self, sys.stdout, "stdout"), _Router(self, sys.stderr, "stderr")
                self._installed = (out, err, sys.stdout, sys.stderr)
                sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
        return sink

    def end(self) -> None:
        """Called on the handler's thread when it has returned (or raised)."""
        with self._lock:
            self._sinks.pop(threading.get_ident(), None)
            if self._sinks or self._installed is None:
                return
            out, err, real_out, real_err = self._installed
            self._installed = None
            # put the streams back only if nobody replaced them meanwhile (pytest's capture does)
            if sys.stdout is out:
                sys.stdout = real_out
            if sys.stderr is err:
                sys.stderr = real_err


CAPTURE = OutputCapture()


def joined(sink: list[tuple[str, str]]) -> str:
    """The captured text as one string, each stream's runs kept in order ("stderr: " marked)."""
    parts = []
    for stream, text in sink:
        parts.append(text if stream == "stdout" else f"[stderr] {text}")
    return "".join(parts).strip()
