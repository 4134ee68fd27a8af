"""Assemble the system prompt (§4) from a workspace snapshot.

    result = build_prompt(ws, kind="default", bootstrap_hooks=[...], warning_state=state)

Files, in order: AGENTS, SOUL, TOOLS, IDENTITY, USER, HEARTBEAT, BOOTSTRAP, MEMORY (missing ones
skipped), filtered by run kind, taken without their YAML frontmatter (metadata, not prompt text),
passed through the `agent:bootstrap` hooks, given LF line endings, stripped of Kit's
`<!-- kit:… -->` comments, budgeted (max-min fair), then rendered by the template: runtime, tools,
skills, persona files, MEMORY.md, and last the dynamic tail (time, truncation warning, and the
heartbeat checklist on heartbeat runs).

The expensive part (files, budgets, skills block) is cached per snapshot version with
`ws.cached`; rendering happens again when anything it reads changed: the snapshot, the tools, the
truncation warning's decision, or the time to the minute (the tail holds it).

**agent:bootstrap hooks.** Each hook is a callable `hook(files, *, kind, workspace, version)`
(accept `**context` to stay compatible with future keywords):
  - `files`: a list of `BootstrapFile(name, text)` about to be budgeted (a fresh list per hook;
    the text is the file without its frontmatter, with LF line endings, and still holds Kit
    comments, which are stripped after the hooks);
  - `kind`: the run kind; `workspace`: the workspace root (Path); `version`: the snapshot version;
  - return None to keep the (possibly mutated in place) list, or a new list whose items are
    `BootstrapFile`, `(name, text)` tuples or `{"name": …, "text"|"content": …}` dicts. Hooks may
    add, remove, reorder or rewrite files. An exception is reported in `warnings`; the pipeline
    goes on with the files as they were before that hook.
Pass them as `bootstrap_hooks=[...]` (or one callable as `bootstrap=`). The result is cached per
snapshot version and hook identity (a hook's `cache_key` attribute, else its id()).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit import clock
from kit.core import WorkspaceCore
from kit.kinds import BOOTSTRAP_FILES, run_kind
from kit.problems import Problem
from kit.prompt.budget import FileBudget, apply_budgets
from kit.prompt.skills_block import SkillEntry, SkillsBlock, build_skills_block
from kit.prompt.warning import WarningState, describe_cut, should_warn
from kit.provenance import HTML_COMMENT, strip_kit_comments
from kit.snapshot import config_problem_text
from kit.templating import OVERRIDE_DIR, SYSTEM, templates_for
from kit.tokens import estimate_tokens
from kit.wording import plural

if TYPE_CHECKING:
    from kit.tools.registry import ToolRegistry

OVERRIDE = f"{OVERRIDE_DIR}/{SYSTEM}"  # the workspace's system prompt template
MEMORY = "MEMORY.md"
HEARTBEAT = "HEARTBEAT.md"


@dataclass(frozen=True)
class BootstrapFile:
    name: str
    text: str


@dataclass(frozen=True)
class BootstrapContext:
    kind: str
    workspace: Path
    version: int


BootstrapHook = Callable[..., Any]  # hook(files, *, kind, workspace, version) -> list | None


@dataclass(frozen=True)
class PromptResult:
    kind: str
    version: int
    prompt: str
    files: tuple[FileBudget, ...]
    skills: SkillsBlock
    warnings: tuple[str, ...]  # cuts, template errors, hook failures: for people and JSON
    warning_block: str = ""  # the block injected for the model this time ("" if none)
    template: str = "builtin"
    template_issue: Problem | None = None
    heartbeat_empty: bool = False  # heartbeat runs are skipped when True
    # where the text stops being the same from call to call (the time comes next): providers
    # with prompt caching put a breakpoint here (kit.providers.base.system_message)
    stable_chars: int | None = None

    @property
    def chars(self) -> int:
        return len(self.prompt)

    @property
    def est_tokens(self) -> int:
        return estimate_tokens(self.prompt)

    @property
    def cuts(self) -> tuple[FileBudget, ...]:
        return tuple(f for f in self.files if f.truncated)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "version": self.version,
            "chars": self.chars,
            "est_tokens": self.est_tokens,
            "prompt": self.prompt,
            "files": [f.to_json() for f in self.files],
            "skills": self.skills.to_json(),
            "warnings": list(self.warnings),
            "template": self.template,
            "heartbeat_empty": self.heartbeat_empty,
        }


@dataclass(frozen=True)
class _Assembly:
    """Everything that depends only on the snapshot (and kind and hooks): cached per version."""

    files: tuple[FileBudget, ...]  # report order: the fixed file order (see _report_order)
    persona: tuple[FileBudget, ...]
    memory: FileBudget | None
    heartbeat: FileBudget | None
    skills: SkillsBlock
    notes: tuple[str, ...] = field(default_factory=tuple)
    heartbeat_empty: bool = False


# [^\S\n]: the line's own indent; `^\s*` under re.M ran over every blank line after each line start
# (a HEARTBEAT.md of 100,000 blank lines took 5 minutes)
# and `#+\s` would let \s be the newline: a bare "#" line took the task under it for its title
_HEADING = re.compile(r"^[^\S\n]*#+(?:[^\S\n].*)?$", re.M)


def heartbeat_is_empty(text: str) -> bool:
    """HEARTBEAT.md with only comments, headings and blank lines has no tasks: skip the run."""
    return not _HEADING.sub("", HTML_COMMENT.sub("", text)).strip()


def heartbeat_has_no_tasks(snap: Any) -> bool:
    """The snapshot's HEARTBEAT.md is missing or has no tasks (a heartbeat run is skipped). Read
    from the file alone, so a run can decide before it builds a prompt or starts anything."""
    doc = snap.get(HEARTBEAT)
    return doc is None or heartbeat_is_empty(prompt_text(doc.body))


def lf(text: str) -> str:
    """`text` with LF line endings: a CRLF (or CR) file would otherwise put mixed line endings in
    the prompt (the template trims the last one, not the inner ones)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def prompt_text(text: str) -> str:
    """What of a file's text (frontmatter already removed) goes into the prompt and is measured:
    LF line endings, without Kit's comments."""
    return strip_kit_comments(lf(text))


