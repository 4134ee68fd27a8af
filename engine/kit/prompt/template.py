"""The system prompt template: built-in `kit/templates/system.md.j2`, or the workspace's
`templates/system.md.j2`. Jinja2 with StrictUndefined: a misspelt variable is an error, not a blank.

A broken override (syntax or render error) is reported with file and line, and the last template
that compiled and rendered for this workspace stays in force (the built-in one if there was none).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kit.paths import templates_dir
from kit.problems import Problem

OVERRIDE = "templates/system.md.j2"
BUILTIN = "system.md.j2"

_lock = threading.Lock()
_compiled: dict[str, Any] = {}  # source text → compiled Template
_last_good: dict[str, str] = {}  # workspace root → last override source that rendered


class TemplateFailure(Exception):
    def __init__(self, issue: Problem):
        super().__init__(str(issue))
        self.issue = issue


def _environment():
    import jinja2

    from kit import jinja_bounds

    # sandboxed and bounded: a workspace template must render in bounded time and size
    return jinja_bounds.environment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _compile(source: str, name: str):
    import jinja2

    with _lock:
        hit = _compiled.get(source)
    if hit is not None:
        return hit
    try:
        template = _environment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateFailure(_problem(name, exc.lineno, f"template syntax error: {exc.message}")) from None
    with _lock:
        if len(_compiled) > 64:
            _compiled.clear()
        _compiled[source] = template
    return template


def _problem(name: str, line: int | None, message: str) -> Problem:
    return Problem(area="prompt", path=name, line=line, message=message)


def _error_line(exc: BaseException) -> int | None:
    """The template line of a render error (Jinja rewrites tracebacks to template frames)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render_source(source: str, name: str, context: Mapping[str, Any]) -> str:
    """Compile (cached) and render; raise TemplateFailure with file and line."""
    from kit import jinja_bounds

    template = _compile(source, name)
    try:
        return jinja_bounds.render(template, context)
    except Exception as exc:  # any render error of a user template is reported, never fatal
        message = getattr(exc, "message", None) or str(exc)
        raise TemplateFailure(_problem(name, _error_line(exc), f"template error: {message}")) from None


def builtin_source() -> str:
    return (templates_dir() / BUILTIN).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Rendered:
    text: str
    template: str  # "builtin" | OVERRIDE | OVERRIDE + " (last good)"
    issue: Problem | None


def render_prompt(workspace_key: str, override: str | None, context: Mapping[str, Any]) -> Rendered:
    """Render with the workspace override when it works, else its last good version, else built-in."""
    issue: Problem | None = None
    if override is not None:
        try:
            text = render_source(override, OVERRIDE, context)
        except TemplateFailure as failure:
            issue = failure.issue
        else:
            with _lock:
                _last_good[workspace_key] = override
            return Rendered(text, OVERRIDE, None)
        with _lock:
            previous = _last_good.get(workspace_key)
        if previous is not None and previous != override:
            try:
                return Rendered(render_source(previous, OVERRIDE, context), OVERRIDE + " (last good)", issue)
            except TemplateFailure:
                pass
    return Rendered(render_source(builtin_source(), BUILTIN, context), "builtin", issue)
