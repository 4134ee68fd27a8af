"""Call the configured model, retrying it, then falling back in order, with cooldowns that
survive restarts. Replies stream: `stream()` yields kit.providers.events, `complete()` drains.

Order: the primary (`agent.model` or the `model` argument), then `agent.fallbacks`. A candidate
on cooldown is skipped — unless nothing else answers: then the one whose cooldown ends first is
probed once, so a cooldown never refuses a call without trying. What a failure does depends on
its kind (§9):

- rate_limit, overloaded, timeout, dropped: retried on the same model first (tenacity:
  exponential backoff with jitter, never sooner than the server's Retry-After, up to
  agent.retry.max_attempts requests and agent.retry.max_wait_s of waiting; each retry is a
  `Retry` event). Once the retries are spent — and at once for `unreachable`, where nothing
  accepts the connection — that provider/model goes on a cooldown of 30 s, then 1 min, then
  5 min for each further consecutive failure (kept in state.db, table `failover_cooldowns`),
  and the next candidate is tried; when it answers, a `Failover` event says so.
- auth, auth_permanent, billing, model_not_found: this candidate cannot work as configured — it is
  not retried and gets no cooldown (fixing the key takes effect at once); the next one is tried.
- format, context_overflow: the request itself is the problem, so another model would fail the
  same way — the ProviderError is raised to the caller (the loop compacts on context_overflow).

A success clears that candidate's cooldown. When nothing answered, `NoModelAvailable` carries
one message saying what to set. A reply that broke off after text was already yielded is not
retried (that would repeat it): `StreamInterrupted` carries the partial reply.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from kit import clock
from kit.config import url_without_secrets
from kit.core import WorkspaceCore
from kit.errors import ConfigError
from kit.paths import CONFIG_FILE, user_config_file
from kit.problems import Problem, located
from kit.providers.base import (
    RETRY_SAME_MODEL,
    Attempt,
    GenerationSettings,
    ModelResponse,
    NoModelAvailable,
    ProviderError,
    StreamInterrupted,
)
from kit.providers.calibration import ModelStats, ModelStatsStore, next_factor
from kit.providers.events import (
    VISIBLE,
    Assembler,
    Failover,
    ModelCall,
    Notice,
    Reply,
    Retry,
    drain,
)
from kit.providers.registry import (
    LOOPBACK,
    ProviderSettings,
    check_spec,
    generation_for,
    is_loopback,
    resolve,
    settings_for,
    split_spec,
)
from kit.providers.script import positions_for
from kit.providers.toolcheck import (
    dropped_by_usage,
    dropped_message,
    probe_template,
    userinfo_as_header,
)
from kit.tokens import messages_tokens, tools_tokens

if TYPE_CHECKING:  # pragma: no cover
    from tenacity import RetryCallState, Retrying

    from kit.state import StateDB

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
    # the provider configuration a cooldown is for (ProviderSettings.fingerprint): rows from before
    # it have '' and match no configuration, so they are ignored
    "ALTER TABLE failover_cooldowns ADD COLUMN config TEXT NOT NULL DEFAULT ''",
)
SCRIPT_FINGERPRINT = "script"  # a script has no provider settings: its cooldowns always apply


@dataclass(frozen=True)
class Cooldown:
    target: str  # "provider/model"
    until: float  # epoch seconds (kit.clock)
    failures: int  # consecutive retryable failures
    kind: str
    message: str
    config: str = ""  # the provider's fingerprint when it failed (never the key)

    def remaining(self, now: float | None = None) -> float:
        return max(0.0, self.until - (clock.timestamp() if now is None else now))

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "until": self.until, "failures": self.failures,
                "kind": self.kind, "message": self.message, "remaining_s": round(self.remaining(), 1)}


def cooldown_seconds(failures: int) -> float:
    """Cooldown after the n-th consecutive failure (n ≥ 1)."""
    return COOLDOWN_STEPS[min(failures, len(COOLDOWN_STEPS)) - 1]


# ---------------------------------------------------------------------------- state.db


class CooldownStore:
    """Cooldowns in `.kit/state.db`; a short-lived connection per call keeps threads apart."""

    def __init__(self, ws: WorkspaceCore):
        self.ws = ws

    def _db(self) -> StateDB:
        return self.ws.open_state("failover", MIGRATIONS)

    def fingerprint(self, target: str) -> str | None:
        """The configuration `target`'s cooldowns are for (its provider's base_url, type and key
        variable, hashed); None when no provider of that name is configured any more."""
        if target.startswith("script:"):
            return SCRIPT_FINGERPRINT
        try:
            return settings_for(target.split("/", 1)[0], self.ws.config).fingerprint
        except ConfigError:
            return None

    def get(self, target: str) -> Cooldown | None:
        """`target`'s cooldown, if it was recorded under the provider's current configuration:
        a fixed base_url (or key variable) is tried at once, as a fixed key is."""
        with self._db() as db:
            row = db.execute("SELECT * FROM failover_cooldowns WHERE target = ?", (target,)).fetchone()
        cool = _row(row) if row else None
        return cool if cool is not None and cool.config == self.fingerprint(target) else None

    def all(self) -> list[Cooldown]:
        """The cooldowns that still apply: of models whose provider is configured as it was then."""
        with self._db() as db:
            rows = db.execute("SELECT * FROM failover_cooldowns ORDER BY target").fetchall()
        return [cool for cool in map(_row, rows) if cool.config == self.fingerprint(cool.target)]

    def record_failure(self, target: str, kind: str, message: str, *, at_least: float | None = None) -> Cooldown:
        """Escalate the cooldown; a server's Retry-After (`at_least`) lengthens it, never shortens."""
        now = clock.timestamp()
        config = self.fingerprint(target) or ""
        with self._db() as db, db.transaction():
            row = db.execute("SELECT failures, until, config FROM failover_cooldowns WHERE target = ?",
                             (target,)).fetchone()
            # escalation is for failures in a row of one configuration: an hour of quiet after the
            # last cooldown, or a changed provider, starts over
            recent = (row is not None and row["config"] == config
                      and now - float(row["until"]) < ESCALATION_RESET_S)
            failures = (int(row["failures"]) if recent else 0) + 1
            until = now + max(cooldown_seconds(failures), at_least or 0.0)
            db.execute(
                "INSERT INTO failover_cooldowns(target, until, failures, kind, message, updated, config) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(target) DO UPDATE SET until = excluded.until, "
                "failures = excluded.failures, kind = excluded.kind, message = excluded.message, "
                "updated = excluded.updated, config = excluded.config",
                (target, until, failures, kind, message[:500], now, config),
            )
        return Cooldown(target, until, failures, kind, message[:500], config)

    def clear(self, target: str | None = None) -> None:
        with self._db() as db:
            if target is None:
                db.execute("DELETE FROM failover_cooldowns")
            else:
                db.execute("DELETE FROM failover_cooldowns WHERE target = ?", (target,))


