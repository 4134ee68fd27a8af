"""The agent loop (§9): ReAct over tools with an iteration limit, repeated-call detection,
usage accounting, active recall, compaction and session transcripts.

    agent = Agent(ws, model="script:turns.yaml")
    result = agent.turn("what did we decide about the deploy?")
    result.reply, result.tool_calls, result.usage

Hooks fired: session:start, session:end, message:received (may block or rewrite `text`),
message:sent, tool:before / tool:after (in kit.tools), compaction:before / after.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kit import clock
from kit.agent import compaction as cp
from kit.agent import events as ev
from kit.agent.sessions import SessionInfo, new_session_id, sessions_for, skill_message, typed_text
from kit.core import WorkspaceCore
from kit.fsutil import sha1_hex
from kit.hooks.lifecycle import start as start_lifecycle
from kit.hooks.registry import fire_hook
from kit.kinds import run_kind
from kit.providers.base import (
    Attempt,
    GenerationSettings,
    ModelResponse,
    NoModelAvailable,
    ProviderError,
    StreamInterrupted,
    ToolCall,
    Usage,
    system_message,
)
from kit.providers.events import Assembler, ModelCall, Reply
from kit.templating import templates_for
from kit.tools import ToolContext, ToolOutcome, ToolRegistry, builtin_registry, execute_tool

REPEAT_WARN = 3  # identical consecutive calls before Kit tells the model to change approach
REPEAT_STOP = 5  # … and before it stops the run
FLUSH_MAX_CALLS = 4  # model calls a silent memory flush may use
FLUSH_TOOLS = ("memory_write", "memory_search", "memory_get")

HEARTBEAT_SKIPPED = "HEARTBEAT.md has no tasks"
KIT_NOTE = "[kit note]"  # a message from Kit to the model, not the user's words
INTERRUPTED = "[kit] not run: the turn was interrupted before this call"


class Client:
    """What the loop needs from a model: FailoverClient's shape (its optional `preflight()` is
    called once per turn, before active recall, to fail fast when no model can answer)."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse: ...


def make_client(ws: WorkspaceCore, model: str | None = None, generation: GenerationSettings | None = None,
                model_flag: str | None = None) -> Client:
    """The model client for `model` (or agent.model): kit.providers.failover.FailoverClient.
    `generation`: the run's own settings (--max-tokens, --temperature), over kit.yaml's;
    `model_flag`: the command-line flag `model` came from, for the advice when nothing answers."""
    from kit.providers.failover import FailoverClient

    return FailoverClient(ws, model=model, generation=generation, model_flag=model_flag)


def cut_marker(result: TurnResult) -> str | None:
    """The line people see under a reply the max_tokens cap cut, or None."""
    if result.finish_reason != "length":
        return None
    cap = f" ({result.max_tokens} tokens)" if result.max_tokens else ""
    return f"[reply cut: it reached the max_tokens cap{cap}; raise agent.max_tokens or pass --max-tokens]"


def build_system_prompt(ws: WorkspaceCore, kind: str, warning_state: Any = None, bootstrap: Any = None,
                        tools: ToolRegistry | None = None):
    """The PromptResult from kit.prompt (`.prompt` is the text, `.heartbeat_empty` skips heartbeats)."""
    from kit.prompt.builder import build_prompt

    return build_prompt(ws, kind=kind, warning_state=warning_state, bootstrap=bootstrap, tools=tools)


def _no_tasks(ws: WorkspaceCore) -> bool:
    """HEARTBEAT.md has no tasks (kit.prompt decides what counts as one)."""
    from kit.prompt.builder import heartbeat_has_no_tasks

    return heartbeat_has_no_tasks(ws.snapshot)


def _bootstrap_callback(ws: WorkspaceCore, session_key: str | None) -> Any:
    """agent:bootstrap hooks, applied by the prompt builder before budgeting."""
    from kit.hooks.bootstrap import bootstrap_callback

    return bootstrap_callback(ws, session_key=session_key)


def _mcp_clients(ws: WorkspaceCore, status: Callable[[str], None]) -> Any:
    """The agent's MCP servers (none started yet; the SDK is imported only when one starts)."""
    from kit.mcp_client.manager import McpClients

    return McpClients(ws, status=status)


def _warning_state() -> Any:
    """bootstrap.warning: once is per session, so each session gets its own state."""
    from kit.prompt.warning import WarningState

    return WarningState()


@dataclass
class UsageTotals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    model_calls: int = 0
    # the last call's prompt: Kit's estimate before sending it, and the server's count
    estimated_prompt_tokens: int = 0
    last_prompt_tokens: int = 0

    def add(self, usage: Usage, estimated: int = 0) -> None:
        self.prompt_tokens += int(usage.prompt_tokens or 0)
        self.completion_tokens += int(usage.completion_tokens or 0)
        self.cache_read_tokens += int(usage.cache_read_tokens or 0)
        self.cache_write_tokens += int(usage.cache_write_tokens or 0)
        self.model_calls += 1
        if estimated and usage.prompt_tokens:
            self.estimated_prompt_tokens, self.last_prompt_tokens = int(estimated), int(usage.prompt_tokens)

    def to_json(self, context_tokens: int, window: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "model_calls": self.model_calls,
            "context_tokens": context_tokens,
            "context_window": window,
        }
        if self.last_prompt_tokens:
            # how far Kit's (calibrated) estimate of the last request was from the server's count
            out["estimated_prompt_tokens"] = self.estimated_prompt_tokens
            out["estimate_error"] = round(
                (self.estimated_prompt_tokens - self.last_prompt_tokens) / self.last_prompt_tokens, 3)
        return out