def _normalise(result: Any, hook: Any) -> list[BootstrapFile]:
    out = []
    for item in result:
        if isinstance(item, BootstrapFile):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(
            item.get("text", item.get("content")), str
        ):
            out.append(BootstrapFile(item["name"], item.get("text", item.get("content"))))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(v, str) for v in item):
            out.append(BootstrapFile(item[0], item[1]))
        else:
            raise TypeError(f"bootstrap hook {_hook_name(hook)} returned {type(item).__name__}, expected BootstrapFile")
    return out


def _hook_name(hook: Any) -> str:
    return getattr(hook, "name", None) or getattr(hook, "__qualname__", None) or repr(hook)


def run_bootstrap_hooks(
    files: list[BootstrapFile], hooks: Sequence[BootstrapHook], context: BootstrapContext
) -> tuple[list[BootstrapFile], list[str]]:
    """Apply the agent:bootstrap hooks in order; a failing hook is reported and skipped."""
    notes: list[str] = []
    for hook in hooks:
        working = list(files)
        try:
            result = hook(working, kind=context.kind, workspace=context.workspace, version=context.version)
            files = _normalise(working if result is None else result, hook)
        except Exception as exc:  # hooks are isolated: report and go on
            notes.append(f"bootstrap hook {_hook_name(hook)} failed: {exc}")
            continue
        seen: set[str] = set()
        unique = []
        for f in files:  # one entry per name; the last one a hook wrote wins
            if f.name in seen:
                unique = [u for u in unique if u.name != f.name]
            seen.add(f.name)
            unique.append(f)
        files = unique
    return files, notes


