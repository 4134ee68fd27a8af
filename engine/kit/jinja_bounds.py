"""Bounded Jinja2 for templates a workspace supplies (templates/system.md.j2, dream-diary.md.j2).

A template is a file anyone with the workspace can edit, so rendering it must end, and end small:
`{% for i in range(10**9) %}`, `{{ 'x' * 10**10 }}`, `{{ 9**9**9 }}` or a macro calling itself
must be one error with the template's line, never a hang or an exhausted machine. The sandbox
(jinja2.sandbox) also keeps `''.__class__.__mro__` and friends out of reach.

    env = environment(undefined=jinja2.StrictUndefined, ...)   # a SandboxedEnvironment with limits
    text = render(env.from_string(source), context)            # RenderLimit when over a bound
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping
from typing import Any

MAX_OUTPUT_CHARS = 2 * 1024 * 1024
MAX_RANGE = 10_000
MAX_REPEAT = 1_000_000  # the longest string or list `*` may build
MAX_EXPONENT_BITS = 4_096
RENDER_SECONDS = 5.0


class RenderLimit(Exception):
    """A template went over a bound (size, time, a huge repeat or power)."""


def environment(**options: Any):
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    class Bounded(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**":
                if isinstance(left, int) and isinstance(right, int) and right > 0 and \
                        abs(left) > 1 and right * max(1, abs(left).bit_length()) > MAX_EXPONENT_BITS:
                    raise RenderLimit(f"{left} ** {right} is too large to compute")
            elif operator == "*":
                for seq, count in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(count, int) and \
                            len(seq) * count > MAX_REPEAT:
                        raise RenderLimit(f"repeating {type(seq).__name__} {count:,} times is over the "
                                          f"{MAX_REPEAT:,}-item limit")
            return super().call_binop(context, operator, left, right)

    env = Bounded(**options)

    def bounded_range(*args: int) -> range:
        r = range(*args)
        if len(r) > MAX_RANGE:
            raise RenderLimit(f"range of {len(r):,} items is over the {MAX_RANGE:,}-item limit")
        return r

    env.globals["range"] = bounded_range
    del jinja2
    return env


def _timeout(signum: int, frame: Any) -> None:
    raise RenderLimit(f"rendering took over {RENDER_SECONDS:g} s (a loop that never ends?)")


def render(template: Any, context: Mapping[str, Any]) -> str:
    """Render with an output cap, and a time limit where a signal can deliver one (the main thread
    of a process); elsewhere the range/repeat/power bounds still apply."""
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    previous = None
    if timed:
        previous = signal.signal(signal.SIGALRM, _timeout)
        old_timer = signal.setitimer(signal.ITIMER_REAL, RENDER_SECONDS)
    try:
        parts: list[str] = []
        size = 0
        for piece in template.generate(**context):
            size += len(piece)
            if size > MAX_OUTPUT_CHARS:
                raise RenderLimit(f"the output is over {MAX_OUTPUT_CHARS // (1024 * 1024)} MiB")
            parts.append(piece)
        return "".join(parts)
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if old_timer[0] > 0:  # someone else's timer: give back what was left of it
                signal.setitimer(signal.ITIMER_REAL, *old_timer)