@dataclass(frozen=True)
class TurnResult:
    session: str
    reply: str
    tool_calls: tuple[ToolOutcome, ...]
    iterations: int
    usage: dict[str, int]
    # None | max_iterations | repeated_tool_call | cut_tool_call | interrupted (the stream broke
    # off) | cancelled (Ctrl-C) | blocked | skipped
    stopped: str | None = None
    compactions: tuple[cp.CompactionResult, ...] = ()
    recalled: int = 0
    model: str = ""
    finish_reason: str | None = None  # of the last model reply: stop | length | tool_calls …
    attempts: tuple[Attempt, ...] = ()  # every request of the turn, retries and failovers included
    max_tokens: int | None = None  # the cap the last request carried
    blocked: str | None = None  # stopped == "blocked": why a message:received hook refused the message

    @property
    def skip_reason(self) -> str | None:
        """Why the run did not happen (a heartbeat with nothing to check), or None."""
        return HEARTBEAT_SKIPPED if self.stopped == "skipped" else None

    def to_json(self) -> dict[str, Any]:
        # the §9 shape of `kit run --json` plus model, attempts and finish_reason (issue 10), and
        # "skipped" (the reason) on a skipped run
        out: dict[str, Any] = {
            "session": self.session,
            "reply": self.reply,
            "tool_calls": [t.to_json() for t in self.tool_calls],
            "iterations": self.iterations,
            "usage": self.usage,
            "model": self.model or None,
            "finish_reason": self.finish_reason,
            "attempts": [a.to_json() for a in self.attempts],
            # the message never reached a model: `reply` is Kit's notice, not an answer
            "blocked": self.blocked,
            # why the turn ended without the model's answer, null when `reply` is that answer
            "stopped": self.stopped,
        }
        if self.skip_reason:
            out["skipped"] = self.skip_reason
        return out


def assistant_message(response: ModelResponse) -> dict[str, Any]:
    """The history entry for a model response, tool calls in the OpenAI chat shape that every
    provider adapter reads back."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text or ""}
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
            for c in response.tool_calls
        ]
    return message


def tool_message(call: ToolCall, content: str) -> dict[str, Any]:
    """The history entry answering one tool call (every call needs one, or the next request is
    malformed)."""
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


def unanswered_calls(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(id, name) of the last assistant message's tool calls that no tool message answers."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.get("role") == "assistant":
            answered = {m.get("tool_call_id") for m in history[index + 1:] if m.get("role") == "tool"}
            return [(c.get("id", ""), c.get("function", {}).get("name", ""))
                    for c in message.get("tool_calls") or () if c.get("id") not in answered]
    return []


def tool_keys(calls: list[ToolCall], tools: ToolRegistry) -> list[str | None]:
    """Each call's lock key (kit.tools.registry.Tool.lock_key): "*" runs alone, a resource
    ("path=notes.md") in order with the calls on the same one, None alongside anything."""
    keys: list[str | None] = []
    for call in calls:
        found = tools.get(call.name)
        keys.append(found.lock_key(call.arguments) if found is not None else None)
    return keys


def call_signature(name: str, arguments: dict[str, Any]) -> str:
    return name + "\0" + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class _RepeatTracker:
    """Counts identical tool calls (name + arguments) in a row, across iterations of a turn."""

    last: str | None = None
    count: int = 0

    def see(self, signature: str) -> int:
        self.count = self.count + 1 if signature == self.last else 1
        self.last = signature
        return self.count


@dataclass
class _TurnState:
    window: int = 0  # agent.context_window
    usage: UsageTotals = field(default_factory=UsageTotals)
    compactions: list[cp.CompactionResult] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    partial: ModelResponse | None = None  # what a stream had delivered when Ctrl-C stopped it


@dataclass(frozen=True)
class Gate:
    """What happens to a message before anything is sent: hooks and the run kind decide."""

    text: str  # the message, as a message:received hook may have rewritten it
    prompt: Any  # PromptResult (None when blocked)
    stopped: str | None = None  # blocked | skipped: the turn ends here
    reply: str = ""
    context: tuple[str, ...] = ()  # hooks' additional context for the model, after the user's words
    blocked: str | None = None  # stopped == "blocked": the hook's reason


@dataclass(frozen=True)
class Prepared:
    """What the react loop works with once the user message is in the history."""

    ctx: ToolContext
    tools: list[dict[str, Any]]  # the schemas sent with every request
    recalled: int = 0  # active-recall hits in the user message


@dataclass(frozen=True)
class Reaction:
    """How the react loop ended."""

    reply: str
    outcomes: tuple[ToolOutcome, ...]
    iterations: int
    stopped: str | None
    model: str
    finish_reason: str | None
    max_tokens: int | None
    system: str  # the system prompt of the last call


@dataclass
class _Reacting:
    """The react loop's running state (Reaction is its frozen result)."""

    system: str
    reply: str = ""
    outcomes: list[ToolOutcome] = field(default_factory=list)
    iterations: int = 0
    stopped: str | None = None
    stopped_on: str = ""
    model: str = ""
    finish_reason: str | None = None
    max_tokens: int | None = None
    overflow_retried: bool = False
    cuts: int = 0  # replies whose tool call the max_tokens cap cut, this turn
    repeats: _RepeatTracker = field(default_factory=_RepeatTracker)

    def stop(self, why: str, reply: str, *, finish_reason: str | None = None) -> None:
        self.stopped, self.reply = why, reply
        if finish_reason is not None:
            self.finish_reason = finish_reason

    def result(self) -> Reaction:
        return Reaction(self.reply, tuple(self.outcomes), self.iterations, self.stopped, self.model,
                        self.finish_reason, self.max_tokens, self.system)


