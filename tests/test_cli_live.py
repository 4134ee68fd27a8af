"""kit.cli.live.LiveTurn on a terminal console: a status line never lands inside a reply that is
being drawn — before the text began it goes above the live area, after it on its own line once
the step's text is printed."""

from __future__ import annotations

import io

from rich.console import Console

from kit.agent.events import ModelWaiting, TextDelta
from kit.cli.live import LiveTurn

WARNING = "warning: box/smollm2: the server's chat template dropped the tool list"


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100, height=30, color_system=None), out


def _turn(view: LiveTurn, *, note_after: int | None) -> None:
    view(ModelWaiting("box/smollm2", 1, 1))
    for number, word in enumerate(("Sunny ", "weather ", "all ", "week.")):
        if number == note_after:
            view.note(WARNING)
        view(TextDelta(word, 1))
    if note_after is None:
        view.note(WARNING)  # after the last word (a server judged by its usage), before the final
    view.close()


def test_a_status_line_after_the_text_began_follows_the_reply_on_its_own_line():
    console, out = _terminal()
    _turn(LiveTurn(console), note_after=None)
    screen = out.getvalue()
    assert screen.count(WARNING) == 1
    assert screen.rindex("Sunny weather all week.") < screen.index(WARNING)
    assert screen.endswith(WARNING + "\n")


def test_a_status_line_in_mid_reply_waits_for_the_reply():
    console, out = _terminal()
    view = LiveTurn(console)
    _turn(view, note_after=2)
    screen = out.getvalue()
    assert screen.rindex("Sunny weather all week.") < screen.index(WARNING)
    assert view.streamed == "Sunny weather all week."


def test_a_status_line_before_the_text_goes_first():
    console, out = _terminal()
    _turn(LiveTurn(console), note_after=0)
    screen = out.getvalue()
    assert screen.index(WARNING) < screen.index("Sunny")