def _row(row) -> Cooldown:
    return Cooldown(row["target"], float(row["until"]), int(row["failures"]), row["kind"], row["message"],
                    row["config"])


# ---------------------------------------------------------------------------- client


def _target(spec: str) -> str:
    provider, model = split_spec(spec)
    return f"script:{model}" if provider == "script" else f"{provider}/{model}"


class FailoverClient:
    """`stream(messages, tools)` / `complete(messages, tools)` against the primary model, then
    the fallbacks; each model is retried on retryable errors before the next one is asked."""

    def __init__(self, ws: WorkspaceCore, model: str | None = None, fallbacks: list[str] | None = None, *,
                 generation: GenerationSettings | None = None, sleep: Callable[[float], None] | None = None,
                 model_flag: str | None = None):
        self.ws = ws
        self._model = model
        # how the caller's `model` was given, for the advice: a CLI passes its flag ("--model");
        # a library caller gets advice that names no command line
        self.model_flag = model_flag
        self._fallbacks = fallbacks
        # the run's own settings (kit run --max-tokens / --temperature): over every config level
        self.generation = generation
        self.cooldowns = CooldownStore(ws)
        self.stats = ModelStatsStore(ws)
        self._sleep = sleep if sleep is not None else time.sleep  # tests pass a recorder
        self._providers: dict[str, tuple[Any, str]] = {}
        self._providers_version = -1
        self._stats_cache: dict[str, ModelStats] = {}
        self._probed: set[str] = set()
        self.last_attempts: list[Attempt] = []
        self.last_target: str | None = None

    @property
    def candidates(self) -> list[str]:
        """Primary then fallbacks, read from the current config unless given (hot reload)."""
        primary = self._model or self.ws.config.agent.model
        fallbacks = self._fallbacks if self._fallbacks is not None else self.ws.config.agent.fallbacks
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
            try:
                self._providers[spec] = resolve(spec, self.ws.config, positions=positions_for(self.ws),
                                                  root=self.ws.root)
            except ConfigError as exc:
                raise left_out(self.ws, spec.partition("/")[0], exc) from None
        return self._providers[spec]

    def _no_model(self, attempts: list[Attempt]) -> NoModelAvailable:
        """The error for a call nothing answered; attempts at the caller's own `model` are marked
        so the advice names where that model came from, not kit.yaml. When a configuration file
        did not load, the model asked was not the one it names: that is what to fix."""
        if self._model:
            try:
                own = {self._model, _target(self._model)}
            except ConfigError:
                own = {self._model}
            attempts = [replace(a, flag=True) if a.target in own else a for a in attempts]
        not_loaded = None if self._model else unloaded_config(self.ws)
        return NoModelAvailable(no_model_message(attempts, self.ws.config, flag=bool(self._model),
                                                 model_flag=self.model_flag, not_loaded=not_loaded))

    # ------------------------------------------------------------------ calling

    def complete(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None, *,
                 on_event: Callable[[Any], None] | None = None) -> ModelResponse:
        """The reply, not streamed (`on_event` still sees every event on the way)."""
        return drain(self.stream(messages, tools), on_event)

    def stream(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> Iterator[Any]:
        """Events of one model call (kit.providers.events); the last is `Reply`. Raises
        NoModelAvailable when nothing answered, ProviderError for a request no model can serve
        (format, context_overflow), StreamInterrupted when a reply broke off after it began."""
        attempts: list[Attempt] = []
        self.last_attempts = attempts
        now = clock.timestamp()
        cooling: list[tuple[Cooldown, str, str]] = []  # (cooldown, spec, target) skipped so far
        for spec in self.candidates:
            try:
                target = _target(spec)
            except ConfigError as exc:
                attempts.append(_config_attempt(spec, exc))
                continue
            cool = self.cooldowns.get(target)
            if cool is not None and cool.until > now:
                attempts.append(Attempt(target, "cooldown",
                                        f"cooling down {cool.remaining(now):.0f}s more after {cool.kind}",
                                        cause=cool.kind))
                cooling.append((cool, spec, target))
                continue
            answered = yield from self._candidate(spec, target, cool, messages, tools, attempts)
            if answered:
                return
        if cooling:
            # Nothing answered and some candidates were skipped for a cooldown: rather than give up
            # without asking them (a one-model setup would be locked out for up to 5 minutes after,
            # say, Ollama was started), probe the one whose cooldown ends first. A failure
            # escalates its cooldown as usual; a success clears it.
            cool, spec, target = min(cooling, key=lambda item: item[0].until)
            attempts[:] = [a for a in attempts if a.target != target]
            answered = yield from self._candidate(spec, target, cool, messages, tools, attempts)
            if answered:
                return
        raise self._no_model(attempts)

    def _retrying(self, target: str, pending: list[Retry], attempts: list[Attempt]) -> Retrying:
        """tenacity's policy for one model: retryable errors (RETRY_SAME_MODEL) again after an
        exponential pause with jitter, never shorter than the server's Retry-After, until
        agent.retry.max_attempts requests or agent.retry.max_wait_s of pauses. tenacity decides;
        the pause itself happens in `_candidate`, after the Retry event has been yielded (a
        person sees "retrying in 2.0 s" before the wait, not after)."""
        # imported here: tenacity brings asyncio along, and doctor or a prompt needs neither
        from tenacity import (
            Retrying,
            retry_if_exception,
            stop_after_attempt,
            wait_exponential,
            wait_random,
        )

        retry = self.ws.config.agent.retry
        max_attempts, max_wait, backoff = retry.max_attempts, retry.max_wait_s, retry.backoff_s
        # backoff, 2 × backoff, 4 × backoff … plus up to one backoff of jitter
        jittered = wait_exponential(multiplier=backoff, max=max(backoff, max_wait)) + wait_random(0, backoff)

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            asked = getattr(error, "retry_after", None) or 0.0
            return max(jittered(state), float(asked))

        def over_budget(state: RetryCallState) -> bool:
            return state.idle_for + state.upcoming_sleep > max_wait

        def before_sleep(state: RetryCallState) -> None:
            error = state.outcome.exception()
            if attempts and attempts[-1].target == target:
                attempts[-1] = replace(attempts[-1], wait_s=state.upcoming_sleep)
            pending.append(Retry(target, state.attempt_number, max_attempts, state.upcoming_sleep,
                                 error.kind, error.message))

        return Retrying(
            stop=stop_after_attempt(max_attempts) | over_budget,
            wait=wait,
            retry=retry_if_exception(_retry_same_model),
            before_sleep=before_sleep,
            sleep=lambda seconds: None,  # see the docstring: _candidate sleeps
            reraise=True,
        )

    def _candidate(self, spec: str, target: str, cool: Cooldown | None, messages: list[dict[str, Any]],
                   tools: Sequence[dict[str, Any]] | None, attempts: list[Attempt]) -> Iterator[Any]:
        """One candidate, retried per `_retrying`: yields its events and returns True when it
        answered; returns False after recording why it failed (cooling it down when the failure
        is retryable). format / context_overflow / interrupted are raised to the caller."""
        try:
            provider, model = self._provider(spec)
            generation = generation_for(spec, self.ws.config, self.generation)
        except ConfigError as exc:
            attempts.append(_config_attempt(target, exc))
            return False
        notice = self._probe_first(spec, target, tools)
        if notice is not None:  # before the request: the warning is read before the reply, not in it
            yield notice
        stats = self._stats(target)
        estimate = stats.estimate(list(messages), list(tools or []))
        pending: list[Retry] = []
        response: ModelResponse | None = None
        try:
            for attempt in self._retrying(target, pending, attempts):
                with attempt:
                    for retry in pending:
                        yield retry
                        self._sleep(retry.wait_s)
                    pending.clear()
                    response = yield from self._once(provider, model, target, messages, tools, generation,
                                                     attempts, attempt.retry_state.attempt_number)
        except StreamInterrupted as exc:
            self.cooldowns.record_failure(target, "dropped", exc.message)
            exc.partial = replace(exc.partial, attempts=tuple(attempts), max_tokens=generation.max_tokens)
            raise
        except ProviderError as exc:
            if exc.kind in RAISE_KINDS:
                raise
            if exc.retryable:
                self.cooldowns.record_failure(target, exc.kind, exc.message, at_least=exc.retry_after)
            return False
        assert response is not None
        if cool is not None:
            self.cooldowns.clear(target)
        notice = self._learn(spec, target, stats, list(messages), list(tools or []), response)
        if notice is not None:
            yield notice
        self.last_target = target
        if target.startswith("script:"):
            estimate = 0  # the script's token counts are made up: there is nothing to measure against
        yield Reply(replace(response, model=response.model or target, attempts=tuple(attempts),
                            estimated_prompt_tokens=estimate, max_tokens=generation.max_tokens))
        return True

    def _once(self, provider: Any, model: str, target: str, messages: list[dict[str, Any]],
              tools: Sequence[dict[str, Any]] | None, generation: GenerationSettings,
              attempts: list[Attempt], number: int) -> Iterator[Any]:
        """One request: its events as they come (a Failover line first when earlier candidates
        failed); returns the assembled reply. An error before anything visible is raised as is
        (it may be retried); after visible events it becomes StreamInterrupted with the partial."""
        yield ModelCall(target, number)
        others = tuple(a for a in attempts if a.target != target)
        announced = not others
        acc = Assembler(target)
        reply: ModelResponse | None = None
        events = provider.stream(list(messages), list(tools or []), model=model, generation=generation)
        try:
            for event in events:
                if isinstance(event, Reply):
                    reply = event.response
                    continue
                if not announced and isinstance(event, VISIBLE):
                    announced = True
                    yield Failover(target, others)
                acc.feed(event)
                yield event
        except ProviderError as exc:
            attempts.append(Attempt(target, exc.kind, exc.message))
            if acc.visible:
                raise StreamInterrupted(f"{exc.message} — the reply broke off; what arrived is kept",
                                        provider=exc.provider, partial=acc.partial()) from exc
            raise
        finally:
            # the caller stopped early (Ctrl-C) or the stream failed: close the HTTP response now,
            # so the server stops generating, rather than whenever the generator is collected
            close = getattr(events, "close", None)
            if close is not None:
                close()
        if reply is None:
            reply = acc.response()
        if not announced:
            yield Failover(target, others)
        attempts.append(Attempt(target, "ok"))
        return reply

    # ------------------------------------------------------------------ what Kit learns

    def _stats(self, target: str) -> ModelStats:
        if target not in self._stats_cache:
            try:
                self._stats_cache[target] = self.stats.get(target)
            except Exception:  # noqa: BLE001 - a locked state.db must not stop a call
                self._stats_cache[target] = ModelStats(target)
        return self._stats_cache[target]

    def estimate_tokens(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None,
                        target: str | None = None) -> int:
        """Kit's estimate of a request, calibrated for `target` (default: the model that answered
        last, else the primary) from the prompt_tokens its server reported."""
        if target is None:
            target = self.last_target
            if target is None and self.candidates:
                try:
                    target = _target(self.candidates[0])
                except ConfigError:
                    target = None
        if target is None:
            return ModelStats("").estimate(list(messages), list(tools or []))
        return self._stats(target).estimate(list(messages), list(tools or []))

    def _checks_tools(self, spec: str) -> tuple[bool, str | None]:
        """(check whether tools are rendered, base_url to probe): OpenAI-compatible servers only —
        the hosted APIs render tools."""
        name, _model = split_spec(spec)
        if name == "script":
            return False, None
        try:
            settings = settings_for(name, self.ws.config)
        except ConfigError:
            return False, None
        if settings.type == "anthropic" or not settings.base_url or "api.openai.com" in settings.base_url:
            return False, None
        return True, settings.base_url

    def _probe_first(self, spec: str, target: str, tools: Sequence[dict[str, Any]] | None) -> Notice | None:
        """Before the first request with tools to a model whose template Kit knows nothing about
        yet: ask llama.cpp's /apply-template whether it renders them (definitive, no generation),
        so a dropped-tools Notice comes before the reply's text. Once per model and process; a
        server without the endpoint is judged by `_learn` after the reply instead."""
        if not tools or target.startswith("script:") or target in self._probed:
            return None
        stats = self._stats(target)
        check, base_url = self._checks_tools(spec)
        if not check or not base_url or stats.tools_rendered is not None:
            # known either way: nothing to warn before the reply (a model found dropping them was
            # warned once already; `_learn` still asks after a reply whether it was fixed)
            return None
        self._probed.add(target)
        rendered = probe_template(base_url)
        if rendered is None:
            return None
        return self._judged(stats, rendered)

    def _judged(self, stats: ModelStats, rendered: bool | None) -> Notice | None:
        """Record whether `stats.target`'s server renders tools; the Notice the first time not."""
        new = replace(stats, tools_rendered=rendered)
        notice = None
        if rendered is False and not stats.tools_warned:
            notice = Notice(stats.target, "tools_dropped", dropped_message(stats.target))
            new = replace(new, tools_warned=True)
        elif rendered is True:
            new = replace(new, tools_warned=False)  # warn again should it break later
        self._save(stats, new)
        return notice

    def _save(self, old: ModelStats, new: ModelStats) -> None:
        if new != old:
            self._stats_cache[new.target] = new
            try:
                self.stats.save(new)
            except Exception:  # noqa: BLE001 - a locked state.db must not lose the reply
                pass

    def _learn(self, spec: str, target: str, stats: ModelStats, messages: list[dict[str, Any]],
               tools: list[dict[str, Any]], response: ModelResponse) -> Notice | None:
        """After a reply: did the server render the tools (a Notice the first time it did not),
        and move the token factor towards the server's prompt_tokens. Persisted in state.db.
        Not for the script provider: its token counts are made up."""
        if target.startswith("script:"):
            return None
        rendered = stats.tools_rendered
        check, base_url = self._checks_tools(spec) if tools else (False, None)
        if check:
            if response.tool_calls:
                rendered = True
            elif rendered is not True:  # a call seen once is proof enough
                probed = None
                if target not in self._probed and base_url:
                    self._probed.add(target)
                    probed = probe_template(base_url)
                if probed is not None:
                    rendered = probed
                elif rendered is None:
                    dropped = dropped_by_usage(response.usage.prompt_tokens, messages_tokens(messages),
                                               tools_tokens(tools))
                    rendered = None if dropped is None else not dropped
        notice = self._judged(stats, rendered)
        judged = self._stats(target)
        real = response.usage.prompt_tokens
        if real > 0:
            factor = next_factor(judged.token_factor, judged.raw_estimate(messages, tools), real)
            self._save(judged, replace(judged, token_factor=factor, samples=judged.samples + 1))
        return notice

    # ------------------------------------------------------------------ preflight

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
                settings = provider_settings(self.ws, name)
            except ConfigError as exc:
                attempts.append(_config_attempt(spec, exc))
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


class ProviderLeftOut(ConfigError):
    """A provider kit.yaml declares that a config error left out: the fix is that error's line."""

    def __init__(self, message: str, *, fix: str):
        super().__init__(message)
        self.fix = fix


def left_out(ws: WorkspaceCore, name: str, exc: ConfigError) -> ConfigError:
    """`exc` (an unknown provider) in truer words when a configuration file declares provider
    `name` but an error in it left the provider out: "add providers.lab" would be wrong advice."""
    if name in ws.config.providers:
        return exc
    prefix = f"providers.{name}"
    spots = {where for key, where in ws.config.lines.items() if key == prefix or key.startswith(prefix + ".")}
    problem = next((p for p in ws.snapshot.config_issues if (p.path, p.line) in spots), None)
    if problem is None:
        return exc
    place = located(problem.path, problem.line, "").rstrip(": ")
    return ProviderLeftOut(f"provider '{name}' is left out until {place} is fixed: {problem.message}",
                           fix=f"fix {place}")


def provider_settings(ws: WorkspaceCore, name: str) -> ProviderSettings:
    """`settings_for(name, ws.config)`, saying so when a config error left the provider out."""
    try:
        return settings_for(name, ws.config)
    except ConfigError as exc:
        raise left_out(ws, name, exc) from None


def _config_attempt(target: str, exc: ConfigError) -> Attempt:
    return Attempt(target, "config", str(exc), fix=getattr(exc, "fix", ""))


def unloaded_config(ws: WorkspaceCore) -> Problem | None:
    """The problem of a configuration file (kit.yaml, the user file) that did not load at all —
    invalid YAML, not a mapping, unreadable — so none of its settings is in force, agent.model
    included; None when each file loaded (a bad value leaves the file's valid ones in force)."""
    snapshot = ws.snapshot
    files = {CONFIG_FILE, str(user_config_file())}
    return next((p for p in snapshot.config_issues if p.path in files and p.path not in snapshot.config.files),
                None)


def _retry_same_model(error: BaseException) -> bool:
    return (isinstance(error, ProviderError) and not isinstance(error, StreamInterrupted)
            and error.kind in RETRY_SAME_MODEL)


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


@dataclass(frozen=True)
class ModelChoice:
    """How the advice names the place a model is chosen — every wording of it, once."""

    fix: str  # a spec that names no model
    switch: str  # "… {}": set it to another model
    reach: str  # the closing suggestion


KIT_YAML_CHOICE = ModelChoice("fix agent.model / agent.fallbacks in kit.yaml", "set agent.model to {}",
                              "set agent.model / agent.fallbacks to a model you can reach")
# a library caller's own `model` (ws.agent(model=…)): no command-line advice in a library error
CALLER_CHOICE = ModelChoice("fix the model you pass", "pass {}",
                            "choose a model you can reach (agent.model in kit.yaml, or the model you pass)")


def model_choice(from_caller: bool, model_flag: str | None = None) -> ModelChoice:
    """kit.yaml's agent.model; the caller's own model; or, when a command line passed it, the flag
    (`model_flag`, e.g. "--model")."""
    if not from_caller:
        return KIT_YAML_CHOICE
    if model_flag is None:
        return CALLER_CHOICE
    return ModelChoice(f"fix the {model_flag} value", f"set {model_flag} to {{}}",
                       f"use a model you can reach with {model_flag} or agent.model in kit.yaml")


def _hint(attempt: Attempt, config: Any, model_flag: str | None = None) -> str | None:
    """What the user should set or start for this failed attempt."""
    if attempt.fix:
        return attempt.fix
    choice = model_choice(attempt.flag, model_flag)
    if attempt.outcome == "cooldown":
        # say what to fix (start Ollama, …), not only that there is a wait
        fix = (_hint(replace(attempt, outcome=attempt.cause, cause=""), config, model_flag)
               if attempt.cause else None)
        wait = "it is retried when its cooldown ends (`kit doctor` lists cooldowns)"
        if fix and fix.startswith("wait"):
            return fix  # the fix for a rate limit (…) already is the wait
        return f"{fix} — {wait}" if fix else f"wait: {wait}"
    kind = attempt.outcome
    if kind == "config":
        return choice.fix
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
        # api_key_env holds the variable's name: the key goes into the environment, never kit.yaml
        if settings.api_key_env:
            return (f"set the environment variable {settings.api_key_env} (providers.{provider}.api_key_env) "
                    "to a valid key")
        return f"put the key in an environment variable and name it with providers.{provider}.api_key_env"
    if kind == "billing":
        return f"check the billing/quota of the {provider} account"
    if kind == "model_not_found":
        model = attempt.target.split("/", 1)[1]
        if settings.type == "ollama":
            return f"pull the model (`ollama pull {model}`) or {choice.switch.format('another model')}"
        return choice.switch.format("a model this provider serves")
    if kind == "unreachable" and settings.type == "ollama":
        url = (settings.base_url or "").removesuffix("/v1")
        return f"start Ollama at {url}"
    if kind == "unreachable":
        shown = url_without_secrets(settings.base_url) if settings.base_url else "default"
        return f"check providers.{provider}.base_url ({shown}) is reachable"
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


def no_model_message(attempts: Sequence[Attempt], config: Any, *, flag: bool = False,
                     model_flag: str | None = None, not_loaded: Problem | None = None) -> str:
    """One line: what was tried, then what to do. `flag`: the primary came from the caller (named
    `model_flag` on a command line); `not_loaded`: the problem of a configuration file that did
    not load, so the models tried are not the ones it names."""
    if not attempts:
        return "no model configured: set agent.model in kit.yaml (e.g. ollama/llama3.2 or openai/gpt-4o-mini)"
    # the retries of one model are one entry: "x/y overloaded: HTTP 503: busy, 3 attempts"
    groups: list[tuple[Attempt, int]] = []
    for attempt in attempts:
        last = groups[-1][0] if groups else None
        if last is not None and (last.target, last.outcome, last.message) == (attempt.target, attempt.outcome, attempt.message):
            groups[-1] = (last, groups[-1][1] + 1)
        else:
            groups.append((attempt, 1))
    tried = "; ".join(
        (f"{a.target} {a.outcome}: {a.message}" if a.message else f"{a.target} {a.outcome}")
        + (f", {n} attempts" if n > 1 else "")
        for a, n in groups)
    if not_loaded is not None:
        # advice about the models tried (start Ollama, set agent.model …) would be about models
        # the user never chose: the file is what to fix
        return (f"no model available ({tried}). To fix: {not_loaded} — the file did not load, so its "
                f"agent.model is not in force ({attempts[0].target} was asked instead); fix it and try again.")
    hints: list[str] = []
    for attempt, _n in groups:
        hint = _hint(attempt, config, model_flag)
        if hint and hint not in hints:
            hints.append(hint)
    example = _example(attempts)
    if all(a.outcome == "config" for a, _n in groups):
        # every model was misconfigured: "fix agent.model" already says where; one example more
        # (not after a fix of its own, "fix kit.yaml:4", where a model to pick is beside the point)
        if example and any(not a.fix for a, _n in groups):
            return f"no model available ({tried}). To fix: " + "; ".join(hints) + f" ({example})."
        return f"no model available ({tried}). To fix: " + "; ".join(hints) + "."
    other = model_choice(flag, model_flag).reach
    if example:
        other += f" ({example})"
    hints.append(f"or {other}" if hints else other)
    return f"no model available ({tried}). To fix: " + "; ".join(hints) + "."


# ---------------------------------------------------------------------------- doctor


DOCTOR_TIMEOUT_S = 2.0  # per base URL: a server on this machine answers in milliseconds
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}


