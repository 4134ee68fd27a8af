"""Claude Code hooks, unchanged: the `hooks` of `.claude/settings.json`, `.claude/settings.local.json`
and `~/.claude/settings.json`, run on Kit's events with Claude Code's payloads and decisions.

Opt-in (`hooks.claude_code: true`) and trust-gated like workspace hooks: `kit hooks trust
claude-code` pins the content of those three files and of `.claude/hooks/` (where the scripts
usually are); an edit to any of them untrusts them all until trusted again.

What runs, and how its answer counts (docs/hooks.md, "Claude Code hooks"):
- `command` handlers only, through `/bin/sh -c` (or exec form with `args`) in the workspace root,
  with `$CLAUDE_PROJECT_DIR` set and the payload JSON on stdin. A handler defined in several
  files runs once.
- exit 2 blocks a decision event (PreToolUse, UserPromptSubmit) with stderr as the reason; JSON
  on stdout (`hookSpecificOutput.permissionDecision` allow|ask|deny, the older `decision`,
  `continue: false`, `updatedInput`, `additionalContext`) decides otherwise; deny > ask > allow.
- A hook Kit cannot run for a decision event — a payload it cannot map, a handler type it does
  not support, a broken matcher, a command that cannot start or times out, an answer it cannot
  read — blocks the call with a warning: fails closed, never open.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
import shlex
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from kit.core import WorkspaceCore
from kit.hooks import claude_map as cm
from kit.hooks.events import blocked_what, json_problem, looks_like_json
from kit.problems import Problem

TRUST_KIND = "claude-code"
TRUST_NAME = "claude-code"
FILES = (("user", "~/.claude/settings.json"), ("project", ".claude/settings.json"),
         ("local", ".claude/settings.local.json"))  # Claude Code merges all three; listed in this order
SCRIPTS_DIR = ".claude/hooks"  # hashed with the settings: the scripts the commands usually run
DECISIONS = frozenset({"PreToolUse", "UserPromptSubmit"})  # events where a hook may stop Kit

MAX_CONTEXT_CHARS = 10_000  # Claude Code's cap on additionalContext / plain stdout
MAX_HASHED_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class ClaudeHook:
    """One handler of one matcher group of one settings file."""

    scope: str  # user | project | local
    file: str  # as shown: .claude/settings.json, ~/.claude/settings.json
    event: str  # Claude Code's event name
    group: int
    index: int
    matcher: str | None = None
    type: str = "command"
    command: str | None = None
    args: tuple[str, ...] | None = None
    timeout_s: float | None = None
    errors: tuple[str, ...] = ()  # cannot run (on a decision event it blocks what it matches)
    warnings: tuple[str, ...] = ()
    line: int | None = None  # where the handler starts in its file
    error_lines: tuple[int | None, ...] = ()  # in step with `errors`: the line of the key each is about
    warning_lines: tuple[int | None, ...] = ()
    duplicate_of: str | None = None  # the same handler is already declared there: runs once
    if_rule: str | None = None  # `if`: a permission rule (`Bash(rm *)`) narrowing a tool event further

    @property
    def name(self) -> str:
        return f"claude:{self.scope}:{self.label}"

    @property
    def label(self) -> str:
        """`PreToolUse[0]`, `PreToolUse[0].1` for a group's second handler: the handler in messages."""
        return f"{self.event}[{self.group}]" + (f".{self.index}" if self.index else "")

    @property
    def kit_event(self) -> str | None:
        return cm.KIT_EVENT.get(self.event)

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def shell_command(self) -> str:
        if self.args is not None:  # exec form: the executable and its arguments, no shell expansion
            return shlex.join([self.command or "", *self.args])
        return self.command or ""

    def applies(self, kit_event: str, data: dict[str, Any]) -> bool:
        return self.kit_event == kit_event and cm.claude_event(kit_event, data) == self.event

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "root": "claude-code", "scope": self.scope, "path": self.file,
                "description": f"{self.event}" + (f" matcher {self.matcher!r}" if self.matcher else ""),
                "events": [self.kit_event] if self.kit_event else [], "claude_event": self.event,
                "matcher": self.matcher, "enabled": True, "timeout_s": self.timeout_s, "kind": self.type,
                "command": self.shell_command or None, "valid": self.valid, "errors": list(self.errors),
                "warnings": list(self.warnings), "problems": [p.to_json() for p in self.problems],
                "file": self.file, "line": self.line}

    @property
    def problems(self) -> tuple[Problem, ...]:
        """The errors and warnings as located problems (at the handler's line), the shape every
        hook row of `kit hooks list --json` has."""
        details = {"hook": self.name, "root": "claude-code"}
        return tuple(Problem(area="hooks", path=self.file, line=line, message=message, severity=severity,
                             details=details)
                     for severity, message, line in self.located())

    def located(self) -> list[tuple[str, str, int | None]]:
        """(severity, message, line) of each error, then each warning: at the line of the key it is
        about (`matcher`, `type` …), else the handler's own line."""
        out = []
        for severity, messages, lines in (("error", self.errors, self.error_lines),
                                          ("warning", self.warnings, self.warning_lines)):
            for index, message in enumerate(messages):
                line = lines[index] if index < len(lines) and lines[index] is not None else self.line
                out.append((severity, message, line))
        return out


