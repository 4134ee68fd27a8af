"""The hook registry of a workspace: which hooks exist, and firing events through them.

    outcome = registry_for(ws).fire("tool:before", {"name": "write_file", "arguments": {...}},
                                    session_key="main")
    if outcome.blocked: ...  outcome.reason
    arguments = outcome.data["arguments"]          # possibly rewritten

Hooks run in order: bundled, user, workspace (by name within a root). On a decision event
(tool:before, agent:bootstrap, message:received) each hook sees the data as rewritten by the
ones before it, and the first block ends the pipeline. Every failure (exception, timeout,
non-zero exit, untrusted code skipped) is written to `.kit/logs/hooks.log` and the pipeline
goes on.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kit import clock
from kit.core import WorkspaceCore
from kit.errors import KitError, NotFoundError
from kit.hooks.events import (
    FAIL_CLOSED_EVENTS,
    REWRITABLE,
    HookEvent,
    blocked_what,
    event_matches,
    is_decision,
)
from kit.hooks.runner import RunResult, run_command, run_handler, unread_decision
from kit.hooks.spec import HookSpec, discover
from kit.problems import Problem
from kit.trust import TrustEntry, TrustStore

if TYPE_CHECKING:
    from kit.hooks.claude import ClaudeCodeHooks

LOG_FILE = "logs/hooks.log"  # under .kit/
_log_lock = threading.Lock()


@dataclass(frozen=True)
class HookOutcome:
    blocked: bool
    reason: str | None
    data: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)  # hooks that ran (in order)
    skipped: list[str] = field(default_factory=list)  # "name: why" (untrusted, disabled …)
    blocked_by: str | None = None
    # Claude Code hooks: additionalContext (or plain stdout) for the model, and a PreToolUse `ask`
    context: list[str] = field(default_factory=list)
    ask: str | None = None
    # command:<name>: what the hooks said back to the person ({"reply": …}, or a command's stdout)
    replies: list[str] = field(default_factory=list)
    replied_by: list[str] = field(default_factory=list)  # the hook that gave each reply, in step with `replies`
    # hooks that apply but Kit could not run (a Claude Code handler Kit cannot run, a payload it
    # cannot give one): not in `ran`; on tool:before and message:received such a hook blocks
    not_run: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = {"blocked": self.blocked, "reason": self.reason, "blocked_by": self.blocked_by,
               "data": self.data, "errors": self.errors, "ran": self.ran, "skipped": self.skipped}
        if self.context:
            out["context"] = self.context
        if self.ask:
            out["ask"] = self.ask
        if self.replies:
            out["replies"] = self.replies
            out["replied_by"] = self.replied_by
        if self.not_run:
            out["not_run"] = self.not_run
        return out


class HookRegistry:
    def __init__(self, ws: WorkspaceCore, hooks: list[HookSpec]):
        self.ws = ws
        self.hooks = hooks
        self.trust_store = TrustStore()

    # ------------------------------------------------------------------ queries

    def listing(self) -> list[dict[str, Any]]:
        """`kit hooks list`: each hook's JSON plus whether it is trusted and whether it runs
        (valid, enabled and trusted)."""
        rows = []
        for hook in self.hooks:
            row = hook.to_json()
            row["trusted"] = self.is_trusted(hook) if hook.valid else None
            row["runs"] = bool(hook.valid and hook.enabled and row["trusted"])
            rows.append(row)
        return rows + self.claude.listing(self.trust_store)

    def settings_problems(self, *, whole: bool = False) -> list[Problem]:
        """With hooks.claude_code: what keeps Claude Code settings files' hooks from running, at file
        and line (`whole`: only what keeps a whole file out, a file whose JSON does not parse).
        Empty when the flag is off."""
        if not self.ws.config.hooks.claude_code:  # off: kit.hooks.claude is not even imported
            return []
        return self.claude.file_problems(whole=whole)

    def get(self, name: str) -> HookSpec:
        for hook in self.hooks:
            if hook.name == name:
                return hook
        known = ", ".join(h.name for h in self.hooks) or "none"
        raise NotFoundError(f"no hook named {name!r} (known: {known})")

    def valid(self) -> list[HookSpec]:
        return [h for h in self.hooks if h.valid]

    def invalid(self) -> list[HookSpec]:
        return [h for h in self.hooks if not h.valid]

    def for_event(self, event_type: str) -> list[HookSpec]:
        return [h for h in self.hooks if h.valid and any(event_matches(p, event_type) for p in h.events)]

    def command_hooks(self, name: str) -> list[str]:
        """The hooks that add the slash command `/name`: their events name it (`command:name`, or
        a glob such as `command:deploy-*`). Hooks on every command (`command`, `command:*`, `*`,
        the bundled command-logger) see it too, but do not make an unknown name a command."""
        import fnmatch

        event = f"command:{name}"
        out = []
        for hook in self.for_event(event):
            if any(p == event or (p not in ("*", "command:*") and any(c in p for c in "*?[")
                                  and fnmatch.fnmatchcase(event, p)) for p in hook.events):
                out.append(hook.name)
        return out

    def is_trusted(self, hook: HookSpec, digest: str | None = None) -> bool:
        if not hook.needs_trust:
            return True
        return self.trust_store.is_trusted("hook", hook.name, digest or hook.digest())

    def untrusted(self) -> list[HookSpec]:
        """Valid, enabled workspace hooks whose current code is not trusted (ask the user)."""
        return [h for h in self.valid() if h.enabled and not self.is_trusted(h)]

    def trust(self, name: str) -> TrustEntry | None:
        """Trust the hook's current content; None for hooks that need no trust (bundled, user).
        An invalid hook is refused with its validation errors: it cannot run, so there is nothing
        to allow yet (fix HOOK.md, then trust what you fixed).

        `claude-code` trusts the Claude Code settings files (and .claude/hooks/) as they are now."""
        from kit.hooks.claude import TRUST_NAME

        if name == TRUST_NAME and not any(h.name == name for h in self.hooks):
            if not self.claude.hooks:
                unread = "; ".join(str(p) for p in self.claude.file_problems())
                raise NotFoundError("no Claude Code hooks to trust: no 'hooks' in .claude/settings.json, "
                                    ".claude/settings.local.json or ~/.claude/settings.json"
                                    + (f" that Kit can read ({unread})" if unread else ""))
            return self.claude.trust(self.trust_store)
        hook = self.get(name)
        if not hook.valid:
            raise KitError(f"hook {name!r} is invalid, so it is not trusted: {'; '.join(hook.errors)} "
                           f"(fix it, then run `kit hooks trust {name}`)",
                           path=hook.display_path, line=hook.line)
        if not hook.needs_trust:
            return None
        return self.trust_store.trust("hook", hook.name, hook.digest(), str(hook.dir))

    def ask_trust(self, confirm: Callable[[HookSpec], bool]) -> list[str]:
        """The REPL's first prompt: offer each untrusted hook to `confirm(hook)`; trust the
        ones it accepts and return their names. Nothing is trusted without a yes."""
        accepted = []
        for hook in self.untrusted():
            if confirm(hook):
                self.trust(hook.name)
                accepted.append(hook.name)
        return accepted

    def documented_data(self, event_type: str, data: dict[str, Any], *,
                        session_key: str | None = None) -> dict[str, Any]:
        """`data` with the event's documented fields it lacks filled with defaults, as Kit would
        send them (`kit hooks fire`); what `data` has wins (kit.hooks.events.documented_data)."""
        from kit.hooks.events import documented_data

        return documented_data(event_type, data, session_key=session_key, ws=self.ws)

    def timeout_for(self, hook: HookSpec) -> float:
        return float(hook.timeout_s or self.ws.config.hooks.timeout_s)

    # ------------------------------------------------------------------ firing

    @property
    def claude(self) -> ClaudeCodeHooks:
        """The hooks of .claude/settings*.json and ~/.claude/settings.json (hooks.claude_code)."""
        from kit.hooks.claude import for_workspace

        return for_workspace(self.ws)

    def fire(self, event_type: str, data: dict[str, Any] | None = None, *, session_key: str | None = None) -> HookOutcome:
        """Kit's hooks, then (hooks.claude_code) Claude Code's on the same event: a block by
        either ends it; Claude Code's see the data as Kit's hooks rewrote it."""
        outcome = self._fire_own(event_type, data, session_key=session_key)
        hooks = self.ws.config.hooks
        # the flag first: without it kit.hooks.claude is never imported (every turn fires hooks)
        if outcome.blocked or not hooks.enabled or not hooks.claude_code or not self.claude.enabled:
            return outcome
        claude = self.claude.fire(event_type, outcome.data, session_key=session_key, store=self.trust_store,
                                  log=self.log)
        data_out = outcome.data
        if claude.arguments is not None and event_type == "tool:before":
            data_out = {**data_out, "arguments": claude.arguments}
        return replace(outcome, blocked=claude.blocked, reason=claude.reason, blocked_by=claude.blocked_by,
                       data=data_out, errors=outcome.errors + claude.errors, ran=outcome.ran + claude.ran,
                       skipped=outcome.skipped + claude.skipped, context=outcome.context + claude.context,
                       ask=claude.ask, not_run=outcome.not_run + claude.not_run)

    def _fire_own(self, event_type: str, data: dict[str, Any] | None = None, *,
                  session_key: str | None = None) -> HookOutcome:
        data = _copy(dict(data or {}))
        errors: list[str] = []
        ran: list[str] = []
        skipped: list[str] = []
        replies: list[str] = []
        replied_by: list[str] = []
        if not self.ws.config.hooks.enabled:
            return HookOutcome(False, None, data, errors, ran, ["*: hooks.enabled is false"])
        decision = is_decision(event_type)
        for hook in self.for_event(event_type):
            if not hook.enabled:
                skipped.append(f"{hook.name}: disabled")
                continue
            digest = hook.digest()
            if not self.is_trusted(hook, digest):
                why = f"untrusted workspace code (run `kit hooks trust {hook.name}` after reviewing it)"
                skipped.append(f"{hook.name}: {why}")
                self.log("SKIP", event_type, hook.name, why)
                continue
            event = HookEvent(
                type=event_type,
                timestamp=clock.now().isoformat(timespec="seconds"),
                workspace=str(self.ws.root),
                session_key=session_key,
                data=_copy(data),
            )
            timeout = self.timeout_for(hook)
            result = (
                run_command(hook, event, timeout) if hook.command else run_handler(hook, event, timeout, digest)
            )
            ran.append(hook.name)
            if result.output:  # printed by a handler, or a command's plain stdout: the log, not Kit's stdout
                self.log("OUTPUT", event_type, hook.name, result.output[-2000:])
            if result.ended:
                self.log("ENDED", event_type, hook.name,
                         f"{result.ended} process(es) the command left running were ended with it")
            if event_type.startswith("command:"):
                reply = result.value.get("reply") if isinstance(result.value, dict) else None
                if isinstance(reply, str) and reply.strip():
                    replies.append(reply)
                    replied_by.append(hook.name)
                elif hook.command and result.output and not result.error and not result.output.startswith("[stderr] "):
                    replies.append(result.output)
                    replied_by.append(hook.name)
            unread = unread_decision(result.value) if event_type in FAIL_CLOSED_EVENTS and not result.error else None
            if event_type in FAIL_CLOSED_EVENTS and (unread or (result.error and (result.unreadable or result.not_run))):
                # the hook answered, but Kit cannot tell what it meant, or it never answered: it
                # may have said no
                problem = unread or result.error
                errors.append(f"{hook.name}: {problem}; blocked")
                what = "could not be run" if result.not_run else "answered in a way Kit cannot read"
                reason = f"hook {hook.name} {what}: {problem}; {blocked_what(event_type)} (Kit fails closed)"
                self.log("BLOCK", event_type, hook.name, reason)  # one line for the incident
                return HookOutcome(True, reason, data, errors, ran, skipped, hook.name,
                                   replies=replies, replied_by=replied_by)
            if result.error:
                errors.append(f"{hook.name}: {result.error}")
                self.log("ERROR", event_type, hook.name, result.error)
                continue
            if result.blocked:
                if decision:
                    self.log("BLOCK", event_type, hook.name, result.reason or "")
                    return HookOutcome(True, result.reason, data, errors, ran, skipped, hook.name,
                                       replies=replies, replied_by=replied_by)
                self.log("WARN", event_type, hook.name, f"block ignored: {event_type} is not a decision event")
                continue
            if decision:
                problem = _apply(event_type, data, result)
                if problem:
                    errors.append(f"{hook.name}: {problem}")
                    self.log("ERROR", event_type, hook.name, problem)
        return HookOutcome(False, None, data, errors, ran, skipped, replies=replies, replied_by=replied_by)

    def log(self, level: str, event_type: str, hook: str, message: str) -> None:
        line = f"{clock.now().isoformat(timespec='seconds')} {level} {event_type} hook={hook}: {message}"
        path = self.ws.kit_dir / LOG_FILE
        with _log_lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line.replace("\n", " ⏎ ") + "\n")


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    """A hook's own copy of the data; objects that cannot be deep-copied are shared as they are."""
    try:
        return copy.deepcopy(data)
    except Exception:
        return {k: _copy(v) if isinstance(v, dict) else v for k, v in data.items()}


