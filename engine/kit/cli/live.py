"""Drawing a turn while it runs: the reply as Markdown as it arrives, a spinner with the model's
name while waiting for the first token and while a tool runs (kit run and the REPL, on a terminal).

    view = LiveTurn(console, tool_line=lambda event: f"→ {event.name}")
    agent = ws.agent(..., on_event=view)
    with view:
        result = agent.turn(text)

Events come from kit.agent.events and are matched on `event.type`, so the CLI imports nothing of
the agent. While text streams, the live area shows the tail of the reply that fits the screen;
when the model's step ends, the live area goes and the whole reply is printed once, so the
scrollback holds it exactly once, however long it is.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

REFRESH_PER_SECOND = 12

# Anything Markdown would draw differently from plain text. Until the reply has one, it is drawn
# as plain text, so rich.markdown (markdown-it, ~0.2 s of imports) is not loaded before the first
# words are on the screen; the step's text is printed as Markdown when it is complete.
# [^\S\n]: a line's own indent (`^\s*` under MULTILINE is quadratic in a reply's blank lines)
MARKDOWN_SYNTAX = re.compile(r"[`*_#\[\]|>~<&\\]|^[^\S\n]*(?:[-+]|\d+[.)])\s|^[^\S\n]*[-=]{3,}\s*$", re.MULTILINE)


def markdown(text: str) -> Any:
    from rich.markdown import Markdown  # when something is printed as Markdown, not before

    return Markdown(text)


def drawn(text: str) -> Any:
    """What the live area shows for `text`: Markdown once it has Markdown syntax, else plain text."""
    return markdown(text) if MARKDOWN_SYNTAX.search(text) else Text(text)


class _Tail:
    """A renderable showing only the last lines of another that fit the terminal (Live cannot
    redraw what scrolled off the screen)."""

    def __init__(self, body: Any, spinner: Any, reserve: int = 2):
        self.body, self.spinner, self.reserve = body, spinner, reserve

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        height = max(3, console.size.height - self.reserve)
        if self.body is not None:
            lines = console.render_lines(self.body, options, pad=False)
            for line in lines[-(height - (1 if self.spinner is not None else 0)):]:
                yield from line
                yield Segment.line()
        if self.spinner is not None:
            yield self.spinner


class LiveTurn:
    """An `on_event` callback that draws a turn on a terminal console."""

    def __init__(self, console: Console, *, tool_line: Callable[[Any], str] | None = None,
                 waiting_label: Callable[[str], str] | None = None):
        self.console = console
        self.tool_line = tool_line or (lambda event: f"→ {event.name}")
        self.waiting_label = waiting_label or (lambda target: f"{target} …")
        self.live: Live | None = None
        self.text = ""  # the current step's text
        self.step = 0
        self.waiting: str | None = None  # the spinner's label, None: no spinner
        self.printed: list[str] = []  # every step's text, as printed
        self.running: list[str] = []  # tools running now (one reply's calls run together)
        self.later: list[tuple[str, str]] = []  # status lines held until the step's text is printed
        self._spinner = Spinner("dots", style="cyan")

    # ------------------------------------------------------------------ events

    def __call__(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "model_call":
            if event.step != self.step:
                self._commit()
                self.step = event.step
            self._wait(self.waiting_label(event.target))
        elif kind == "text_delta":
            if event.step != self.step:
                self._commit()
                self.step = event.step
            self.text += event.text
            self.waiting = None
            self._draw()
        elif kind == "tool_call":
            self._commit()
            self.running.append(event.name)
            self._wait(f"running {', '.join(self.running)} …")
        elif kind == "tool_result":
            self._stop()
            if event.name in self.running:
                self.running.remove(event.name)
            self.console.print(self.tool_line(event), markup=False, highlight=False, style="dim")
            if self.running:  # calls of the same reply still running alongside
                self._wait(f"running {', '.join(self.running)} …")
        elif kind == "final":
            self._commit()

    def note(self, line: str, style: str = "dim") -> None:
        """A status line: above the live area, or, once the step's text has begun, on its own line
        right after that text (a line that lands in the middle of a reply would split it)."""
        if self.text:
            self.later.append((line, style))
        else:
            self.console.print(line, markup=False, highlight=False, style=style)

    @property
    def streamed(self) -> str:
        """The text of the turn's last step that was printed (the reply, when it streamed)."""
        return self.printed[-1] if self.printed else ""

    # ------------------------------------------------------------------ drawing

    def _wait(self, label: str) -> None:
        self.waiting = label
        self._spinner.update(text=Text(label, style="dim"))
        self._draw()

    def _renderable(self) -> Any:
        body = drawn(self.text) if self.text else None
        return _Tail(body, self._spinner if self.waiting else None)

    def _draw(self) -> None:
        if self.live is None:
            self.live = Live(self._renderable(), console=self.console, refresh_per_second=REFRESH_PER_SECOND,
                             transient=True, redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        else:
            self.live.update(self._renderable())

    def _stop(self) -> None:
        self.waiting = None
        if self.live is not None:
            live, self.live = self.live, None
            live.stop()

    def _commit(self) -> None:
        """The step is over: the live area goes, its whole text is printed once."""
        self._stop()
        if self.text:
            self.console.print(markdown(self.text))
            self.printed.append(self.text)
        self.text = ""
        for line, style in self.later:
            self.console.print(line, markup=False, highlight=False, style=style)
        self.later.clear()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No live area while the user is asked something (an exec approval)."""
        self._stop()
        yield

    def close(self) -> None:
        self._commit()

    def __enter__(self) -> LiveTurn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
