"""Every text Kit sends to a model is a Jinja2 template: one folder, one environment, overridable.

The built-in templates live in `kit/templates/`; a workspace overrides any of them with a file of
the same name in its own `templates/` folder (read from the snapshot, so an edit applies on the
next render, as hot reload promises). All of them render in the one environment `environment()`
makes: StrictUndefined (a misspelt variable is an error, not a blank), no HTML escaping,
`trim_blocks` and `lstrip_blocks` (a block tag on its own line leaves no blank line), sandboxed
and bounded in time and size (kit.jinja_bounds: an override that would never end is one error).

A broken override (a syntax error, an unknown variable) never breaks a run: the last version of
that override that rendered is used, else the built-in one, and the problem is reported with file
and line (`Rendered.problem`; `kit doctor` checks every override against a sample context).

Compiling a template to Python is most of a cold `kit prompt` (about 8 ms for the system prompt,
four templates a build), so the compiled code is kept in `$XDG_CACHE_HOME/kit/jinja` with
Jinja2's own bytecode cache: checked against the source's checksum and the environment's
compile-time settings, rewritten when either changed, and skipped when the folder cannot be used.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kit.paths import templates_dir, user_cache_dir
from kit.problems import Problem

OVERRIDE_DIR = "templates"
SYSTEM = "system.md.j2"


@dataclass(frozen=True)
class TemplateSpec:
    """A template Kit renders: what it is for, and a context like the one Kit passes (doctor
    renders an override with it, so a misspelt variable is found before a run needs it)."""

    name: str
    purpose: str
    sample: Mapping[str, Any] = field(default_factory=dict)
    # the output is a whole document (the system prompt, a diary entry) and keeps its last
    # newline; the other templates are pieces of a message and lose it
    document: bool = False


_HIT = {"path": "memory/2026-05-06.md", "start_line": 3, "end_line": 4, "score": 0.71,
        "snippet": "the deploy runs on Fridays", "day": "2026-05-06"}
_FILE = {"name": "SOUL.md", "text": "Be brief.", "truncated": False}
_NOW = {"iso": "2026-05-07T09:00+00:00", "date": "2026-05-07", "time": "09:00", "weekday": "Thursday",
        "timezone": "UTC+00:00"}

SPECS: Mapping[str, TemplateSpec] = MappingProxyType({s.name: s for s in (
    TemplateSpec("system.md.j2", "the system prompt", {
        "kind": "default", "kind_note": "", "workspace_name": "ws",
        "tools": [{"name": "read_file", "description": "read a file in the workspace"}],
        "skills_block": "", "files": [_FILE], "memory": {**_FILE, "name": "MEMORY.md"},
        "heartbeat": None, "now": _NOW, "warning": ""}, document=True),
    TemplateSpec("kind-note.md.j2", "the note a non-default run kind adds to the system prompt",
                 {"kind": "subagent"}),
    TemplateSpec("truncation-warning.md.j2", "the system prompt's list of files cut to fit the budget",
                 {"cuts": ["SOUL.md: cut to an allowance of 20,000 of 25,000 characters (per-file limit)"]}),
    TemplateSpec("memory-context.md.j2", "active recall: notes put before the user's message",
                 {"hits": [_HIT]}),
    TemplateSpec("memory-flush.md.j2", "the silent turn that saves notes before compaction",
                 {"percent": 71, "window": 32000, "today": "2026-05-07"}),
    TemplateSpec("compaction-system.md.j2", "the instructions of the summarising call", {}),
    TemplateSpec("compaction-request.md.j2", "the request of the summarising call",
                 {"count": 12, "cut": 0, "focus": "", "transcript": "[user]\nhello"}),
    TemplateSpec("repeat-note.md.j2", "the note after a tool call repeated in a row",
                 {"name": "read_file", "count": 3}),
    TemplateSpec("cut-call-note.md.j2", "the note when max_tokens cut the reply inside its tool calls",
                 {"cap": 1024, "names": "write_file"}),
    TemplateSpec("cut-after-calls-note.md.j2", "the note when max_tokens cut the reply after its calls",
                 {"cap": 1024}),
    TemplateSpec("dream-diary.md.j2", "a DREAMS.md diary entry", {
        "date": "2026-05-07", "time": "03:00", "staged": 4, "new_staged": 1, "first_staged": 1,
        "themes": [{"name": "deploys", "strength": 0.8, "size": 3}], "truths": [{"text": "x"}],
        "promoted": [{"key": "k", "text": "y"}], "superseded": [{"text": "new", "old": "old"}],
        "to_verify": [{"id": 1, "text": "t", "old": "o", "reason": "r"}], "retired": 0, "demoted": 0,
        "memory_chars": 10,
        "memory_max_chars": 10000}, document=True),
    TemplateSpec("diary-llm-system.md.j2", "dreaming.diary: llm — the instructions of the retelling call", {}),
    TemplateSpec("heartbeat-request.md.j2", "the message of a heartbeat run the fleet starts", {}),
)})


def compile_signature(env: Any) -> str:
    """What the compiled code of a template depends on besides its source: the Jinja2 version and
    the environment's compile-time settings (syntax, whitespace control, the sandbox's intercepted
    operators). Part of the bytecode cache's key, so a change to any of them compiles afresh."""
    import jinja2

    settings = (jinja2.__version__, type(env).__name__, env.block_start_string, env.block_end_string,
                env.variable_start_string, env.variable_end_string, env.comment_start_string,
                env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix,
                env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline,
                env.optimized, env.autoescape, env.finalize is not None, env.is_async, sorted(env.extensions),
                sorted(getattr(env, "intercepted_binops", ())), sorted(getattr(env, "intercepted_unops", ())))
    return repr(settings)