class Agent:
    """One conversation with one workspace. Not thread-safe: one turn at a time."""

    def __init__(
        self,
        ws: WorkspaceCore,
        *,
        model: str | None = None,
        session_key: str | None = None,
        kind: str = "default",
        interactive: bool = False,
        approve: Callable[[str, str], bool] | None = None,
        client: Client | None = None,
        status: Callable[[str], None] | None = None,
        tools: ToolRegistry | None = None,
        generation: GenerationSettings | None = None,
        mcp: bool = True,
        on_event: ev.EventCallback | None = None,
        model_flag: str | None = None,
    ):
        self.ws = ws
        self.kind = run_kind(kind).name  # an unknown kind fails here, before a session opens
        self.model = model
        self.interactive = interactive
        self.approve = approve
        self.status = status or (lambda message: None)
        self.on_event = on_event  # the turn's events as they happen (kit.agent.events)
        # model_flag: a command line names its flag ("--model") in the advice when nothing answers
        self.client = client if client is not None else make_client(ws, model, generation, model_flag)
        self._client_events: bool | None = None  # does client.complete take on_event?
        # what the model may call: the built-in tools unless the caller brings more (or fewer)
        self.tools = tools if tools is not None else builtin_registry()
        # the tools of the MCP servers in kit.yaml join the registry at each turn (kit.mcp_client)
        # built at the first turn whose kit.yaml names a server: no servers, no kit.mcp_client import
        self.mcp: Any = None
        self._mcp_allowed = mcp
        self.store = sessions_for(ws)  # the workspace's, shared with ws.sessions
        # the first agent (or watcher) of a workspace: workspace:loaded, then reload events
        start_lifecycle(ws, by="agent")
        self.history: list[dict[str, Any]] = []
        self._flushed = False  # this compaction cycle's memory flush happened (restored on resume)
        self._compaction_stuck_at: int | None = None
        self.session: SessionInfo = self._open(session_key)
        self._prompt_cache: tuple[Any, Any] | None = None
        self._warning_state = _warning_state()
        self._bootstrap = _bootstrap_callback(ws, self.session.own_key)
        self._seen: dict[str, Any] = {}  # the file versions the model has read (write_file's compare-and-swap)

    # ------------------------------------------------------------------ sessions

    def _open(self, key: str | None, *, after: str | None = None) -> SessionInfo:
        """Resume the key's open session, or start a new one. A new session is only an id until
        a model first answers (see `_record`): a run that fails before that — no model
        available, a bad spec, a blocked message, a skipped heartbeat — leaves no empty session
        in `kit sessions list`."""
        info = self.store.current(key) if key else None
        resumed = info is not None
        if info is None:
            session_id, ts = new_session_id(), clock.timestamp()
            info = SessionInfo(session_id, key or session_id, "", ts, ts, None, 0, 0, 0,
                               self.model or self.ws.config.agent.model)
            self._pending = []
        else:
            self._pending = None
            resumed_state = self.store.load_state(info.id)
            self.history = resumed_state.history
            self._flushed = resumed_state.flushed
        started = fire_hook(self.ws, "session:start",
                            {"session_id": info.id, "key": info.own_key, "resumed": resumed,
                             # startup | resume | clear (after /new or /reset), as Claude Code names it
                             "source": "clear" if after else ("resume" if resumed else "startup")},
                            session_key=info.own_key)
        # Claude Code SessionStart hooks' additionalContext reaches the model with the next message
        self._hook_context = list(getattr(started, "context", None) or [])
        return info

    @property
    def session_id(self) -> str:
        return self.session.id

    def conversation(self) -> list[dict[str, str]]:
        """User and assistant text of the live history (the shape hooks receive)."""
        out = []
        for message in self.history:
            role = message.get("role")
            content = str(message.get("content") or "")
            if role == "user" and content.startswith((cp.SUMMARY_PREFIX, KIT_NOTE)):
                continue
            if role in ("user", "assistant") and content.strip():
                out.append({"role": role, "content": typed_text(content) if role == "user" else content})
        return out

    def hook_data(self, **extra: Any) -> dict[str, Any]:
        return {"session_id": self.session.id, "key": self.session.own_key, "messages": self.conversation(), **extra}

    def end_session(self, reason: str = "end", *, archived: bool = False) -> None:
        """Fire session:end (session-memory archives the conversation) and close the session.

        `archived`: a command:new / command:reset event already carried the messages, so
        session:end carries none — the conversation is archived once, not twice."""
        if self.history:
            data = self.hook_data(reason=reason)
            if archived:
                data["messages"] = []
                data["archived_by"] = f"command:{reason}"
            fire_hook(self.ws, "session:end", data, session_key=self.session.own_key)
        if self.persisted:
            self.store.end(self.session.id)

    def new_session(self, reason: str = "new", *, archived: bool = True) -> SessionInfo:
        """End the current session and start a fresh one under the same key (/new, /reset)."""
        key = self.session.own_key
        self.end_session(reason, archived=archived)
        self.history = []
        self._flushed = False
        self._compaction_stuck_at = None
        self._warning_state = _warning_state()
        self._prompt_cache = None
        self.session = self._open(key, after=reason)
        return self.session

    def close(self) -> None:
        if self.mcp is not None:
            self.mcp.close()  # stops the MCP servers this agent started
        self.store.close()

    def sync_tools(self) -> None:
        """Offer the tools of the MCP servers the current kit.yaml configures (hot reload: a server
        added, removed or changed applies from the next turn)."""
        if self.mcp is None and self._mcp_allowed and self.ws.config.mcp.servers:
            self.mcp = _mcp_clients(self.ws, self.status)
        if self.mcp is not None:
            self.mcp.sync(self.tools)

    # ------------------------------------------------------------------ prompt

    def _prompt_key(self) -> str:
        """What the prompt depends on: the snapshot's documents and config (not daily notes, which
        the snapshot does not hold), the trust store and the date.

        A new snapshot version caused only by a memory note (memory_write, session-memory) keeps
        the same key, so the prompt — dynamic tail included — stays byte-identical and provider
        prompt caches stay warm. The date is in the key so the tail never shows yesterday.
        """
        snap = self.ws.snapshot
        docs = sorted((name, doc.hash) for name, doc in snap.documents.items())
        from kit.skills.catalog import trust_stamp

        trust = trust_stamp()
        material = json.dumps([docs, snap.config.flat(), [str(i) for i in snap.issues], trust,
                               clock.today().isoformat(), self.tools.names], sort_keys=True, default=str)
        return sha1_hex(material)

    def prompt_result(self):
        """Rebuilt only when what the prompt depends on changes (see `_prompt_key`); the
        once-per-session truncation warning is decided at that rebuild, not every turn."""
        version = self._prompt_key()
        if self._prompt_cache is None or self._prompt_cache[0] != version:
            result = build_system_prompt(self.ws, self.kind, self._warning_state, self._bootstrap, self.tools)
            self._prompt_cache = (version, result)
            for warning in getattr(result, "warnings", ()):
                if "template" in warning or "hook" in warning:
                    self._say("prompt", f"prompt: {warning}")
        return self._prompt_cache[1]

    def _active_skills(self, text: str) -> Any:
        """The skills active this turn: a `/skill NAME` message activates NAME (skill_view adds
        the ones the model reads); their allowed-tools limit the turn's calls."""
        from kit.agent.sessions import invoked_skill
        from kit.skills.catalog import catalog_for
        from kit.tools.allowed import ActiveSkills

        active = ActiveSkills()
        name = invoked_skill(text)
        if name:
            try:
                skill = catalog_for(self.ws).get(name)
            except Exception:  # noqa: BLE001 - gone since the message was built: nothing to limit
                return active
            active.activate(name, skill.meta.get("allowed-tools"))
        return active

    def skill_message(self, name: str, rest: str = "") -> str:
        """The text for `/skill NAME rest`: the skill's body in a <skill> block, from the user's view
        (it honours user-invocable and allows disable-model-invocation skills). Transcripts and
        archives keep what the user typed."""
        from kit.skills.disclosure import user_skill_view

        view = user_skill_view(self.ws, name, arguments=rest.strip())
        return skill_message(name, view.body, rest)

    def system_prompt(self) -> str:
        return self.prompt_result().prompt

    def _tools_tokens(self) -> int:
        return cp.tools_tokens(self.tools.schemas())

    def _context_tokens(self, system: str) -> int:
        """Estimated size of the next request: system prompt, history and the tool schemas —
        calibrated against the server's prompt_tokens when the client learned them."""
        messages = [{"role": "system", "content": system}, *self.history]
        estimate = getattr(self.client, "estimate_tokens", None)
        if estimate is not None:
            return int(estimate(messages, self.tools.schemas()))
        return cp.context_tokens(messages) + self._tools_tokens()

    def _system_message(self, system: str) -> dict[str, Any]:
        """The system message, split where the prompt's stable prefix ends (before the time) so
        Anthropic can cache the prefix; OpenAI-compatible servers get it back as one string."""
        result = self._prompt_cache[1] if self._prompt_cache else None
        stable = getattr(result, "stable_chars", None) if result is not None and result.prompt == system else None
        return system_message(system, stable)

    def _call(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], state: _TurnState, *,
              step: int = 0) -> ModelResponse:
        """One model call, consumed as the provider's stream. `step` > 0: a call of the turn itself,
        whose text deltas reach `on_event` as they arrive; 0: a silent call (memory flush, summary).
        Retries, failovers and warnings reach `status` as they happen. Ctrl-C mid-stream closes the
        stream (and its HTTP response) and leaves what arrived in `state.partial`."""
        stream = getattr(self.client, "stream", None)
        if stream is None:  # a caller's own client with only complete()
            response = self._complete(messages, tools)
        else:
            acc = Assembler()
            events = stream(messages, tools)
            response = None
            try:
                for event in events:
                    if isinstance(event, Reply):
                        response = event.response
                        continue
                    if isinstance(event, ModelCall):
                        acc = Assembler(event.target)  # a retry or a fallback starts afresh
                    acc.feed(event)
                    self._relay(event, step)
            except KeyboardInterrupt:
                events.close()
                partial = acc.partial()
                state.partial = replace(partial, attempts=tuple(getattr(self.client, "last_attempts", ()) or ()))
                raise
            if response is None:
                raise ProviderError("the model stream ended without a reply", kind="format")
        attempts = getattr(response, "attempts", ())
        state.attempts.extend(attempts)
        state.usage.add(response.usage, getattr(response, "estimated_prompt_tokens", 0))
        return response

    def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse:
        if self._client_events is None:
            params = inspect.signature(self.client.complete).parameters
            self._client_events = "on_event" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
        if self._client_events:
            return self.client.complete(messages, tools, on_event=lambda e: self._relay(e, 0))
        return self.client.complete(messages, tools)

    def _relay(self, event: Any, step: int) -> None:
        """A provider event → the agent's events: the spinner's model, text as it comes, status."""
        kind = getattr(event, "type", "")
        if kind in ("retry", "failover", "notice"):
            data = {k: v for k, v in event.to_json().items() if k != "type"}
            if "kind" in data:  # a retry's error kind; `kind` is the status line's own
                data["error"] = data.pop("kind")
            self._say(kind, event.line, data)
        elif not step:
            return
        elif kind == "model_call":
            self._emit(ev.ModelWaiting(event.target, event.attempt, step))
        elif kind == "text_delta" and event.text:
            self._emit(ev.TextDelta(event.text, step))

    def _emit(self, event: ev.AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _text(self, template: str, /, **context: Any) -> str:
        """A template's text for the model; a broken workspace override is said on the status
        line and the fallback (its last good version, or the built-in one) is used."""
        rendered = templates_for(self.ws).render(template, **context)
        if rendered.problem is not None:
            self.status(f"{rendered.problem}; using {rendered.fallback}")
        return rendered.text

    def _note(self, template: str, /, **context: Any) -> str:
        """A Kit note appended to a tool result: marked, so it reads as Kit's, not the tool's."""
        return f"\n\n{KIT_NOTE} " + self._text(template, **context)

    def _say(self, kind: str, line: str, data: dict[str, Any] | None = None) -> None:
        """A status line: `status` gets the text, `on_event` the structured event."""
        self.status(line)
        self._emit(ev.StatusLine(kind, line, dict(data or {})))

    def _append(self, message: dict[str, Any], **extra: Any) -> None:
        self.history.append(message)
        self._record(message, **extra)

    def _record(self, message: dict[str, Any], **extra: Any) -> None:
        """Write one transcript line. Until a model has answered in a new session, lines wait
        in memory; the first assistant message creates the session and writes them all."""
        if self._pending is not None:
            if message.get("role") != "assistant":
                self._pending.append((message, extra))
                return
            pending, self._pending = self._pending, None
            info = self.session
            self.store.create(info.own_key, model=info.model,
                              session_id=info.id)
            for earlier, earlier_extra in pending:
                self.store.append(info.id, earlier, **earlier_extra)
        self.store.append(self.session.id, message, **extra)

    @property
    def persisted(self) -> bool:
        """The session is in the store (a model has answered in it, or it was resumed)."""
        return self._pending is None

    # ------------------------------------------------------------------ the turn

    def turn(self, text: str) -> TurnResult:
        """One exchange: gate (hooks, run kind) → prepare (prompt, recall, the user message) →
        react (model calls and tools until a reply). Ctrl-C stops it cleanly: the partial reply
        is kept in the session and the result says `stopped: "cancelled"`. A heartbeat run fires
        `heartbeat` when it is done — also when it was skipped for an empty HEARTBEAT.md."""
        state = _TurnState(window=self.ws.config.agent.context_window)
        turn_ts = clock.timestamp()  # recalls from here on are this turn's (reply credit)
        self._answer_interrupted_calls()
        self._emit(ev.TurnStarted(self.session.id, self.model or self.ws.config.agent.model))
        gate = self._gate(text)
        if gate.stopped is not None:
            result = TurnResult(self.session.id, gate.reply, (), 0, state.usage.to_json(0, state.window),
                                stopped=gate.stopped, blocked=gate.blocked)
        else:
            prepared = self._prepare(gate)
            reaction = self._react(prepared, state)
            if reaction.reply and not reaction.stopped:
                try:  # recalls whose text reached the answer earn dreaming's use credit
                    from kit.agent.recall import credit_reply

                    credit_reply(self.ws, turn_ts, reaction.reply)
                except Exception as exc:  # noqa: BLE001 - credit is an aid; the turn has its answer
                    self._say("recall", f"recall credit failed: {type(exc).__name__}: {exc}")
            fire_hook(self.ws, "message:sent",
                      {"text": reaction.reply, "session_id": self.session.id, "stopped": reaction.stopped},
                      session_key=self.session.own_key)
            tokens = self._context_tokens(reaction.system)
            result = TurnResult(
                self.session.id, reaction.reply, reaction.outcomes, reaction.iterations,
                state.usage.to_json(tokens, state.window), stopped=reaction.stopped,
                compactions=tuple(state.compactions), recalled=prepared.recalled, model=reaction.model,
                finish_reason=reaction.finish_reason, attempts=tuple(state.attempts),
                max_tokens=reaction.max_tokens,
            )
        if self.kind == "heartbeat":
            fire_hook(self.ws, "heartbeat", {
                "session_id": self.session.id, "skipped": result.stopped == "skipped",
                "reply": result.reply, "stopped": result.stopped,
                "ok": result.reply.strip() == "HEARTBEAT_OK",  # nothing needed attention
                "tool_calls": [t.name for t in result.tool_calls],
            }, session_key=self.session.own_key)
        self._emit(ev.TurnFinished(result))
        return result

    def _answer_interrupted_calls(self) -> None:
        # a turn interrupted mid-tools (Ctrl-C, a killed process before --session resumes) left
        # calls without results; every later request would be rejected as malformed
        for call_id, name in unanswered_calls(self.history):
            self._append(tool_message(ToolCall(call_id, name, {}), INTERRUPTED))

    def _gate(self, text: str) -> Gate:
        """message:received (a hook may block or rewrite the text) and the run kind's skip rule."""
        received = fire_hook(self.ws, "message:received", {"text": text, "session_id": self.session.id},
                             session_key=self.session.own_key)
        if received.blocked:
            reason = received.reason or "no reason given"
            return Gate(text, None, stopped="blocked", reply=f"Message blocked by a hook: {reason}", blocked=reason)
        rewritten = received.data.get("text")
        if isinstance(rewritten, str):
            text = rewritten
        # Claude Code hooks' additionalContext (SessionStart, UserPromptSubmit) for the model
        context = (*getattr(self, "_hook_context", []), *(getattr(received, "context", None) or []))
        self._hook_context = []

        if run_kind(self.kind).skip_without_tasks and _no_tasks(self.ws):
            # §4: a heartbeat run is skipped while HEARTBEAT.md is effectively empty — decided
            # before anything starts: no MCP server is spawned and no prompt built for nothing
            return Gate(text, None, stopped="skipped")
        self.sync_tools()
        prompt = self.prompt_result()
        return Gate(text, prompt, context=tuple(context))

    def _prepare(self, gate: Gate) -> Prepared:
        """Fail fast without a model, recall what the message needs, append the user message."""
        preflight = getattr(self.client, "preflight", None)
        if preflight is not None:
            preflight()  # no model at all: say so now, not after active recall's model load
        from kit.agent.recall import ActiveRecall, active_recall

        text, prompt = gate.text, gate.prompt
        if not run_kind(self.kind).recall:
            # shared (group) runs keep MEMORY.md and USER.md out of the prompt; private daily
            # notes must not leak in through recall either (memory_search stays available)
            recall = ActiveRecall("")
        else:
            # what the system prompt already carries (MEMORY.md) is not recalled again
            in_prompt = {f.name for f in getattr(prompt, "files", ()) if getattr(f, "injected_chars", 0)}
            try:
                recall = active_recall(self.ws, text, exclude=in_prompt)
            except Exception as exc:  # noqa: BLE001 - recall is an aid; the turn goes on without it
                recall = ActiveRecall("", error=f"active recall failed: {type(exc).__name__}: {exc}")
        if recall.error:
            self._say("recall", recall.error)
        for item in recall.withheld:  # reported, never shown to the model
            self._say("recall", f"recalled note withheld from the prompt: {item.path}:{item.start_line}: {item.reason}")
        # `text`: the user's own words, when the model receives more (a recall block, a skill body)
        own = typed_text(text)
        content = recall.apply(text)
        if gate.context:  # after the user's words, like the recall block; never in the cached system prompt
            content += "\n\n<hook-context>\n" + "\n\n".join(gate.context) + "\n</hook-context>"
        self._append({"role": "user", "content": content},
                     text=own if recall.block or gate.context or own != text.strip() else None)
        ctx = ToolContext(self.ws, session_id=self.session.id, session_key=self.session.own_key,
                          interactive=self.interactive, approve=self.approve, tools=self.tools,
                          seen=self._seen, skills=self._active_skills(text), sessions=self.store)
        return Prepared(ctx, self.tools.schemas(), len(recall.hits))

    def _react(self, prepared: Prepared, state: _TurnState) -> Reaction:
        """Model calls and tool runs until the model answers without a tool, or a limit stops it."""
        max_iterations = self.ws.config.agent.max_iterations
        react = _Reacting(system=self.system_prompt())
        try:
            while True:
                if react.iterations >= max_iterations:
                    react.stop("max_iterations",
                               f"Stopped: reached agent.max_iterations ({max_iterations}) before a final "
                               "answer. Ask again to continue, or raise agent.max_iterations in kit.yaml.")
                    break
                react.system = self.system_prompt()  # a workspace edit mid-turn applies to the next call
                self._maybe_compact(react.system, state, state.window)
                react.iterations += 1
                try:
                    response = self._ask(react, prepared, state)
                except StreamInterrupted as exc:
                    # the reply broke off after it began: keep what arrived, say so, end the turn
                    self._keep_partial(exc.partial, state, react)
                    self._say("interrupted", f"{exc}; the partial reply is kept in the session")
                    react.stop("interrupted", exc.partial.text or "", finish_reason="interrupted")
                    break
                if self._answered(response, react, prepared, state):
                    break
        except KeyboardInterrupt:
            # Ctrl-C: what the model had written is kept (transcript: finish_reason interrupted)
            partial, state.partial = state.partial, None
            if partial is not None and not partial.text:
                partial = None  # nothing had arrived: there is no reply to keep
            if partial is not None:
                self._keep_partial(partial, state, react)
            self._say("interrupted", "interrupted (Ctrl-C)" + ("; the partial reply is kept in the session"
                                                             if partial is not None else ""))
            react.stop("cancelled", (partial.text or "") if partial is not None else "",
                       finish_reason="interrupted")
        return react.result()

    def _ask(self, react: _Reacting, prepared: Prepared, state: _TurnState) -> ModelResponse:
        """The turn's next model call; a context overflow compacts once and asks again."""
        messages = [self._system_message(react.system), *self.history]
        try:
            return self._call(messages, prepared.tools, state, step=react.iterations)
        except ProviderError as exc:
            if exc.kind != "context_overflow" or react.overflow_retried:
                raise
            # the model's window is smaller than our estimate: compact now and retry once
            react.overflow_retried = True
            tokens = self._context_tokens(react.system)
            state.compactions.append(self._compact(react.system, state, tokens, state.window))
            return self._call([self._system_message(react.system), *self.history], prepared.tools, state,
                              step=react.iterations)

    def _keep_partial(self, partial: ModelResponse, state: _TurnState, react: _Reacting) -> None:
        state.attempts.extend(partial.attempts)
        react.model = partial.model or react.model
        self._append(assistant_message(partial), usage=partial.usage, model=partial.model or None,
                     finish_reason="interrupted")

    def _answered(self, response: ModelResponse, react: _Reacting, prepared: Prepared, state: _TurnState) -> bool:
        """Record one model reply and run its tool calls; True when the turn is over."""
        react.model = response.model or react.model
        react.finish_reason = response.finish_reason
        react.max_tokens = getattr(response, "max_tokens", None)
        self._append(assistant_message(response), usage=response.usage, model=response.model or None,
                     finish_reason=response.finish_reason,
                     attempts=[a.to_json() for a in getattr(response, "attempts", ())] or None)
        cut_calls = tuple(getattr(response, "cut_tool_calls", ()))
        cap = react.max_tokens
        if cut_calls and not response.tool_calls:
            react.cuts += 1
            if react.cuts >= 2:
                react.stop("cut_tool_call",
                           f"Stopped: the max_tokens cap ({cap or 'the server default'}) cut the model's "
                           f"tool call ({', '.join(cut_calls)}) twice. Raise agent.max_tokens (or pass "
                           "--max-tokens), or ask for smaller steps.", finish_reason=response.finish_reason)
                return True
            # tell the model, which sees its unfinished call as not made, and let it try again
            note = self._text("cut-call-note.md.j2", cap=cap or "the server's", names=", ".join(cut_calls))
            self._append({"role": "user", "content": f"{KIT_NOTE} {note}"}, kind="notice")
            return False
        if not response.tool_calls:
            react.reply = response.text or ""
            return True
        self._run_calls(response, react, prepared)
        if react.stopped:
            react.reply = (f"Stopped: the same tool call ({react.stopped_on}) was repeated "
                           f"{REPEAT_STOP} times in a row without progress.")
            return True
        return False

    def _run_calls(self, response: ModelResponse, react: _Reacting, prepared: Prepared) -> None:
        """Run one reply's tool calls — at the same time, up to agent.parallel_tools, as far as
        each tool's `serial` declaration allows — and answer every call in the history, in the
        order the model asked."""
        cut = response.truncated or bool(getattr(response, "cut_tool_calls", ()))
        counts: list[int] = []
        runs: list[ToolCall] = []  # the calls that run (a stopped run answers the rest itself)
        for call in response.tool_calls:
            count = react.repeats.see(call_signature(call.name, call.arguments))
            if react.stopped or count >= REPEAT_STOP:
                if not react.stopped:
                    react.stopped, react.stopped_on = "repeated_tool_call", call.name
                counts.append(-1)
                continue
            counts.append(count)
            runs.append(call)
        outcomes = iter(self._execute(runs, prepared.ctx, react.iterations))
        for call, count in zip(response.tool_calls, counts, strict=True):
            if count < 0:
                # every tool call needs an answer, or the next request is malformed
                self._append(tool_message(call, f"[kit] not run: the run was stopped ({call.name} "
                                                f"repeated {REPEAT_STOP} times in a row)"))
                continue
            outcome = next(outcomes)
            react.outcomes.append(outcome)
            content = outcome.result
            if count >= REPEAT_WARN:
                content += self._note("repeat-note.md.j2", name=call.name, count=count)
            if call is response.tool_calls[-1] and cut:
                # whatever followed the last complete call (a cut call, text) is lost: say so
                content += self._note("cut-after-calls-note.md.j2", cap=react.max_tokens or "the server's")
            self._append(tool_message(call, content))

    def _execute(self, calls: list[ToolCall], ctx: ToolContext, step: int) -> list[ToolOutcome]:
        """The calls' outcomes, in order. Calls that may overlap run together in a thread pool (at
        most agent.parallel_tools); a call that must run alone (exec) runs in this thread between
        them, so its approval question and Ctrl-C behave as without threads. Events go out from
        this thread in the model's order."""
        workers = self.ws.config.agent.parallel_tools
        keys = tool_keys(calls, self.tools)
        out: list[ToolOutcome] = []
        batch: list[int] = []
        for index, call in enumerate(calls):
            if keys[index] != "*" and workers > 1:
                batch.append(index)
                continue
            out += self._run_batch(calls, keys, batch, ctx, step, workers)
            batch = []
            self._emit(ev.ToolCallStarted(call.id, call.name, dict(call.arguments), step))
            out.append(execute_tool(ctx, call.name, call.arguments, call_id=call.id))
            self._tool_done(out[-1], step)
        return out + self._run_batch(calls, keys, batch, ctx, step, workers)

    def _run_batch(self, calls: list[ToolCall], keys: list[str | None], batch: list[int], ctx: ToolContext,
                   step: int, workers: int) -> list[ToolOutcome]:
        """Calls that may overlap, at the same time; those on the same resource in order."""
        if not batch:
            return []
        for index in batch:
            call = calls[index]
            self._emit(ev.ToolCallStarted(call.id, call.name, dict(call.arguments), step))
        if len(batch) == 1:
            call = calls[batch[0]]
            outcome = execute_tool(ctx, call.name, call.arguments, call_id=call.id)
            self._tool_done(outcome, step)
            return [outcome]
        from concurrent.futures import ThreadPoolExecutor

        futures: list[Any] = []

        def run(position: int) -> ToolOutcome:
            key = keys[batch[position]]
            for earlier in range(position):
                if key is not None and keys[batch[earlier]] == key:
                    futures[earlier].exception()  # the same file: wait for the earlier call to finish
            call = calls[batch[position]]
            return execute_tool(ctx, call.name, call.arguments, call_id=call.id)

        pool = ThreadPoolExecutor(max_workers=min(workers, len(batch)), thread_name_prefix="kit-tool")
        try:
            # submitted in order, each waiting only for earlier ones: a bounded pool cannot deadlock
            for position in range(len(batch)):
                futures.append(pool.submit(run, position))
            done = []
            for future in futures:
                done.append(future.result())
                self._tool_done(done[-1], step)
            return done
        finally:
            # Ctrl-C: calls not started yet never start; running ones finish on their own
            pool.shutdown(wait=False, cancel_futures=True)

    def _tool_done(self, outcome: ToolOutcome, step: int) -> None:
        self._emit(ev.ToolCallFinished(outcome.call_id, outcome.name, outcome.ok, outcome.blocked,
                                       outcome.truncated, outcome.preview, step, dict(outcome.arguments)))

    # ------------------------------------------------------------------ compaction

    def _maybe_compact(self, system: str, state: _TurnState, window: int) -> None:
        tokens = self._context_tokens(system)
        if cp.needs_flush(tokens, window) and not self._flushed:
            # once per compaction cycle: the transcript's flush line says so to a resumed session
            self._flushed = True
            self._memory_flush(system, state, tokens, window)
            tokens = self._context_tokens(system)
        if cp.needs_summary(tokens, window) and self._compaction_stuck_at != len(self.history):
            result = self._compact(system, state, tokens, window)
            state.compactions.append(result)
            if cp.needs_summary(result.after_tokens, window):
                self._compaction_stuck_at = len(self.history)

    def compact(self, focus: str | None = None) -> cp.CompactionResult:
        """Compact now (the REPL's `/compact [focus]`): old tool results become placeholders and
        everything before the last exchange is summarised, with `focus` telling the summariser
        what to keep."""
        state = _TurnState(window=self.ws.config.agent.context_window)
        system = self.system_prompt()
        tokens = self._context_tokens(system)
        return self._compact(system, state, tokens, state.window, focus=focus or "", keep_tokens=0, summary=True)

    def _memory_flush(self, system: str, state: _TurnState, tokens: int, window: int) -> None:
        """A silent turn asking the model to save what matters to today's daily note."""
        self._say("flush", f"memory flush: context at {tokens / window:.0%} of the window")
        prompt = self._text("memory-flush.md.j2", percent=int(100 * tokens / window), window=window,
                            today=clock.today().isoformat())
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, *self.history]
        flush_user = {"role": "user", "content": prompt}
        messages.append(flush_user)
        self._record(flush_user, hidden=True, kind="flush")
        flush_tools = self.tools.subset(FLUSH_TOOLS)
        ctx = ToolContext(self.ws, session_id=self.session.id, session_key=self.session.own_key,
                          interactive=False, tools=flush_tools, seen=self._seen)
        tools = flush_tools.schemas()
        for _ in range(FLUSH_MAX_CALLS):
            try:
                response = self._call(messages, tools, state)
            except (ProviderError, NoModelAvailable) as exc:
                self._say("flush", f"memory flush skipped: {exc}")
                return
            assistant = assistant_message(response)
            messages.append(assistant)
            self._record(assistant, usage=response.usage, hidden=True, kind="flush")
            if not response.tool_calls:
                return
            for call in response.tool_calls:
                if call.name not in flush_tools:
                    content = f"[kit] {call.name} is not available during a memory flush"
                else:
                    content = execute_tool(ctx, call.name, call.arguments, call_id=call.id).result
                tool_msg = tool_message(call, content)
                messages.append(tool_msg)
                self._record(tool_msg, hidden=True, kind="flush")

    def _compact(self, system: str, state: _TurnState, tokens: int, window: int, *, focus: str = "",
                 keep_tokens: int | None = None, summary: bool = False) -> cp.CompactionResult:
        """Cheap first: old tool results become one-line placeholders (no model call); only if the
        context is still over the summary threshold (or `summary`: /compact asked) is the old part
        summarised by the model. A summary starts a new cycle: the next approach flushes again."""
        if keep_tokens is None:
            system_tokens = cp.context_tokens([{"role": "system", "content": system}]) + self._tools_tokens()
            keep_tokens = max(0, int(cp.KEEP_RATIO * window) - system_tokens)
        old, recent = cp.split_history(self.history, keep_tokens)
        if not old:
            return cp.CompactionResult("none", tokens, tokens, error="nothing old enough to compact")
        fire_hook(self.ws, "compaction:before",
                  {"session_id": self.session.id, "tokens": tokens, "context_window": window,
                   "messages": len(self.history), "compacting": len(old)},
                  session_key=self.session.own_key)
        self._say("compaction", f"compacting: context at {tokens / window:.0%} of the window")
        mode, error, text = "none", None, None
        replaced = cp.placeholders(old)
        if replaced:
            self.history = [
                {**m, "content": replaced[m["tool_call_id"]]}
                if m.get("role") == "tool" and m.get("tool_call_id") in replaced else m
                for m in self.history
            ]
            self._record({"role": "system", "content": ""}, kind="compaction", mode="placeholders",
                         replaced=replaced)
            mode = "placeholders"
        after = self._context_tokens(system)
        if summary or cp.needs_summary(after, window):
            try:
                # the summariser reads the old part as it was, tool outputs included
                response = self._call(cp.summary_messages(old, self._text, focus=focus), [], state)
                text = (response.text or "").strip() or None
                if text is None:
                    error = "the model returned an empty summary"
            except (ProviderError, NoModelAvailable) as exc:
                error = f"summarising failed: {exc}"
            if text is not None:
                message = cp.summary_message(text)
                self.history = [message, *recent]
                self._record(message, kind="compaction", mode="summary", dropped=len(old))
                mode = "summary"
                self._flushed = False  # a new cycle: the next approach to the limit flushes again
            after = self._context_tokens(system)
        result = cp.CompactionResult(mode, tokens, after, dropped=len(old) if mode == "summary" else 0,
                                     replaced=replaced, summary=text, error=error)
        fire_hook(self.ws, "compaction:after", {"session_id": self.session.id, **result.to_json()},
                  session_key=self.session.own_key)
        return result