def _apply(event_type: str, data: dict[str, Any], result: RunResult) -> str | None:
    """Fold a decision hook's return value into `data`; a problem message for a bad value."""
    value = result.value
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"returned {type(value).__name__}, expected a dict or None; ignored"
    key = REWRITABLE[event_type]
    if event_type == "agent:bootstrap":
        return _apply_bootstrap(data, value)
    if key in value:
        new = value[key]
        expected = dict if key == "arguments" else str
        if not isinstance(new, expected):
            return f"'{key}' must be a {expected.__name__}; ignored"
        data[key] = new
    return None


def _apply_bootstrap(data: dict[str, Any], value: dict[str, Any]) -> str | None:
    """agent:bootstrap: {"files": [...]} replaces; {"remove": [names]} and {"add": [files]} edit.
    A file is {"name": str, "content": str}; adding an existing name rewrites it."""
    files = list(data.get("files") or [])
    if "files" in value:
        new = value["files"]
        if not isinstance(new, list) or not all(_is_file(f) for f in new):
            return "'files' must be a list of {name, content}; ignored"
        files = [dict(f) for f in new]
    remove = value.get("remove") or []
    if not isinstance(remove, list):
        return "'remove' must be a list of file names; ignored"
    files = [f for f in files if f.get("name") not in set(remove)]
    add = value.get("add") or []
    if not isinstance(add, list) or not all(_is_file(f) for f in add):
        return "'add' must be a list of {name, content}; ignored"
    for item in add:
        files = [f for f in files if f.get("name") != item["name"]] + [dict(item)]
    data["files"] = files
    return None