class SettingsProblem(NamedTuple):
    """What keeps a settings file's hooks, or some of them, from Kit, at its line."""

    file: str
    line: int | None
    message: str
    whole: bool = False  # the file's every hook is kept out (it cannot be read, its JSON does not parse …)


@dataclass(frozen=True)
class Loaded:
    hooks: tuple[ClaudeHook, ...] = ()
    problems: tuple[SettingsProblem, ...] = ()
    disabled_by: str | None = None  # the file whose disableAllHooks: true is in force


@dataclass
class ClaudeOutcome:
    blocked: bool = False
    reason: str | None = None
    blocked_by: str | None = None
    ask: str | None = None  # a hook asked for the person's approval (PreToolUse `ask`)
    arguments: dict[str, Any] | None = None  # updatedInput, in Kit's terms
    context: list[str] = field(default_factory=list)  # additionalContext / plain stdout for the model
    errors: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # applied, but Kit could not run them (invalid …)


def _path(ws_root: Path, rel: str) -> Path:
    return Path(os.path.expanduser(rel)) if rel.startswith("~") else ws_root / rel


class _Object(dict):
    """A JSON object that knows where it is: `line` (of its `{`) and `key_lines` (of each key)."""

    line: int = 0
    key_lines: dict[str, int]


class _Array(list):
    """A JSON array that knows the line each of its items starts on (`item_lines`)."""

    line: int = 0
    item_lines: list[int]


_WS = re.compile(r"[ \t\n\r]*")