def _assemble(ws: WorkspaceCore, kind: str, hooks: Sequence[BootstrapHook]) -> _Assembly:
    snap = ws.snapshot
    cfg = snap.config
    wanted = run_kind(kind).files
    rejected = _rejected_files(snap)
    included: list[BootstrapFile] = []
    excluded: list[FileBudget] = []
    unloaded: list[FileBudget] = []  # rejected with no last good version: a row that says why
    for name in BOOTSTRAP_FILES:
        doc = snap.get(name)
        reason = None if name in wanted else "excluded_by_kind"
        if doc is None:
            if name in rejected:  # a run kind that leaves the file out anyway just names the problem
                problem = str(rejected[name]) + ("; it is left out of the prompt" if reason is None else "")
                unloaded.append(FileBudget(name, 0, 0, False, reason, problem=problem))
            continue
        if reason is None:
            # the body: frontmatter is the file's metadata (no key means anything to the prompt)
            included.append(BootstrapFile(name, lf(doc.body)))
        else:
            raw = len(prompt_text(doc.body))
            problem = str(rejected[name]) if name in rejected else None
            excluded.append(FileBudget(name, raw, 0, False, reason, problem=problem))
    notes = _load_problems(snap, wanted)
    if hooks:
        included, hook_notes = run_bootstrap_hooks(included, hooks, BootstrapContext(kind, snap.root, snap.version))
        notes += hook_notes
    stripped = [(f.name, prompt_text(f.text)) for f in included]  # hooks may have added CRLF text
    bootstrap = cfg.bootstrap
    budgets = apply_budgets(
        stripped,
        max_chars_per_file=bootstrap.max_chars_per_file,
        max_total_chars=bootstrap.max_total_chars,
        head_ratio=bootstrap.head_ratio,
        tail_ratio=bootstrap.tail_ratio,
    )
    budgets = [replace(b, problem=_kept_problem(rejected, b.name)) if b.name in rejected else b for b in budgets]
    tail_heartbeat = kind == "heartbeat"
    persona = tuple(b for b in budgets if b.name != MEMORY and not (tail_heartbeat and b.name == HEARTBEAT))
    memory = next((b for b in budgets if b.name == MEMORY), None)
    heartbeat = next((b for b in budgets if b.name == HEARTBEAT), None) if tail_heartbeat else None
    empty = heartbeat_has_no_tasks(snap)
    ordered = (*persona, *([memory] if memory else []), *([heartbeat] if heartbeat else []))
    skills, invalid = _skills_block(ws)
    if invalid:
        notes.append(f"{plural(invalid, 'invalid skill file')} left out; `kit skills check` says why")
    return _Assembly(
        files=_report_order((*ordered, *unloaded, *excluded)),
        persona=persona,
        memory=memory,
        heartbeat=heartbeat,
        skills=skills,
        notes=tuple(notes),
        heartbeat_empty=empty,
    )


def _report_order(rows: Sequence[FileBudget]) -> tuple[FileBudget, ...]:
    """The report lists the files in their documented order (AGENTS, SOUL, … MEMORY) whatever
    happened to them (loaded, failed to load, left out by the kind), so a row never moves when a
    file breaks. Files a hook added sit with the persona files: after the others, before MEMORY.md,
    in the order the hooks gave them (the sort is stable)."""
    added = BOOTSTRAP_FILES.index(MEMORY) - 0.5
    rank = {name: index for index, name in enumerate(BOOTSTRAP_FILES)}
    return tuple(sorted(rows, key=lambda row: rank.get(row.name, added)))


def _rejected_files(snap) -> dict[str, Problem]:
    """Bootstrap files the snapshot refused (binary, too big, broken frontmatter): the first issue
    of each, so the budget report gives every such file a row that says why."""
    out: dict[str, Problem] = {}
    for issue in snap.issues:
        if issue.area != "config" and issue.path in BOOTSTRAP_FILES:
            out.setdefault(issue.path, issue)
    return out


def _kept_problem(rejected: dict[str, Problem], name: str) -> str | None:
    issue = rejected.get(name)
    return None if issue is None else f"{issue}; the prompt uses its last good version"


def _load_problems(snap, wanted: frozenset[str]) -> list[str]:
    """Snapshot issues that change this prompt (a broken config, bootstrap file or template
    file): say what the prompt uses instead, so a file is never left out silently."""
    notes = []
    for issue in snap.issues:
        if issue.area == "config":
            notes.append(config_problem_text(issue, snap))
        elif issue.path in wanted or issue.path == OVERRIDE:
            kept = "the prompt uses its last good version" if snap.get(issue.path) else "it is left out of the prompt"
            notes.append(f"{issue}; {kept}")
    return notes


def _skills_block(ws: WorkspaceCore) -> tuple[SkillsBlock, int]:
    """The skills block, and how many skill files were invalid (so the report can say so)."""
    from kit.skills.catalog import catalog_for

    catalog = catalog_for(ws)
    entries = [SkillEntry(s.name, s.description, s.location) for s in catalog.eligible()]
    settings = ws.config.skills
    block = build_skills_block(
        entries,
        max_in_prompt=settings.max_in_prompt,
        max_prompt_chars=settings.max_prompt_chars,
        total=len(catalog),
    )
    return block, len({p.path for p in catalog.errors})


