"""Call the configured model, falling back in order, with cooldowns that survive restarts.

Order: the primary (`agent.model` or the `model` argument), then `agent.fallbacks`. A candidate
on cooldown is skipped — unless nothing else answers: then the one whose cooldown ends first is
probed once, so a cooldown never refuses a call without trying. What a failure does depends on
its kind (§9):

- rate_limit, overloaded, timeout, unreachable: retryable — that provider/model goes on a
  cooldown of 30 s, then 1 min, then 5 min for each further consecutive failure (kept in
  state.db, table `failover_cooldowns`), and the next candidate is tried.
- auth, auth_permanent, billing, model_not_found: this candidate cannot work as configured — it is
  not retried and gets no cooldown (fixing the key takes effect at once); the next one is tried.
- format, context_overflow: the request itself is the problem, so another model would fail the
  same way — the ProviderError is raised to the caller (the loop compacts on context_overflow).

A success clears that candidate's cooldown. When nothing answered, `NoModelAvailable` carries
one message saying what to set.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from kit import clock
from kit.core import WorkspaceCore
from kit.errors import ConfigError
from kit.paths import CONFIG_FILE
from kit.problems import Problem
from kit.providers.base import ModelResponse, NoModelAvailable, ProviderError
from kit.providers.registry import resolve, settings_for, split_spec
from kit.providers.script import positions_for

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
COOLDOWN_STEPS = (30.0, 60.0, 300.0)  # seconds: 30 s → 1 min → 5 min (and 5 min thereafter)
ESCALATION_RESET_S = 3600.0  # an hour without trouble after a cooldown ends resets the steps
RAISE_KINDS = frozenset({"format", "context_overflow"})

MIGRATIONS = (
    """CREATE TABLE IF NOT EXISTS failover_cooldowns (
        target TEXT PRIMARY KEY,
        until REAL NOT NULL,
        failures INTEGER NOT NULL,
        kind TEXT NOT NULL,
        message TEXT NOT NULL,
        updated REAL NOT NULL
    )""",
)


@dataclass(frozen=True)
class Cooldown:
    target: str  # "provider/model"
    until: float  # epoch seconds (kit.clock)
    failures: int  # consecutive retryable failures
    kind: str
    message: str

    def remaining(self, now: float | None = None) -> float:
        return max(0.0, self.until - (clock.timestamp() if now is None else now))

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "until": self.until, "failures": self.failures,
                "kind": self.kind, "message": self.message, "remaining_s": round(self.remaining(), 1)}


@dataclass(frozen=True)
class Attempt:
    target: str
    outcome: str  # ok | cooldown | <error kind> | config
    message: str = ""
    cause: str = ""  # for a cooldown: the error kind that started it (what the user can fix)
    flag: bool = False  # the spec came from the caller (`kit run --model`), not from kit.yaml


def cooldown_seconds(failures: int) -> float:
    """Cooldown after the n-th consecutive failure (n ≥ 1)."""
    return COOLDOWN_STEPS[min(failures, len(COOLDOWN_STEPS)) - 1]


# ---------------------------------------------------------------------------- state.db


class CooldownStore:
    """Cooldowns in `.kit/state.db`; a short-lived connection per call keeps threads apart."""

    def __init__(self, ws: WorkspaceCore):
        self.ws = ws

    def _db(self):
        db = self.ws.open_state()
        db.migrate("failover", MIGRATIONS)
        return db

    def get(self, target: str) -> Cooldown | None:
        with self._db() as db:
            row = db.execute("SELECT * FROM failover_cooldowns WHERE target = ?", (target,)).fetchone()
        return _row(row) if row else None

    def all(self) -> list[Cooldown]:
        with self._db() as db:
            rows = db.execute("SELECT * FROM failover_cooldowns ORDER BY target").fetchall()
        return [_row(r) for r in rows]

    def record_failure(self, target: str, kind: str, message: str, *, at_least: float | None = None) -> Cooldown:
        """Escalate the cooldown; a server's Retry-After (`at_least`) lengthens it, never shortens."""
        now = clock.timestamp()
        with self._db() as db, db.transaction():
            row = db.execute("SELECT failures, until FROM failover_cooldowns WHERE target = ?", (target,)).fetchone()
            # escalation is for failures in a row: an hour of quiet after the last cooldown starts over
            recent = row is not None and now - float(row["until"]) < ESCALATION_RESET_S
            failures = (int(row["failures"]) if recent else 0) + 1
            until = now + max(cooldown_seconds(failures), at_least or 0.0)
            db.execute(
                "INSERT INTO failover_cooldowns(target, until, failures, kind, message, updated) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(target) DO UPDATE SET until = excluded.until, "
                "failures = excluded.failures, kind = excluded.kind, message = excluded.message, "
                "updated = excluded.updated",
                (target, until, failures, kind, message[:500], now),
            )
        return Cooldown(target, until, failures, kind, message[:500])

    def clear(self, target: str | None = None) -> None:
        with self._db() as db:
            if target is None:
                db.execute("DELETE FROM failover_cooldowns")
            else:
                db.execute("DELETE FROM failover_cooldowns WHERE target = ?", (target,))