def located_json(text: str) -> Any:
    """`json.loads(text)`, with every object and array knowing its line, and each key's and each
    item's (1-based), so a problem is reported where it is in the file. Raises JSONDecodeError
    (from json.loads: its message and position) for text that is not JSON."""
    json.loads(text)  # not JSON: json's own error, line and column
    decoder = json.JSONDecoder()
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]

    def line_at(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    def skip(pos: int) -> int:
        return _WS.match(text, pos).end()  # type: ignore[union-attr]

    def value(pos: int) -> tuple[Any, int]:
        pos = skip(pos)
        if text.startswith("{", pos):
            obj = _Object()
            obj.line, obj.key_lines = line_at(pos), {}
            pos = skip(pos + 1)
            if text.startswith("}", pos):
                return obj, pos + 1
            while True:
                pos = skip(pos)
                key, after = json.decoder.scanstring(text, pos + 1)  # text[pos] is its opening quote
                obj.key_lines[key] = line_at(pos)
                item, after = value(skip(after) + 1)  # past the ':'
                obj[key] = item
                after = skip(after)
                if text.startswith("}", after):
                    return obj, after + 1
                pos = after + 1  # past the ','
        if text.startswith("[", pos):
            arr = _Array()
            arr.line, arr.item_lines = line_at(pos), []
            pos = skip(pos + 1)
            if text.startswith("]", pos):
                return arr, pos + 1
            while True:
                pos = skip(pos)
                arr.item_lines.append(line_at(pos))
                item, after = value(pos)
                arr.append(item)
                after = skip(after)
                if text.startswith("]", after):
                    return arr, after + 1
                pos = after + 1
        return decoder.raw_decode(text, pos)  # a string, number, true, false or null

    return value(0)[0]


def _key_line(obj: Any, key: str, default: int | None) -> int | None:
    """The line of `key` in a located object, else `default` (the object's own line)."""
    lines = getattr(obj, "key_lines", None) or {}
    return lines.get(key, default)


def _item_line(arr: Any, index: int, default: int | None) -> int | None:
    lines = getattr(arr, "item_lines", None) or []
    return lines[index] if index < len(lines) else default


def parse_settings(scope: str, file: str, text: str) -> tuple[list[ClaudeHook], list[SettingsProblem], bool]:
    """(hooks, problems, disableAllHooks) of one settings file's text. Each handler carries the
    line it starts on, and each of its problems the line of the key it is about (`matcher`,
    `type`, `timeout` …), else the handler's."""
    try:
        data = located_json(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        return [], [SettingsProblem(file, exc.lineno, f"not valid JSON: {exc.msg}", whole=True)], False
    except RecursionError:
        return [], [SettingsProblem(file, 1, "not valid JSON: nested too deeply", whole=True)], False
    if not isinstance(data, dict):
        return [], [SettingsProblem(file, 1, "a settings file must hold a JSON object", whole=True)], False
    disable = data.get("disableAllHooks") is True
    raw = data.get("hooks")
    if raw is None:
        return [], [], disable
    if not isinstance(raw, dict):
        return [], [SettingsProblem(file, _key_line(data, "hooks", None), "'hooks' must be an object of event names",
                                    whole=True)], disable
    out: list[ClaudeHook] = []
    problems: list[SettingsProblem] = []
    for event, groups in raw.items():
        line = _key_line(raw, event, None)
        if event not in cm.CLAUDE_EVENTS:
            problems.append(SettingsProblem(file, line, f"{event!r} is not a Claude Code hook event; ignored"))
            continue
        if not isinstance(groups, list):
            problems.append(SettingsProblem(file, line, f"{event}: must be a list of matcher groups; ignored"))
            continue
        for g, group in enumerate(groups):
            group_line = _item_line(groups, g, line)
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                out.append(ClaudeHook(scope, file, event, g, 0, line=group_line,
                                      errors=("a matcher group must be an object with a 'hooks' list",),
                                      error_lines=(group_line,)))
                continue
            matcher = group.get("matcher")
            matcher_line = _key_line(group, "matcher", group_line)
            matcher_problem = cm.check_matcher(matcher)
            for i, handler in enumerate(group["hooks"]):
                hook_line = _item_line(group["hooks"], i, group_line)
                errors: list[tuple[str, int | None]] = []
                warnings: list[tuple[str, int | None]] = []

                def at(key: str, _handler: Any = handler, _line: int | None = hook_line) -> int | None:
                    return _key_line(_handler, key, _line)

                if matcher_problem:
                    errors.append((matcher_problem, matcher_line))
                if event not in cm.KIT_EVENT:
                    warnings.append((f"Kit has no {event} event: not run", hook_line))
                elif event in cm.NO_MATCHER and matcher not in (None, "", "*"):
                    warnings.append((f"{event} takes no matcher (Claude Code ignores it too): runs on every one",
                                     matcher_line))
                if not isinstance(handler, dict):
                    errors.append(("a handler must be an object", hook_line))
                    out.append(ClaudeHook(scope, file, event, g, i, matcher if isinstance(matcher, str) else None,
                                          type="?", line=hook_line, **_split(errors, warnings)))
                    continue
                kind = str(handler.get("type") or "")
                command = handler.get("command")
                args = handler.get("args")
                timeout = handler.get("timeout")
                if kind != "command":
                    errors.append((f"handler type {kind or '(none)'!r} is not supported by Kit (only 'command')",
                                   at("type")))
                elif not isinstance(command, str) or not command.strip():
                    errors.append(("a command handler needs a non-empty 'command'", at("command")))
                if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
                    errors.append(("'args' must be a list of strings", at("args")))
                    args = None
                if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                            or timeout <= 0):
                    errors.append((f"'timeout' must be a positive number of seconds, not {timeout!r}", at("timeout")))
                    timeout = None
                for key in ("async", "asyncRewake"):
                    if handler.get(key):
                        warnings.append((f"{key!r} is not supported by Kit: the hook runs as if it were absent",
                                         at(key)))
                if_rule = handler.get("if")
                if if_rule is not None and not isinstance(if_rule, str):
                    errors.append((f"'if' must be a permission rule such as \"Bash(rm *)\", not {if_rule!r}", at("if")))
                    if_rule = None
                elif if_rule is not None and event not in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
                    warnings.append((f"'if' only applies to tool events; ignored on {event}", at("if")))
                    if_rule = None
                if handler.get("shell") not in (None, "bash", "sh"):
                    errors.append((f"shell {handler.get('shell')!r} is not supported by Kit", at("shell")))
                out.append(ClaudeHook(
                    scope, file, event, g, i, matcher if isinstance(matcher, str) else None, type=kind or "?",
                    command=command if isinstance(command, str) else None,
                    args=tuple(args) if isinstance(args, list) else None,
                    timeout_s=float(timeout) if timeout is not None else None,
                    line=hook_line, if_rule=if_rule, **_split(errors, warnings),
                ))
    return out, problems, disable


def _split(errors: list[tuple[str, int | None]], warnings: list[tuple[str, int | None]]) -> dict[str, Any]:
    """ClaudeHook's errors and warnings, with the line of each."""
    return {"errors": tuple(m for m, _ in errors), "error_lines": tuple(n for _, n in errors),
            "warnings": tuple(m for m, _ in warnings), "warning_lines": tuple(n for _, n in warnings)}


class ClaudeCodeHooks:
    """The Claude Code hooks of one workspace, re-read when one of the files changes."""

    def __init__(self, ws: WorkspaceCore):
        self.ws = ws
        self._lock = threading.Lock()
        self._seen: tuple[Any, ...] | None = None
        self._loaded = Loaded()

    # ------------------------------------------------------------------ files and trust

    def files(self) -> list[tuple[str, str, Path]]:
        out, seen = [], set()
        for scope, rel in FILES:
            path = _path(self.ws.root, rel)
            key = os.path.normpath(path)
            if key in seen:  # the workspace is the home folder
                continue
            seen.add(key)
            out.append((scope, rel, path))
        return out

    def _signature(self) -> tuple[Any, ...]:
        sig = []
        for _scope, _rel, path in self.files():
            try:
                st = path.stat()
                sig.append((st.st_mtime_ns, st.st_size))
            except OSError:
                sig.append(None)
        return tuple(sig)

    def loaded(self) -> Loaded:
        signature = self._signature()
        with self._lock:
            if signature == self._seen:
                return self._loaded
        hooks: list[ClaudeHook] = []
        problems: list[SettingsProblem] = []
        disabled_by = None
        for scope, rel, path in self.files():
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(SettingsProblem(rel, None, f"cannot be read: {exc}", whole=True))
                continue
            found, file_problems, disable = parse_settings(scope, rel, text)
            hooks.extend(found)
            problems.extend(file_problems)
            if disable:
                disabled_by = rel  # later files (local over project over user) win
        hooks = _dedupe(hooks)
        loaded = Loaded(tuple(hooks), tuple(problems), disabled_by)
        with self._lock:
            self._seen, self._loaded = signature, loaded
        return loaded

    @property
    def hooks(self) -> tuple[ClaudeHook, ...]:
        return self.loaded().hooks

    @property
    def enabled(self) -> bool:
        return self.ws.config.hooks.claude_code

    def digest(self) -> str:
        """sha256 over the three settings files and every file under .claude/hooks/."""
        h = hashlib.sha256()
        for _scope, rel, path in self.files():
            h.update(rel.encode() + b"\0")
            try:
                h.update(path.read_bytes()[:MAX_HASHED_BYTES])
            except FileNotFoundError:
                h.update(b"<absent>")
            except OSError as exc:
                h.update(f"<unreadable {exc.errno}>".encode())
            h.update(b"\0")
        scripts = self.ws.root / SCRIPTS_DIR
        for dirpath, dirnames, filenames in os.walk(scripts):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".pyc", ".log")):
                    continue
                full = Path(dirpath) / name
                h.update(full.relative_to(self.ws.root).as_posix().encode() + b"\0")
                try:
                    h.update(full.read_bytes()[:MAX_HASHED_BYTES])
                except OSError as exc:
                    h.update(f"<unreadable {exc.errno}>".encode())
                h.update(b"\0")
        return h.hexdigest()

    def is_trusted(self, store: Any, digest: str | None = None) -> bool:
        return store.is_trusted(TRUST_KIND, str(self.ws.root), digest or self.digest())

    def trust(self, store: Any) -> Any:
        return store.trust(TRUST_KIND, str(self.ws.root), self.digest(), str(self.ws.root / ".claude"))

    # ------------------------------------------------------------------ firing

    def fire(self, kit_event: str, data: dict[str, Any], *, session_key: str | None, store: Any,
             log: Any) -> ClaudeOutcome:
        """Run the hooks that apply to this Kit event; `log(level, event, hook, message)`."""
        outcome = ClaudeOutcome()
        if not self.enabled:
            return outcome
        loaded = self.loaded()
        candidates = [h for h in loaded.hooks if h.applies(kit_event, data) and h.duplicate_of is None]
        if not candidates:
            return outcome
        event = candidates[0].event
        root = str(self.ws.root)
        decision = event in DECISIONS
        try:
            fields = cm.payload(kit_event, data, root, session_key)
            unmappable = None
        except cm.Unmappable as exc:
            fields, unmappable = {}, str(exc)
        tool = str(data.get("tool") or data.get("name") or "")
        value = cm.matcher_value(event, fields) if fields else (
            cm.claude_tool_name(tool) if kit_event.startswith("tool:") else None)
        matching = []
        for hook in candidates:
            # a matcher Kit cannot read may match anything: such a hook is tested against every call
            if cm.check_matcher(hook.matcher) is None and not cm.matches(hook.matcher, value):
                continue
            if hook.valid and hook.if_rule and unmappable is None and not any(
                    g.allows(tool, data.get("arguments")) for g in cm.parse_rules(hook.if_rule)):
                continue  # `if: Bash(rm *)` and the call is not one (a call Kit cannot map still runs it)
            if not hook.valid and event not in cm.KIT_EVENT:
                continue
            matching.append(hook)
        if not matching:  # nothing applies to this call: no trust check, no hashing
            return outcome
        if loaded.disabled_by:
            outcome.skipped.append(f"claude-code: disableAllHooks is true in {loaded.disabled_by}")
            return outcome
        if not self.is_trusted(store):
            why = ("the Claude Code settings are not trusted (review .claude/ and ~/.claude/settings.json, "
                   "then run `kit hooks trust claude-code`)")
            outcome.skipped.append(f"claude-code: {why}")
            log("SKIP", kit_event, TRUST_NAME, why)
            return outcome
        verdicts: list[tuple[ClaudeHook, _Verdict]] = []
        for hook in matching:
            if not hook.valid:
                outcome.not_run.append(hook.name)
                verdicts.append((hook, _cannot(hook, "; ".join(hook.errors), decision)))
                continue
            if unmappable is not None:
                outcome.not_run.append(hook.name)
                verdicts.append((hook, _cannot(hook, f"Kit cannot give it this call's payload: {unmappable}",
                                               decision)))
                continue
            outcome.ran.append(hook.name)
            verdicts.append((hook, self._run(hook, fields, decision)))
        for hook, verdict in verdicts:
            if verdict.block:  # one BLOCK line per hook that says no (docs: one line per incident)
                log("BLOCK", kit_event, hook.name, verdict.reason or "")
            for message in verdict.errors:
                outcome.errors.append(f"{hook.name}: {message}")
                if not verdict.failed:  # else the BLOCK line above tells this very incident
                    log("ERROR", kit_event, hook.name, message)
            outcome.context.extend(verdict.context)
        if decision:
            _decide(outcome, verdicts, root, tool, log, kit_event)
        return outcome

    def _run(self, hook: ClaudeHook, fields: dict[str, Any], decision: bool) -> _Verdict:
        from kit.envsafe import clean_env
        from kit.hooks.runner import run_shell

        env = clean_env()
        env.update({"CLAUDE_PROJECT_DIR": str(self.ws.root), "KIT_WORKSPACE": str(self.ws.root),
                    "KIT_HOOK_EVENT": hook.kit_event or "", "KIT_HOOK_NAME": hook.name})
        timeout = float(hook.timeout_s or self.ws.config.hooks.timeout_s)
        stdin = json.dumps(fields, ensure_ascii=False, default=str).encode("utf-8")
        try:
            # a Claude Code hook is a command hook: whatever it starts (even with setsid) ends with it
            done = run_shell(hook.shell_command, cwd=self.ws.root, env=env, timeout_s=timeout, stdin=stdin,
                             end_all=True)
        except OSError as exc:
            return _cannot(hook, f"cannot start its command: {exc}", decision)
        if done.timed_out:
            return _cannot(hook, f"timed out after {timeout:g}s (command killed)", decision)
        if decision and done.returncode in (126, 127):
            tail = done.stderr.strip().splitlines()[-1:] or [""]
            return _cannot(hook, f"its command could not be run (exit {done.returncode}): {tail[0]}", decision)
        return interpret(hook, done.returncode, done.stdout, done.stderr)

    # ------------------------------------------------------------------ listing and doctor

    def listing(self, store: Any) -> list[dict[str, Any]]:
        loaded = self.loaded()
        if not loaded.hooks:
            return []
        trusted = self.is_trusted(store)
        rows = []
        for hook in loaded.hooks:
            row = hook.to_json()
            warnings = row["warnings"]
            if hook.duplicate_of:
                warnings.append(f"the same handler is declared in {hook.duplicate_of}: runs once")
            row["enabled"] = self.enabled and loaded.disabled_by is None and hook.kit_event is not None
            if not self.enabled:
                warnings.append("hooks.claude_code is false in kit.yaml: Claude Code hooks do not run")
            elif loaded.disabled_by:
                warnings.append(f"disableAllHooks is true in {loaded.disabled_by}")
            row["trusted"] = trusted if hook.valid else None
            row["runs"] = bool(row["enabled"] and hook.valid and trusted and not hook.duplicate_of)
            row["review"] = "review .claude/ and ~/.claude/settings.json, then run `kit hooks trust claude-code`"
            rows.append(row)
        return rows

    def file_problems(self, *, whole: bool = False) -> list[Problem]:
        """What keeps a settings file's hooks (or some of them) from Kit: JSON that does not parse,
        an unknown event … each at its file and line. `whole`: only what keeps every hook of a file
        out (`kit run` says those before each turn)."""
        return [Problem(area="hooks", path=p.file, line=p.line, message=f"Claude Code settings: {p.message}")
                for p in self.loaded().problems if p.whole or not whole]

    def problems(self, store: Any) -> list[Problem]:
        loaded = self.loaded()
        if not self.enabled:  # Claude Code's own files are not Kit's business until Kit runs them
            if not loaded.hooks:
                return []
            return [Problem(area="hooks", severity="info",
                            message=f"{len(loaded.hooks)} Claude Code hook(s) in .claude/settings*.json do "
                                    "not run: set hooks.claude_code: true in kit.yaml to run them")]
        out = self.file_problems()
        for hook in loaded.hooks:
            for severity, message, line in hook.located():
                if severity == "error":
                    blocks = " (it blocks what it matches: Kit fails closed)" if hook.event in DECISIONS else ""
                    out.append(Problem(area="hooks", path=hook.file, line=line,
                                       message=f"Claude Code hook {hook.name} cannot run: {message}{blocks}"))
                else:
                    out.append(Problem(area="hooks", severity="warning", path=hook.file, line=line,
                                       message=f"Claude Code hook {hook.name}: {message}"))
        if loaded.hooks and not loaded.disabled_by and not self.is_trusted(store):
            out.append(Problem(area="hooks", severity="warning", path=".claude/settings.json",
                               message="Claude Code hooks are not trusted, so they do not run; review .claude/ "
                                       "and ~/.claude/settings.json, then run `kit hooks trust claude-code`"))
        return out

    def untrusted_notice(self, store: Any) -> str | None:
        if not self.enabled:
            return None
        loaded = self.loaded()
        if not loaded.hooks or loaded.disabled_by or self.is_trusted(store):
            return None
        return ("Claude Code hooks do not run: .claude/settings*.json or ~/.claude/settings.json is not trusted "
                "(review them, then `kit hooks trust claude-code`)")


