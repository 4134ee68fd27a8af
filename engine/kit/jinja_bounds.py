"""Bounded Jinja2 for templates a workspace supplies (templates/system.md.j2, dream-diary.md.j2).

A template is a file anyone with the workspace can edit, so rendering it must end, and end small:
`{% for i in range(10**9) %}`, `{{ 'x' * 10**10 }}`, `{{ 9**9**9 }}` or a macro calling itself
must be one error with the template's line, never a hang or an exhausted machine. The sandbox
(jinja2.sandbox) also keeps `''.__class__.__mro__` and friends out of reach.

    env = environment(undefined=jinja2.StrictUndefined, ...)   # a SandboxedEnvironment with limits
    text = render(env.from_string(source), context)            # RenderLimit when over a bound
"""

from __future__ import annotations

import re
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


# Padding builds its whole string before the output cap can see it: `'x'.zfill(4*10**8)` or
# `'%100000000s' % x` took 400 MB, `('\t' * 10).expandtabs(10**8)` a gigabyte (replace, join and
# translate as much). Each size is worked out first, against the longest string `*` may build.
_BUILDERS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs", "replace", "translate", "join"})
_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_DIGITS = re.compile(r"\d+")


def _too_wide(number: str) -> bool:
    return len(number) > len(str(MAX_REPEAT)) or int(number) > MAX_REPEAT


def _big_int(values: Any, depth: int = 3) -> bool:
    """A number past MAX_REPEAT anywhere a `*` or nested `{}` width could take it from: an int, a
    string of digits (`'{:{}}'.format(x, '50000000')`), inside lists, tuples and mappings."""
    if isinstance(values, bool):
        return False
    if isinstance(values, int):
        return values > MAX_REPEAT
    if isinstance(values, str):
        digits = values.strip()
        return digits.isdigit() and digits.isascii() and _too_wide(digits)
    if depth and isinstance(values, Mapping):
        return any(_big_int(v, depth - 1) for v in values.values())
    if depth and isinstance(values, (tuple, list)):
        return any(_big_int(v, depth - 1) for v in values)
    return False


def _check_percent(fmt: str, args: Any) -> None:
    """`fmt % args` pads no string past MAX_REPEAT (a `*` width takes its number from `args`)."""
    for width, precision in _PERCENT.findall(fmt.replace("%%", "")):  # %% is a literal %
        for number in (width, precision):
            if (number == "*" and _big_int(args)) or (number not in ("", "*") and _too_wide(number)):
                raise RenderLimit(f"a %-format width over the {MAX_REPEAT:,}-character limit")


def _check_format(fmt: str, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """`fmt.format(...)`: no field spec pads past MAX_REPEAT (a nested `{}` width takes an argument)."""
    import string

    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # str.format raises its own error
    for _, _, spec, _ in fields:
        if not spec:
            continue
        if any(_too_wide(n) for n in _DIGITS.findall(spec)) or (
                "{" in spec and (_big_int(args) or _big_int(tuple(kwargs.values())))):
            raise RenderLimit(f"a format width over the {MAX_REPEAT:,}-character limit")


def _built_size(text: str, name: str, args: tuple, kwargs: Mapping[str, Any]) -> tuple[int, list | None]:
    """How long `text.<name>(*args)` would be, worked out before it is built (for `join`, the
    items, listed once so a generator is not used up)."""
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        old, new = args[0], args[1]
        hits = text.count(old) if old else len(text) + 1
        return len(text) + hits * max(0, len(new) - len(old)), None
    if name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        return len(text) * max(1, longest), None
    if name == "join" and args:
        items = list(args[0])
        return sum(len(str(i)) for i in items) + len(text) * max(0, len(items) - 1), items
    width = args[0] if args else kwargs.get("tabsize" if name == "expandtabs" else "width", 8)
    if not isinstance(width, int):
        return 0, None
    return (text.count("\t") * width if name == "expandtabs" else width), None


def _bounded_builder(text: str, name: str, method: Any) -> Any:
    def builder(*args: Any, **kwargs: Any) -> Any:
        size, items = _built_size(text, name, args, kwargs)
        if size > MAX_REPEAT:
            shown = f"{args[0]:,}" if args and isinstance(args[0], int) and not isinstance(args[0], bool) else "…"
            raise RenderLimit(f"str.{name}({shown}) would build over the {MAX_REPEAT:,}-character limit")
        if items is not None:
            return method(items, *args[1:], **kwargs)
        return method(*args, **kwargs)

    return builder


def environment(**options: Any):
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    class Bounded(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%"})

        def getattr(self, obj: Any, attribute: str) -> Any:
            value = super().getattr(obj, attribute)
            if isinstance(obj, str) and attribute in _BUILDERS and callable(value):
                return _bounded_builder(obj, attribute, value)
            return value

        def getitem(self, obj: Any, argument: Any) -> Any:
            value = super().getitem(obj, argument)
            if isinstance(obj, str) and argument in _BUILDERS and callable(value):
                return _bounded_builder(obj, argument, value)
            return value

        def wrap_str_format(self, value: Any) -> Any:
            wrapped = super().wrap_str_format(value)
            if wrapped is None:
                return None
            fmt, mapping = value.__self__, value.__name__ == "format_map"

            def checked(*args: Any, **kwargs: Any) -> Any:
                if mapping:
                    _check_format(fmt, (), args[0] if args and isinstance(args[0], Mapping) else {})
                else:
                    _check_format(fmt, args, kwargs)
                return wrapped(*args, **kwargs)

            return checked

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "%":
                if isinstance(left, str):
                    _check_percent(left, right)
            elif operator == "**":
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
    filters = env.filters

    def center(value: Any, width: int = 80) -> str:
        if isinstance(width, int) and width > MAX_REPEAT:
            raise RenderLimit(f"center({width:,}) would build over the {MAX_REPEAT:,}-character limit")
        return filters_center(value, width)

    def indent(value: Any, width: Any = 4, *args: Any, **kwargs: Any) -> str:
        lines = str(value).count("\n") + 1
        each = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        if each * lines > MAX_REPEAT:
            raise RenderLimit(f"indent({f'{width:,}' if isinstance(width, int) else '…'}) would build over the "
                              f"{MAX_REPEAT:,}-character limit")
        return filters_indent(value, width, *args, **kwargs)

    @jinja2.pass_eval_context
    def join(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> str:
        items = list(value)
        if sum(len(str(i)) for i in items) + len(str(d)) * max(0, len(items) - 1) > MAX_REPEAT:
            raise RenderLimit(f"join would build over the {MAX_REPEAT:,}-character limit")
        return filters_join(eval_ctx, items, d, attribute)

    def format_filter(value: Any, *args: Any, **kwargs: Any) -> str:
        _check_percent(str(value), kwargs or args)
        return filters_format(value, *args, **kwargs)

    filters_center, filters_indent, filters_format = filters["center"], filters["indent"], filters["format"]
    filters_join = filters["join"]
    filters.update(center=center, indent=indent, format=format_filter, join=join)
    lipsum = env.globals.get("lipsum")
    if lipsum is not None:
        def bounded_lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002
            if n * max > MAX_REPEAT // 10:  # words, of ~10 characters
                raise RenderLimit(f"lipsum({n:,}) is over the {MAX_REPEAT:,}-character limit")
            return lipsum(n, html, min, max)

        env.globals["lipsum"] = bounded_lipsum
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