def environment():
    """The one Jinja2 environment every Kit template renders in: sandboxed and bounded
    (kit.jinja_bounds), since a workspace's override is a file anyone with the workspace edits."""
    import jinja2

    from kit import jinja_bounds

    return jinja_bounds.environment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


class TemplateFailure(Exception):
    """A template that cannot be compiled or rendered; `problem` says where."""

    def __init__(self, problem: Problem):
        super().__init__(str(problem))
        self.problem = problem


def builtin_source(name: str) -> str:
    return (templates_dir() / name).read_text(encoding="utf-8")


def _error_line(exc: BaseException) -> int | None:
    """The template line of a render error (Jinja rewrites tracebacks to template frames)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


@dataclass(frozen=True)
class Rendered:
    text: str
    source: str  # "builtin", "templates/NAME", or "templates/NAME (last good)"
    problem: Problem | None = None  # why the override was not used

    @property
    def fallback(self) -> str:
        """What was used instead of a broken override, in words."""
        return "the last good template" if self.source.endswith("(last good)") else "the built-in template"


class Templates:
    """The templates of one workspace. Owns the compiled templates and, per template, the last
    override that rendered: state that lives and dies with the workspace (`ws.owned`)."""

    MAX_COMPILED = 64

    def __init__(self, ws: Any):
        self._ws = ws
        self._env = None
        self._compiled: dict[str, Any] = {}  # source text → compiled template
        self._last_good: dict[str, str] = {}  # template name → override source that rendered
        self._bytecode = None  # jinja2's FileSystemBytecodeCache, made with the environment
        self._signature = ""
        self._lock = threading.Lock()

    def override(self, name: str) -> str | None:
        doc = self._ws.snapshot.get(f"{OVERRIDE_DIR}/{name}")
        return doc.text if doc is not None else None

    def _compile(self, source: str, where: str):
        import jinja2

        with self._lock:
            hit = self._compiled.get(source)
            if hit is not None:
                return hit
            if self._env is None:
                self._env = environment()
                self._bytecode = jinja2.FileSystemBytecodeCache(str(user_cache_dir() / "jinja"), "%s.cache")
                self._signature = compile_signature(self._env)
            env = self._env
        # as env.from_string does (no name; "<template>" as the file, which _error_line looks
        # for), with the compiled code from the cache when its source and signature match
        bucket = self._cached_code(env, where, source)
        code = bucket.code
        if code is None:
            try:
                code = env.compile(source)
            except jinja2.TemplateSyntaxError as exc:
                raise TemplateFailure(Problem(area="prompt", path=where, line=exc.lineno,
                                              message=f"template syntax error: {exc.message}")) from None
            bucket.code = code
            self._store_code(bucket)
        template = env.template_class.from_code(env, code, env.make_globals(None))
        with self._lock:
            if len(self._compiled) >= self.MAX_COMPILED:
                self._compiled.clear()
            self._compiled[source] = template
        return template

    def _cached_code(self, env: Any, where: str, source: str):
        """The cache's bucket for this source, its `code` None when nothing usable is stored (as
        BytecodeCache.get_bucket, which lets a torn file's unpickling error through). One file
        per template name and signature."""
        from jinja2.bccache import Bucket

        cache = self._bytecode
        bucket = Bucket(env, cache.get_cache_key(f"{where}\0{self._signature}"), cache.get_source_checksum(source))
        try:
            cache.load_bytecode(bucket)
        except Exception:  # noqa: BLE001 — a torn or foreign file is compiled afresh and rewritten
            bucket.reset()
        return bucket

    def _store_code(self, bucket: Any) -> None:
        # a cache that cannot be written (read-only home, full disk) only costs the next compile
        try:
            Path(self._bytecode.directory).mkdir(parents=True, exist_ok=True)
            self._bytecode.set_bucket(bucket)
        except OSError:
            pass

    def render_source(self, source: str, where: str, context: Mapping[str, Any]) -> str:
        """Compile (cached) and render `source`; TemplateFailure names `where` and the line."""
        from kit import jinja_bounds

        template = self._compile(source, where)
        try:
            return jinja_bounds.render(template, context)  # bounded in time and size
        except Exception as exc:  # any render error of a user template is reported, never fatal
            message = getattr(exc, "message", None) or str(exc)
            raise TemplateFailure(Problem(area="prompt", path=where, line=_error_line(exc),
                                          message=f"template error: {message}")) from None

    def render(self, template: str, /, **context: Any) -> Rendered:
        """The workspace's override when it renders, else its last good version, else built-in."""
        spec = SPECS[template]
        rendered = self._render(template, context)
        if not spec.document and rendered.text.endswith("\n"):
            rendered = Rendered(rendered.text[:-1], rendered.source, rendered.problem)
        return rendered

    def _render(self, name: str, context: Mapping[str, Any]) -> Rendered:
        rel = f"{OVERRIDE_DIR}/{name}"
        override = self.override(name)
        problem = None
        if override is not None:
            try:
                text = self.render_source(override, rel, context)
            except TemplateFailure as failure:
                problem = failure.problem
            else:
                with self._lock:
                    self._last_good[name] = override
                return Rendered(text, rel)
            with self._lock:
                previous = self._last_good.get(name)
            if previous is not None and previous != override:
                try:
                    return Rendered(self.render_source(previous, rel, context), rel + " (last good)", problem)
                except TemplateFailure:
                    pass
        return Rendered(self.render_source(builtin_source(name), name, context), "builtin", problem)

    def check(self) -> list[Problem]:
        """Every override in the workspace's templates/ folder, compiled and rendered with its
        sample context; names Kit does not use are reported too (a typo would be ignored). The
        system prompt's template is left to the prompt's own check, which renders it for real."""
        out: list[Problem] = []
        for rel in self._ws.snapshot.names(f"{OVERRIDE_DIR}/*.j2"):
            name = rel.split("/", 1)[1]
            spec = SPECS.get(name)
            if name == SYSTEM:
                continue
            if spec is None:
                out.append(Problem(area="prompt", severity="warning", path=rel,
                                   message=f"Kit uses no template named {name!r} (it is ignored); "
                                           f"the templates are {', '.join(SPECS)}"))
                continue
            try:
                self.render_source(self._ws.snapshot.get(rel).text, rel, spec.sample)
            except TemplateFailure as failure:
                out.append(failure.problem)
        return out


def templates_for(ws: Any) -> Templates:
    """The workspace's templates (one object per workspace)."""
    return ws.owned("templates", lambda: Templates(ws))