def _dedupe(hooks: list[ClaudeHook]) -> list[ClaudeHook]:
    """Claude Code runs a handler declared in several files once: the later copies are marked."""
    from dataclasses import replace

    first: dict[tuple[Any, ...], ClaudeHook] = {}
    out = []
    for hook in hooks:
        key = (hook.event, hook.matcher or "", hook.type, hook.shell_command)
        if hook.valid and key in first and first[key].file != hook.file:
            hook = replace(hook, duplicate_of=first[key].file)
        elif hook.valid:
            first.setdefault(key, hook)
        out.append(hook)
    return out


@dataclass
class _Verdict:
    block: bool = False
    reason: str | None = None
    decision: str | None = None  # allow | ask | deny
    updated: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed: bool = False  # the block is Kit failing closed: `errors` and `reason` tell the same incident


def _cannot(hook: ClaudeHook, why: str, decision: bool, *, what: str = "could not be run") -> _Verdict:
    """A hook Kit cannot run, or whose answer it cannot read: on a decision event it blocks (the
    reason says so, and it is the one BLOCK line of the log), elsewhere it is an error."""
    if not decision:
        return _Verdict(errors=[f"{what}: {why}"])
    reason = (f"Claude Code hook {hook.file} {hook.label} {what}: {why}; "
              f"{blocked_what(hook.kit_event or '')} (Kit fails closed)")
    return _Verdict(block=True, reason=reason, decision="deny", errors=[f"{what}: {why}; blocked"], failed=True)