def _now_context(moment: datetime | None = None) -> dict[str, str]:
    moment = moment or clock.now()
    offset = moment.strftime("%z")
    zone = moment.tzname() or ""
    tz = f"UTC{offset[:3]}:{offset[3:]}" if offset else "local time"
    if zone and not zone.startswith(("UTC", "+", "-")):
        tz = f"{zone}, {tz}"
    return {
        "iso": moment.isoformat(timespec="minutes"),
        "date": moment.strftime("%Y-%m-%d"),
        "time": moment.strftime("%H:%M"),
        "weekday": moment.strftime("%A"),
        "timezone": tz,
    }


def _file_ctx(b: FileBudget) -> dict[str, Any]:
    return {"name": b.name, "text": b.text, "truncated": b.truncated}


def _shown(b: FileBudget | None) -> dict[str, Any] | None:
    """The template's view of a file; none for a file its allowance left out (not even a heading:
    left out means not in the prompt, and the truncation warning names it)."""
    return None if b is None or b.left_out else _file_ctx(b)


def _piece(templates, template: str, warnings: list[str], /, **context: Any) -> str:
    """A template rendered into the system prompt; a broken override is named in `warnings`."""
    rendered = templates.render(template, **context)
    if rendered.problem is not None:
        warnings.append(f"{rendered.problem}; using {rendered.fallback}")
    return rendered.text


def _builtin_tools() -> ToolRegistry:
    from kit.tools.builtin import builtin_registry

    return builtin_registry()


def _hooks_key(hooks: Iterable[BootstrapHook]) -> str:
    return ",".join(str(getattr(h, "cache_key", None) or id(h)) for h in hooks)


def build_prompt(
    ws: WorkspaceCore,
    kind: str = "default",
    *,
    bootstrap_hooks: Sequence[BootstrapHook] = (),
    bootstrap: BootstrapHook | Sequence[BootstrapHook] | None = None,
    warning_state: WarningState | None = None,
    tools: ToolRegistry | None = None,
) -> PromptResult:
    """Build the system prompt for a run of `kind` (default | subagent | cron | heartbeat | shared).

    `bootstrap_hooks` / `bootstrap`: agent:bootstrap callables (signature in the module docstring).
    `warning_state`: the session's WarningState, so "once" warns once per distinct set of cuts.
    `tools`: the registry the run offers (listed in the prompt); Kit's built-in tools by default.
    Two builds from one snapshot give byte-identical text up to the dynamic tail (and all of it
    when the clock is frozen with KIT_NOW).
    """
    run_kind(kind)  # an unknown kind is an error before anything is built
    from kit.skills.catalog import trust_stamp

    hooks = tuple(bootstrap_hooks)
    if bootstrap is not None:
        hooks += tuple(bootstrap) if isinstance(bootstrap, (list, tuple)) else (bootstrap,)
    key = f"prompt.assembly:{kind}:{_hooks_key(hooks)}:{trust_stamp()}"
    assembly: _Assembly = ws.cached(key, lambda: _assemble(ws, kind, hooks))
    snap = ws.snapshot
    cuts = [f for f in assembly.files if f.truncated]
    warn = should_warn(cuts, snap.config.bootstrap.warning, warning_state)
    summaries = (tools if tools is not None else _builtin_tools()).summaries()
    now = _now_context()
    # the same inputs as the last build of this kind (the time is to the minute): the same prompt,
    # without rendering the template twice again (a cached build was 4x slower than before the
    # templates; most calls are a turn's rebuild within the same minute)
    inputs = (snap.version, assembly, warn, summaries, now)
    renders = ws.owned("prompt.renders", _Renders)
    last = renders.get(key, inputs)
    if last is not None:
        return last
    result = _render(ws, kind, snap, assembly, cuts, warn, summaries, now)
    renders.put(key, inputs, result)
    return result


class _Renders:
    """The last PromptResult per assembly key with the inputs it was rendered from (owned by the
    workspace; a few entries: one per run kind and set of hooks in use)."""

    MAX = 16

    def __init__(self) -> None:
        self._last: dict[str, tuple[tuple, PromptResult]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, inputs: tuple) -> PromptResult | None:
        with self._lock:
            hit = self._last.get(key)
        if hit is None or hit[0][1] is not inputs[1] or hit[0] != inputs:
            return None
        return hit[1]

    def put(self, key: str, inputs: tuple, result: PromptResult) -> None:
        with self._lock:
            if len(self._last) >= self.MAX and key not in self._last:
                self._last.clear()
            self._last[key] = (inputs, result)