def answers(base_url: str, timeout: float = DOCTOR_TIMEOUT_S) -> str | None:
    """None when something answers HTTP at `base_url` (any status: a 401 is an answer), else why not."""
    import http.client
    import urllib.error
    import urllib.request

    handlers = [urllib.request.ProxyHandler({})] if is_loopback(base_url) else []
    opener = urllib.request.build_opener(*handlers)
    url, headers = userinfo_as_header(base_url.rstrip("/") + "/models")
    try:
        with opener.open(urllib.request.Request(url, headers=headers), timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None  # it answered
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused"
        if isinstance(reason, TimeoutError):
            return f"no answer within {timeout:g} s"
        return str(reason)
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return str(exc)
    except (ValueError, http.client.HTTPException) as exc:
        # a URL urllib cannot send (no http:// scheme, a space): configured ones are checked
        # before they get here; this keeps a direct call one line too, never a traceback
        return f"not a URL Kit can ask ({exc})"


def doctor_checks(ws: WorkspaceCore, *, offline: bool = False) -> list[Problem]:
    """Key variables, each configured model's server (does its base URL answer? does it render
    the tools?), cooldowns. `offline`: nothing is asked of a server; what state.db learned from
    earlier replies is still reported."""
    out = []
    client = FailoverClient(ws)
    asked: dict[str, str | None] = {}
    known = _known_stats(ws, client)
    for spec in client.candidates:
        try:
            provider, _model = split_spec(spec)
            if provider == "script":
                check_spec(spec, root=ws.root)  # the file is read and checked, as `kit run` does
                continue
            target = _target(spec)
            settings = provider_settings(ws, provider)
        except ConfigError as exc:
            key = "agent.model" if spec == ws.config.agent.model else "agent.fallbacks"
            path, line = ws.config.where(key)
            out.append(Problem(area="agent", path=path or CONFIG_FILE, line=line, message=f"{key} {spec}: {exc}"))
            continue
        if settings.type in ("openai", "anthropic") and settings.api_key_env and not os.environ.get(settings.api_key_env):
            out.append(Problem(
                area="agent", severity="warning",
                message=f"model {spec}: {settings.api_key_env} is not set",
            ))
        base_url = settings.base_url or DEFAULT_BASE_URLS.get(settings.type, "")
        rendered = known.get(target)
        if not offline and base_url:
            if base_url not in asked:
                asked[base_url] = answers(base_url)
            why = asked[base_url]
            if why is not None:
                fix = _hint(Attempt(target, "unreachable"), ws.config)
                out.append(Problem(area="agent", severity="warning",
                                   message=f"model {spec}: {url_without_secrets(base_url)} does not answer ({why})"
                                           + (f"; {fix}" if fix else "")))
                continue
            if settings.type != "anthropic" and settings.base_url and "api.openai.com" not in settings.base_url:
                probed = probe_template(settings.base_url, timeout=DOCTOR_TIMEOUT_S)
                rendered = probed if probed is not None else rendered
        if rendered is False:
            out.append(Problem(area="agent", severity="warning", message=f"model {spec}: {dropped_message(target)}"))
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


def _known_stats(ws: WorkspaceCore, client: FailoverClient) -> dict[str, bool | None]:
    """What earlier replies taught about each model's tools (state.db), if there is a state.db."""
    if not (ws.kit_dir / "state.db").exists():
        return {}
    try:
        return {s.target: s.tools_rendered for s in client.stats.all()}
    except Exception:  # noqa: BLE001 - an older or locked state.db: nothing known
        return {}