def _row(row) -> Cooldown:
    return Cooldown(row["target"], float(row["until"]), int(row["failures"]), row["kind"], row["message"])


# ---------------------------------------------------------------------------- client


def _target(spec: str) -> str:
    provider, model = split_spec(spec)
    return f"script:{model}" if provider == "script" else f"{provider}/{model}"


class FailoverClient:
    """`complete(messages, tools)` against the primary model, then the fallbacks."""

    def __init__(self, ws: WorkspaceCore, model: str | None = None, fallbacks: list[str] | None = None):
        self.ws = ws
        self._model = model
        self._fallbacks = fallbacks
        self.cooldowns = CooldownStore(ws)
        self._providers: dict[str, tuple[Any, str]] = {}
        self._providers_version = -1
        self.last_attempts: list[Attempt] = []

    @property
    def candidates(self) -> list[str]:
        """Primary then fallbacks, read from the current config unless given (hot reload)."""
        primary = self._model or self.ws.config.get("agent.model")
        fallbacks = self._fallbacks if self._fallbacks is not None else self.ws.config.get("agent.fallbacks", [])
        out: list[str] = []
        for spec in [primary, *fallbacks]:
            if spec and spec not in out:
                out.append(spec)
        return out

    def _provider(self, spec: str) -> tuple[Any, str]:
        # rebuilt when the config changes (a new base_url or key env takes effect next call)
        version = self.ws.snapshot.version
        if version != self._providers_version:
            self._providers, self._providers_version = {}, version
        if spec not in self._providers:
            self._providers[spec] = resolve(spec, self.ws.config, positions=positions_for(self.ws))
        return self._providers[spec]

    def _no_model(self, attempts: list[Attempt]) -> NoModelAvailable:
        """The error for a call nothing answered; attempts at the caller's own `model` (the
        `--model` flag) are marked so the advice names the flag, not kit.yaml."""
        if self._model:
            try:
                own = {self._model, _target(self._model)}
            except ConfigError:
                own = {self._model}
            attempts = [replace(a, flag=True) if a.target in own else a for a in attempts]
        return NoModelAvailable(no_model_message(attempts, self.ws.config, flag=bool(self._model)))

    def complete(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> ModelResponse:
        attempts: list[Attempt] = []
        self.last_attempts = attempts
        now = clock.timestamp()
        cooling: list[tuple[Cooldown, str, str]] = []  # (cooldown, spec, target) skipped so far
        for spec in self.candidates:
            try:
                target = _target(spec)
            except ConfigError as exc:
                attempts.append(Attempt(spec, "config", str(exc)))
                continue
            cool = self.cooldowns.get(target)
            if cool is not None and cool.until > now:
                attempts.append(Attempt(target, "cooldown",
                                        f"cooling down {cool.remaining(now):.0f}s more after {cool.kind}",
                                        cause=cool.kind))
                cooling.append((cool, spec, target))
                continue
            response = self._try(spec, target, cool, messages, tools, attempts)
            if response is not None:
                return response
        if cooling:
            # Nothing answered and some candidates were skipped for a cooldown: rather than give up
            # without asking them (a one-model setup would be locked out for up to 5 minutes after,
            # say, Ollama was started), probe the one whose cooldown ends first. A failure
            # escalates its cooldown as usual; a success clears it.
            cool, spec, target = min(cooling, key=lambda item: item[0].until)
            attempts[:] = [a for a in attempts if a.target != target]
            response = self._try(spec, target, cool, messages, tools, attempts)
            if response is not None:
                return response
        raise self._no_model(attempts)

    def preflight(self) -> None:
        """Raise NoModelAvailable now, before a turn's costly preparation (active recall loads the
        embedding model), when no candidate can answer: each is misconfigured, lacks its key, or
        is a local server nothing listens on. Anything uncertain counts as reachable."""
        attempts: list[Attempt] = []
        for spec in self.candidates:
            try:
                target = _target(spec)
                name, _model = split_spec(spec)
                if name == "script":
                    return
                settings = settings_for(name, self.ws.config)
            except ConfigError as exc:
                attempts.append(Attempt(spec, "config", str(exc)))
                continue
            if settings.needs_key and not os.environ.get(settings.api_key_env or ""):
                attempts.append(Attempt(target, "auth", f"{name}: {settings.api_key_env} is not set"))
                continue
            refused = local_refusal(settings.base_url)
            if refused:
                attempts.append(Attempt(target, "unreachable", f"{name}: cannot connect ({refused})"))
                continue
            return
        if attempts:
            self.last_attempts = attempts
            raise self._no_model(attempts)

    def _try(self, spec: str, target: str, cool: Cooldown | None, messages: list[dict[str, Any]],
             tools: Sequence[dict[str, Any]] | None, attempts: list[Attempt]) -> ModelResponse | None:
        """One candidate: its response, or None after recording why it failed (cooling it down
        when the failure is retryable). format / context_overflow are raised to the caller."""
        try:
            provider, model = self._provider(spec)
            response = provider.complete(list(messages), list(tools or []), model=model)
        except ConfigError as exc:
            attempts.append(Attempt(target, "config", str(exc)))
            return None
        except ProviderError as exc:
            attempts.append(Attempt(target, exc.kind, exc.message))
            if exc.kind in RAISE_KINDS:
                raise
            if exc.retryable:
                self.cooldowns.record_failure(target, exc.kind, exc.message, at_least=exc.retry_after)
            return None
        if cool is not None:
            self.cooldowns.clear(target)
        attempts.append(Attempt(target, "ok"))
        if not response.model:
            response = ModelResponse(response.text, response.tool_calls, response.usage, response.finish_reason, target)
        return response


def local_refusal(base_url: str | None) -> str | None:
    """Why a loopback base_url cannot answer ("nothing listens on 127.0.0.1:11434"), or None:
    it accepts connections, is not on this machine, or a proxy may stand in between."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    if parts.hostname not in LOOPBACK or any(os.environ.get(v) for v in PROXY_VARS):
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=1.0):
            return None
    except ConnectionRefusedError:
        return f"nothing listens on {parts.hostname}:{port}"
    except OSError:
        return None


# ---------------------------------------------------------------------------- messages


def _hint(attempt: Attempt, config: Any) -> str | None:
    """What the user should set or start for this failed attempt."""
    where = "--model" if attempt.flag else "agent.model"
    if attempt.outcome == "cooldown":
        # say what to fix (start Ollama, …), not only that there is a wait
        fix = _hint(replace(attempt, outcome=attempt.cause, cause=""), config) if attempt.cause else None
        wait = "it is retried when its cooldown ends (`kit doctor` lists cooldowns)"
        if fix and fix.startswith("wait"):
            return fix  # the fix for a rate limit (…) already is the wait
        return f"{fix} — {wait}" if fix else f"wait: {wait}"
    kind = attempt.outcome
    if kind == "config":
        return "fix the --model value" if attempt.flag else "fix agent.model / agent.fallbacks in kit.yaml"
    if kind in RETRY_HINTS:
        # retryable: the model is fine, the moment is not; the cooldown says when it is tried again
        return (f"wait: {attempt.target} {RETRY_HINTS[kind]}; it is retried when its cooldown ends "
                "(`kit doctor` lists cooldowns)")
    provider = attempt.target.split("/", 1)[0]
    try:
        settings = settings_for(provider, config) if not attempt.target.startswith("script:") else None
    except ConfigError:
        settings = None
    if settings is None:
        return None
    if kind in ("auth", "auth_permanent"):
        return f"set {settings.api_key_env or 'providers.' + provider + '.api_key_env'} to a valid key"
    if kind == "billing":
        return f"check the billing/quota of the {provider} account"
    if kind == "model_not_found":
        model = attempt.target.split("/", 1)[1]
        if settings.type == "ollama":
            return f"pull the model (`ollama pull {model}`) or set {where}"
        return f"set {where} to a model this provider serves"
    if kind == "unreachable" and settings.type == "ollama":
        url = (settings.base_url or "").removesuffix("/v1")
        return f"start Ollama at {url}"
    if kind == "unreachable":
        return f"check providers.{provider}.base_url ({settings.base_url or 'default'}) is reachable"
    return None


RETRY_HINTS = {
    "rate_limit": "is rate-limited",
    "overloaded": "is overloaded",
    "timeout": "timed out (providers.<name>.timeout_s sets the limit)",
}

# (spec, key variable) a user can switch to, in order of preference; see `_example`
EXAMPLES = (
    ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
    ("anthropic/claude-3-5-haiku-latest", "ANTHROPIC_API_KEY"),
    ("ollama/llama3.2", None),
)


def _example(attempts: Sequence[Attempt]) -> str:
    """A model to suggest instead: never one whose provider just failed; one whose key is set
    first, then a local Ollama, then one needing a key (named as still to export)."""
    tried = {a.target.split("/", 1)[0] for a in attempts if "/" in a.target and not a.target.startswith("script:")}
    fresh = [(spec, env) for spec, env in EXAMPLES if spec.split("/", 1)[0] not in tried]
    for spec, env in fresh:
        if env and os.environ.get(env):
            return f"e.g. {spec} — {env} is set"
    for spec, env in fresh:
        if env is None:
            return f"e.g. {spec} with Ollama running"
    for spec, env in fresh:
        return f"e.g. {spec} after exporting {env}"
    return ""


def no_model_message(attempts: Sequence[Attempt], config: Any, *, flag: bool = False) -> str:
    """One line: what was tried, then what to do. `flag`: the primary came from `--model`."""
    if not attempts:
        return "no model configured: set agent.model in kit.yaml (e.g. ollama/llama3.2 or openai/gpt-4o-mini)"
    tried = "; ".join(f"{a.target} {a.outcome}: {a.message}" if a.message else f"{a.target} {a.outcome}" for a in attempts)
    hints: list[str] = []
    for attempt in attempts:
        hint = _hint(attempt, config)
        if hint and hint not in hints:
            hints.append(hint)
    other = ("use a model you can reach with --model or agent.model in kit.yaml" if flag
             else "set agent.model / agent.fallbacks to a model you can reach")
    example = _example(attempts)
    if example:
        other += f" ({example})"
    hints.append(f"or {other}" if hints else other)
    return f"no model available ({tried}). To fix: " + "; ".join(hints) + "."


# ---------------------------------------------------------------------------- doctor


def doctor_checks(ws: WorkspaceCore) -> list[Problem]:
    out = []
    client = FailoverClient(ws)
    for spec in client.candidates:
        try:
            provider, _model = split_spec(spec)
            if provider == "script":
                continue
            settings = settings_for(provider, ws.config)
        except ConfigError as exc:
            out.append(Problem(area="agent", path=CONFIG_FILE, message=str(exc)))
            continue
        import os

        if settings.type in ("openai", "anthropic") and settings.api_key_env and not os.environ.get(settings.api_key_env):
            out.append(Problem(
                area="agent", severity="warning",
                message=f"model {spec}: {settings.api_key_env} is not set",
            ))
    if not (ws.kit_dir / "state.db").exists():
        return out  # doctor only reads: no state yet means no cooldowns
    try:
        now = clock.timestamp()
        for cool in client.cooldowns.all():
            if cool.until > now:
                out.append(
                    Problem(
                        area="agent", severity="info",
                        message=f"{cool.target} is cooling down for {cool.remaining(now):.0f}s "
                                f"after {cool.kind} ({cool.failures} consecutive): {cool.message}",
                    )
                )
    except Exception as exc:  # a locked/corrupt state.db must not break doctor
        out.append(Problem(area="agent", severity="warning", message=f"cannot read cooldowns: {exc}"))
    return out