def _is_file(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("content"), str)


def registry_for(ws: WorkspaceCore) -> HookRegistry:
    """The registry for the workspace's current snapshot (cached per version)."""
    return ws.cached("hooks.registry", lambda: HookRegistry(ws, discover(ws)))


def fire_hook(ws: WorkspaceCore, event: str, data: dict[str, Any], *, session_key: str | None = None) -> HookOutcome:
    """Fire `event` at the workspace's hooks (what the agent loop and the tools call)."""
    return registry_for(ws).fire(event, data, session_key=session_key)


def doctor_checks(ws: WorkspaceCore) -> list[Problem]:
    registry = registry_for(ws)
    out = []
    if not ws.config.hooks.enabled:
        out.append(Problem(area="hooks", severity="info", message="hooks are disabled (hooks.enabled: false)"))
    for hook in registry.hooks:
        # each HOOK.md problem as `kit hooks list --json` has it, at its key's line, in the same
        # words as the snapshot's (a broken YAML is then reported once: doctor keeps the hooks one)
        out.extend(replace(p, details={}) for p in hook.problems)  # doctor's JSON: the same keys for every area
    out.extend(registry.claude.problems(registry.trust_store))
    for hook in registry.untrusted():
        out.append(
            Problem(
                area="hooks", severity="warning", path=hook.display_path,
                message=f"hook {hook.name!r} has workspace code that is not trusted, so it does not run; "
                        f"review hooks/{hook.name}/ and run `kit hooks trust {hook.name}`",
            )
        )
    return out
