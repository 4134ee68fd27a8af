"""Turn a PyYAML error into (line, problem) a person can act on."""

from __future__ import annotations


def locate(exc: Exception, *, offset: int = 0) -> tuple[int | None, str]:
    """1-based line of the problem (+offset) and a one-line description.

    An unclosed bracket or quote is only noticed far below, often at the end of the file;
    the context mark (where the bracket or quote opened) is the line to fix then.
    """
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None) or ""
    mark = getattr(exc, "problem_mark", None)
    opened = getattr(exc, "context_mark", None)
    if opened is not None and (mark is None or "stream end" in problem or "flow" in context or "quoted" in context):
        mark = opened
    line = mark.line + 1 + offset if mark is not None else None
    return line, problem