def _cap(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_CONTEXT_CHARS else text[:MAX_CONTEXT_CHARS] + " … [cut at 10,000 chars]"


def interpret(hook: ClaudeHook, returncode: int | None, stdout: str, stderr: str) -> _Verdict:
    """What one handler's exit status and output mean for its event, as Claude Code reads them.
    Stdout is JSON when it starts with `{` and ends with `}`; such stdout that does not parse is
    an error of the hook, and on a decision event it blocks (Kit cannot tell what it meant)."""
    event = hook.event
    decision = event in DECISIONS
    out = stdout.strip()
    data: Any = None
    if looks_like_json(out):
        try:
            data = json.loads(out)
        except json.JSONDecodeError as exc:
            if returncode != 2:  # exit 2 blocks whatever stdout says
                return _cannot(hook, json_problem(exc), decision, what="answered in a way Kit cannot read")
    verdict = _Verdict()
    if returncode == 2:
        reason = None
        if isinstance(data, dict):
            reason = (data.get("hookSpecificOutput") or {}).get("permissionDecisionReason") if isinstance(
                data.get("hookSpecificOutput"), dict) else None
            reason = reason or data.get("reason")
        reason = str(reason or stderr.strip() or "blocked by a Claude Code hook (exit 2)")
        if decision:
            return _Verdict(block=True, reason=reason, decision="deny")
        if event in ("PostToolUse", "PostToolUseFailure"):
            return _Verdict(context=[_cap(reason)])  # the tool ran; the model is told
        return _Verdict(errors=[f"exit 2 ({reason}): {event} cannot be blocked in Kit"])
    if data is None:
        if returncode not in (0, None):
            first = (stderr.strip().splitlines() or [""])[0]
            verdict.errors.append(f"non-blocking error: exit {returncode}" + (f": {first}" if first else ""))
        elif out and event in ("UserPromptSubmit", "SessionStart"):
            verdict.context.append(_cap(out))
        return verdict
    # JSON decides, also on a non-zero exit other than 2: Claude Code reads it only on exit 0, but
    # a deny the hook wrote is not let through (Kit's own command hooks read it the same way); the
    # exit itself is a non-blocking error, logged
    if returncode not in (0, None):
        first = (stderr.strip().splitlines() or [""])[0]
        verdict.errors.append(f"non-blocking error: exit {returncode}" + (f": {first}" if first else ""))
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if isinstance(specific.get("additionalContext"), str) and specific["additionalContext"].strip():
        verdict.context.append(_cap(specific["additionalContext"]))
    if isinstance(data.get("systemMessage"), str) and data["systemMessage"].strip():
        verdict.errors.append(f"system message: {data['systemMessage'].strip()}")
    if decision and data.get("continue") is not None and not isinstance(data["continue"], bool):
        return _cannot(hook, f"continue {json.dumps(data['continue'], default=str)} is not true or false", True,
                       what="answered in a way Kit cannot read")
    if event == "UserPromptSubmit" and data.get("decision") not in (None, "", "block"):
        return _cannot(hook, f"decision {json.dumps(data['decision'], default=str)} is not block", True,
                       what="answered in a way Kit cannot read")
    if data.get("continue") is False:
        verdict.block = decision
        verdict.decision = "deny"
        verdict.reason = str(data.get("stopReason") or "stopped by a Claude Code hook (continue: false)")
        if not decision:
            verdict.errors.append(f"continue: false is not honoured on {event}")
        return verdict
    permission = specific.get("permissionDecision")
    legacy = data.get("decision")
    if event == "PreToolUse":
        said = "permissionDecision"  # the key the hook used, for a message about it
        if permission is None and legacy not in (None, ""):
            said = "decision"
            permission = {"approve": "allow", "block": "deny"}.get(str(legacy), legacy)
        reason = specific.get("permissionDecisionReason") or data.get("reason") or data.get("systemMessage")
        if permission == "deny":
            return _Verdict(block=True, decision="deny", context=verdict.context, errors=verdict.errors,
                            reason=str(reason or "denied by a Claude Code hook (permissionDecision: deny)"))
        if permission in ("ask", "defer"):
            verdict.decision = "ask"
            verdict.reason = str(reason or "a Claude Code hook asks for approval")
        elif permission == "allow":
            verdict.decision = "allow"
        elif permission is not None:
            known = "approve, block, allow, ask or deny" if said == "decision" else "allow, ask, defer or deny"
            return _cannot(hook, f"{said} {(legacy if said == 'decision' else permission)!r} is not {known}", True,
                           what="answered in a way Kit cannot read")
        if "updatedInput" in specific:
            verdict.updated = specific["updatedInput"]
        return verdict
    if event == "UserPromptSubmit" and legacy == "block":
        return _Verdict(block=True, decision="deny", reason=str(data.get("reason") or "blocked by a Claude Code hook"))
    if event in ("PostToolUse", "PostToolUseFailure") and legacy == "block" and data.get("reason"):
        verdict.context.append(_cap(str(data["reason"])))
    elif legacy == "block":
        verdict.errors.append(f"decision: block is not honoured on {event} in Kit")
    return verdict


def _decide(outcome: ClaudeOutcome, verdicts: list[tuple[ClaudeHook, _Verdict]], root: str, tool: str,
            log: Any, kit_event: str) -> None:
    """deny > ask > allow over every handler that ran; an updatedInput Kit cannot map fails closed."""
    for hook, verdict in verdicts:
        if verdict.block:  # logged with the verdicts
            outcome.blocked, outcome.reason, outcome.blocked_by = True, verdict.reason, hook.name
            return
    for hook, verdict in verdicts:
        if verdict.updated is not None:
            try:
                outcome.arguments = cm.kit_arguments(cm.claude_tool_name(tool), verdict.updated, root)
            except cm.Unmappable as exc:
                outcome.blocked, outcome.blocked_by = True, hook.name
                outcome.reason = (f"Claude Code hook {hook.file} {hook.label} rewrote the call in a "
                                  f"way Kit cannot map ({exc}); the call is blocked (Kit fails closed)")
                outcome.errors.append(f"{hook.name}: updatedInput cannot be mapped: {exc}; blocked")
                log("BLOCK", kit_event, hook.name, outcome.reason)
                return
    for hook, verdict in verdicts:
        if verdict.decision == "ask":
            outcome.ask = f"{verdict.reason} ({hook.name})"
            return


def for_workspace(ws: WorkspaceCore) -> ClaudeCodeHooks:
    return ws.owned("hooks.claude_code", lambda: ClaudeCodeHooks(ws))