def _render(ws: WorkspaceCore, kind: str, snap, assembly: _Assembly, cuts: list[FileBudget], warn: bool,
            summaries: list[dict[str, str]], now: dict[str, str]) -> PromptResult:
    templates = templates_for(ws)
    warnings = [describe_cut(c) for c in cuts]
    block = ""
    if warn:
        block = _piece(templates, "truncation-warning.md.j2", warnings, cuts=[describe_cut(c) for c in cuts])
    context = {
        "kind": kind,
        "kind_note": _piece(templates, "kind-note.md.j2", warnings, kind=kind),
        "workspace_name": snap.root.name,
        "tools": summaries,
        "skills_block": assembly.skills.text,
        "files": [_file_ctx(b) for b in assembly.persona if not b.left_out],
        "memory": _shown(assembly.memory),
        "heartbeat": _shown(assembly.heartbeat),
        "now": now,
        "warning": block,
    }
    rendered = templates.render(SYSTEM, **context)
    # the stable prefix ends where another moment renders differently (a template may put the time
    # anywhere): everything before it is byte-identical from call to call
    later = _now_context(clock.now() + timedelta(days=367, hours=1, minutes=1))
    other = templates.render(SYSTEM, **{**context, "now": later})
    stable = _common_prefix(rendered.text, other.text)
    if rendered.problem is not None:
        warnings.append(f"{rendered.problem}; using {rendered.fallback}")
    warnings.extend(assembly.notes)
    return PromptResult(
        kind=kind,
        version=snap.version,
        prompt=rendered.text,
        files=assembly.files,
        skills=assembly.skills,
        warnings=tuple(warnings),
        warning_block=block,
        template=rendered.source,
        template_issue=rendered.problem,
        heartbeat_empty=assembly.heartbeat_empty,
        stable_chars=stable,
    )


def _common_prefix(a: str, b: str) -> int:
    # bisect on slice comparisons (done in C): a character-by-character loop in Python cost ~6 ms
    # on a 60k-character prompt, 25x the rest of a cached build
    lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo]; a[:hi + 1] != b[:hi + 1] (or hi is the end)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    index = lo
    # back to the start of that line: a partly equal line ("Thursday" / "Tuesday") is not stable
    return a.rfind("\n", 0, index) + 1


class TemplateWatch:
    """Template problems for `kit watch`. They are not snapshot issues: a template can only be
    checked by rendering it with a full context, so after a reload that touched something the
    prompt is made of, render once and report the problem when it is new, changed, or the
    template itself was edited. Rendering here also records the last good template."""

    def __init__(self, ws: WorkspaceCore):
        self.ws = ws
        self.issue: Problem | None = build_prompt(ws).template_issue

    def after_reload(self, changed: Iterable[str]) -> Problem | None:
        from kit.snapshot import is_tracked

        changed = list(changed)
        if not any(is_tracked(rel) for rel in changed):
            return None  # memory notes and other untracked files never feed the template
        issue = build_prompt(self.ws).template_issue
        report = issue if issue is not None and (issue != self.issue or OVERRIDE in changed) else None
        self.issue = issue
        return report


def _what_the_model_sees(cut: FileBudget) -> str:
    return "the model sees none of it" if cut.left_out else "the model sees only its head and tail"


def doctor_checks(ws: WorkspaceCore) -> list[Problem]:
    """Bootstrap budget pressure (files cut), broken template overrides, skills left out."""
    result = build_prompt(ws, "default")
    out = templates_for(ws).check()
    for cut in result.cuts:
        setting = "bootstrap.max_total_chars" if cut.reason == "max_total" else "bootstrap.max_chars_per_file"
        out.append(Problem(
            area="prompt", severity="warning", path=cut.name,
            message=f"{describe_cut(cut, with_name=False)}; {_what_the_model_sees(cut)}. "
                    f"Trim the file or raise {setting}",
        ))
    if result.template_issue is not None:
        issue = result.template_issue
        out.append(replace(issue, message=f"{issue.message} (using {result.template})"))
    skills = result.skills
    if skills.in_prompt < skills.eligible:
        out.append(Problem(
            area="prompt", severity="warning",
            message=f"{skills.eligible - skills.in_prompt} of {skills.eligible} skills are left out of the prompt "
                    "(skills.max_in_prompt / skills.max_prompt_chars); the model can still find them with skills_list",
        ))
    return out
