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
from dataclasses import dataclass, field
from typing import Any

from kit import clock
from kit.agent import compaction as cp
from kit.agent.sessions import SessionInfo, SessionStore, new_session_id, skill_message, typed_text
from kit.core import WorkspaceCore
from kit.fsutil import sha1_hex
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
from kit.tools import ToolContext, ToolOutcome, ToolRegistry, builtin_registry, execute_tool

REPEAT_WARN = 3  # identical consecutive calls before Kit tells the model to change approach
REPEAT_STOP = 5  # … and before it stops the run
FLUSH_MAX_CALLS = 4  # model calls a silent memory flush may use
FLUSH_TOOLS = ("memory_write", "memory_search", "memory_get")

HEARTBEAT_SKIPPED = "HEARTBEAT.md has no tasks"
KIT_NOTE = "[kit note]"  # a message from Kit to the model, not the user's words
CUT_CALL_NOTE = (
    KIT_NOTE + " Your reply reached the max_tokens cap ({cap}) while you were writing the tool call(s) "
    "{names}; the arguments were incomplete, so nothing was run. Call again with shorter arguments "
    "(write a large file in parts), or answer without the tool."
)
CUT_AFTER_CALLS_NOTE = (
    "\n\n" + KIT_NOTE + " Your reply reached the max_tokens cap ({cap}) after this call: anything you "
    "meant to write after it was lost."
)
INTERRUPTED = "[kit] not run: the turn was interrupted before this call"
REPEAT_NOTE = (
    "\n\n[kit note] You have made this exact call ({name} with the same arguments) {count} times in "
    "a row and the result will not change. Change approach: use different arguments, another tool, "
    "or answer with what you have."
)


class Client:
    """What the loop needs from a model: FailoverClient's shape (its optional `preflight()` is
    called once per turn, before active recall, to fail fast when no model can answer)."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelResponse: ...


def make_client(ws: WorkspaceCore, model: str | None = None, generation: GenerationSettings | None = None) -> Client:
    """The model client for `model` (or agent.model): kit.providers.failover.FailoverClient.
    `generation`: the run's own settings (--max-tokens, --temperature), over kit.yaml's."""
    from kit.providers.failover import FailoverClient

    return FailoverClient(ws, model=model, generation=generation)


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
    stopped: str | None = None  # None | max_iterations | repeated_tool_call | blocked | skipped
    compactions: tuple[cp.CompactionResult, ...] = ()
    recalled: int = 0
    model: str = ""
    finish_reason: str | None = None  # of the last model reply: stop | length | tool_calls …
    attempts: tuple[Attempt, ...] = ()  # every request of the turn, retries and failovers included
    max_tokens: int | None = None  # the cap the last request carried

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
    usage: UsageTotals = field(default_factory=UsageTotals)
    compactions: list[cp.CompactionResult] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)


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
    ):
        self.ws = ws
        self.kind = run_kind(kind).name  # an unknown kind fails here, before a session opens
        self.model = model
        self.interactive = interactive
        self.approve = approve
        self.status = status or (lambda message: None)
        self.client = client if client is not None else make_client(ws, model, generation)
        self._client_events: bool | None = None  # does client.complete take on_event?
        # what the model may call: the built-in tools unless the caller brings more (or fewer)
        self.tools = tools if tools is not None else builtin_registry()
        # the tools of the MCP servers in kit.yaml join the registry at each turn (kit.mcp_client)
        self.mcp = _mcp_clients(ws, self.status) if mcp else None
        self.store = SessionStore(ws)
        self.history: list[dict[str, Any]] = []
        self.session: SessionInfo = self._open(session_key)
        self._prompt_cache: tuple[Any, Any] | None = None
        self._warning_state = _warning_state()
        self._bootstrap = _bootstrap_callback(ws, self.session.key)
        self._flushed = False
        self._compaction_stuck_at: int | None = None
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
                               self.model or str(self.ws.config.get("agent.model")))
            self._pending = []
        else:
            self._pending = None
            self.history = self.store.load_messages(info.id)
        started = fire_hook(self.ws, "session:start",
                            {"session_id": info.id, "key": info.key, "resumed": resumed,
                             # startup | resume | clear (after /new or /reset), as Claude Code names it
                             "source": "clear" if after else ("resume" if resumed else "startup")},
                            session_key=info.key)
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
        return {"session_id": self.session.id, "key": self.session.key, "messages": self.conversation(), **extra}

    def end_session(self, reason: str = "end", *, archived: bool = False) -> None:
        """Fire session:end (session-memory archives the conversation) and close the session.

        `archived`: a command:new / command:reset event already carried the messages, so
        session:end carries none — the conversation is archived once, not twice."""
        if self.history:
            data = self.hook_data(reason=reason)
            if archived:
                data["messages"] = []
                data["archived_by"] = f"command:{reason}"
            fire_hook(self.ws, "session:end", data, session_key=self.session.key)
        if self.persisted:
            self.store.end(self.session.id)

    def new_session(self, reason: str = "new", *, archived: bool = True) -> SessionInfo:
        """End the current session and start a fresh one under the same key (/new, /reset)."""
        key = self.session.key if self.session.key != self.session.id else None
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
                    self.status(f"prompt: {warning}")
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

    def _call(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], state: _TurnState) -> ModelResponse:
        """One model call; retries, failovers and warnings reach `status` as they happen."""
        if self._client_events is None:
            params = inspect.signature(self.client.complete).parameters
            self._client_events = "on_event" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
        if self._client_events:
            response = self.client.complete(messages, tools, on_event=self._relay)
        else:  # a caller's own client, without events
            response = self.client.complete(messages, tools)
        attempts = getattr(response, "attempts", ())
        state.attempts.extend(attempts)
        state.usage.add(response.usage, getattr(response, "estimated_prompt_tokens", 0))
        return response

    def _relay(self, event: Any) -> None:
        line = getattr(event, "line", None)
        if line and getattr(event, "type", "") in ("retry", "failover", "notice"):
            self.status(line)

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
            self.store.create(info.key if info.key != info.id else None, model=info.model,
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
        ws = self.ws
        state = _TurnState()
        turn_ts = clock.timestamp()  # recalls from here on are this turn's (reply credit)
        # a turn interrupted mid-tools (Ctrl-C in the REPL, a killed process before --session
        # resumes) left calls without results; every later request would be rejected as malformed
        for call_id, name in unanswered_calls(self.history):
            self._append(tool_message(ToolCall(call_id, name, {}), INTERRUPTED))
        window = int(ws.config.get("agent.context_window"))
        received = fire_hook(ws, "message:received", {"text": text, "session_id": self.session.id},
                             session_key=self.session.key)
        if received.blocked:
            reply = f"Message blocked by a hook: {received.reason or 'no reason given'}"
            return TurnResult(self.session.id, reply, (), 0,
                              state.usage.to_json(0, window), stopped="blocked")
        rewritten = received.data.get("text")
        if isinstance(rewritten, str):
            text = rewritten
        hook_context = [*getattr(self, "_hook_context", []), *(getattr(received, "context", None) or [])]
        self._hook_context = []

        self.sync_tools()
        prompt = self.prompt_result()
        kind = run_kind(self.kind)
        if kind.skip_without_tasks and getattr(prompt, "heartbeat_empty", False):
            # §4: a heartbeat run is skipped while HEARTBEAT.md is effectively empty
            return TurnResult(self.session.id, "", (), 0, state.usage.to_json(0, window), stopped="skipped")
        preflight = getattr(self.client, "preflight", None)
        if preflight is not None:
            preflight()  # no model at all: say so now, not after active recall's model load
        system = prompt.prompt
        from kit.agent.recall import ActiveRecall, active_recall

        if not kind.recall:
            # shared (group) runs keep MEMORY.md and USER.md out of the prompt; private daily
            # notes must not leak in through recall either (memory_search stays available)
            recall = ActiveRecall("")
        else:
            # what the system prompt already carries (MEMORY.md) is not recalled again
            in_prompt = {f.name for f in getattr(prompt, "files", ()) if getattr(f, "injected_chars", 0)}
            try:
                recall = active_recall(ws, text, exclude=in_prompt)
            except Exception as exc:  # noqa: BLE001 - recall is an aid; the turn goes on without it
                recall = ActiveRecall("", error=f"active recall failed: {type(exc).__name__}: {exc}")
        if recall.error:
            self.status(recall.error)
        # `text`: the user's own words, when the model receives more (a recall block, a skill body)
        own = typed_text(text)
        content = recall.apply(text)
        if hook_context:  # after the user's words, like the recall block; never in the cached system prompt
            content += "\n\n<hook-context>\n" + "\n\n".join(hook_context) + "\n</hook-context>"
        self._append({"role": "user", "content": content},
                     text=own if recall.block or hook_context or own != text.strip() else None)

        ctx = ToolContext(ws, session_id=self.session.id, session_key=self.session.key,
                          interactive=self.interactive, approve=self.approve, tools=self.tools,
                          seen=self._seen, skills=self._active_skills(text))
        tools = self.tools.schemas()
        max_iterations = int(ws.config.get("agent.max_iterations"))
        repeats = _RepeatTracker()
        outcomes: list[ToolOutcome] = []
        iterations = 0
        stopped: str | None = None
        reply = ""
        model_name = ""
        overflow_retried = False
        stopped_on = ""
        finish_reason: str | None = None
        max_tokens: int | None = None
        cuts = 0  # replies whose tool call the max_tokens cap cut, this turn
        while True:
            if iterations >= max_iterations:
                stopped = "max_iterations"
                reply = (f"Stopped: reached agent.max_iterations ({max_iterations}) before a final "
                         "answer. Ask again to continue, or raise agent.max_iterations in kit.yaml.")
                break
            system = self.system_prompt()  # a workspace edit mid-turn applies to the next call
            self._maybe_compact(system, state, window)
            iterations += 1
            try:
                try:
                    response = self._call([self._system_message(system), *self.history], tools, state)
                except ProviderError as exc:
                    if exc.kind != "context_overflow" or overflow_retried:
                        raise
                    # the model's window is smaller than our estimate: compact now and retry once
                    overflow_retried = True
                    tokens = self._context_tokens(system)
                    state.compactions.append(self._compact(system, state, tokens, window))
                    response = self._call([self._system_message(system), *self.history], tools, state)
            except StreamInterrupted as exc:
                # the reply broke off after it began: keep what arrived, say so, end the turn
                partial = exc.partial
                state.attempts.extend(partial.attempts)
                self._append(assistant_message(partial), usage=partial.usage, model=partial.model or None,
                             finish_reason="interrupted")
                self.status(f"{exc}; the partial reply is kept in the session")
                reply, stopped, finish_reason = partial.text or "", "interrupted", "interrupted"
                model_name = partial.model or model_name
                break
            model_name = response.model or model_name
            finish_reason = response.finish_reason
            max_tokens = getattr(response, "max_tokens", None)
            assistant = assistant_message(response)
            self._append(assistant, usage=response.usage, model=response.model or None,
                         finish_reason=response.finish_reason,
                         attempts=[a.to_json() for a in getattr(response, "attempts", ())] or None)
            cut_calls = tuple(getattr(response, "cut_tool_calls", ()))
            if cut_calls and not response.tool_calls:
                cuts += 1
                if cuts >= 2:
                    stopped, reply = "cut_tool_call", (
                        f"Stopped: the max_tokens cap ({max_tokens or 'the server default'}) cut the model's "
                        f"tool call ({', '.join(cut_calls)}) twice. Raise agent.max_tokens (or pass "
                        "--max-tokens), or ask for smaller steps.")
                    break
                # tell the model, which sees its unfinished call as not made, and let it try again
                self._append({"role": "user", "content": CUT_CALL_NOTE.format(
                    cap=max_tokens or "the server's", names=", ".join(cut_calls))}, kind="notice")
                continue
            if not response.tool_calls:
                reply = response.text or ""
                break
            for call in response.tool_calls:
                count = repeats.see(call_signature(call.name, call.arguments))
                if stopped or count >= REPEAT_STOP:
                    if not stopped:
                        stopped, stopped_on = "repeated_tool_call", call.name
                    # every tool call needs an answer, or the next request is malformed
                    self._append(tool_message(call, f"[kit] not run: the run was stopped ({call.name} "
                                                        f"repeated {REPEAT_STOP} times in a row)"))
                    continue
                outcome = execute_tool(ctx, call.name, call.arguments, call_id=call.id)
                outcomes.append(outcome)
                content = outcome.result
                if count >= REPEAT_WARN:
                    content += REPEAT_NOTE.format(name=call.name, count=count)
                if call is response.tool_calls[-1] and (response.truncated or cut_calls):
                    # whatever followed the last complete call (a cut call, text) is lost: say so
                    content += CUT_AFTER_CALLS_NOTE.format(cap=max_tokens or "the server's")
                self._append(tool_message(call, content))
            if stopped:
                reply = (f"Stopped: the same tool call ({stopped_on}) was repeated "
                         f"{REPEAT_STOP} times in a row without progress.")
                break

        if reply and not stopped:
            try:  # recalls whose text reached the answer earn dreaming's use credit
                from kit.agent.recall import credit_reply

                credit_reply(ws, turn_ts, reply)
            except Exception as exc:  # noqa: BLE001 - credit is an aid; the turn has its answer
                self.status(f"recall credit failed: {type(exc).__name__}: {exc}")
        fire_hook(ws, "message:sent", {"text": reply, "session_id": self.session.id, "stopped": stopped},
                  session_key=self.session.key)
        tokens = self._context_tokens(system)
        return TurnResult(
            self.session.id, reply, tuple(outcomes), iterations, state.usage.to_json(tokens, window),
            stopped=stopped, compactions=tuple(state.compactions), recalled=len(recall.hits),
            model=model_name, finish_reason=finish_reason, attempts=tuple(state.attempts),
            max_tokens=max_tokens,
        )

    # ------------------------------------------------------------------ compaction

    def _maybe_compact(self, system: str, state: _TurnState, window: int) -> None:
        tokens = self._context_tokens(system)
        if cp.needs_flush(tokens, window) and not self._flushed:
            self._flushed = True
            self._memory_flush(system, state, tokens, window)
            tokens = self._context_tokens(system)
        if cp.needs_summary(tokens, window) and self._compaction_stuck_at != len(self.history):
            result = self._compact(system, state, tokens, window)
            state.compactions.append(result)
            if result.mode != "none":
                self._flushed = False  # a new cycle: the next approach to the limit flushes again
            if cp.needs_summary(result.after_tokens, window):
                self._compaction_stuck_at = len(self.history)

    def _memory_flush(self, system: str, state: _TurnState, tokens: int, window: int) -> None:
        """A silent turn asking the model to save what matters to today's daily note."""
        self.status(f"memory flush: context at {tokens / window:.0%} of the window")
        prompt = cp.FLUSH_PROMPT.render(percent=int(100 * tokens / window), window=window,
                                        today=clock.today().isoformat())
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, *self.history]
        flush_user = {"role": "user", "content": prompt}
        messages.append(flush_user)
        self._record(flush_user, hidden=True, kind="flush")
        flush_tools = self.tools.subset(FLUSH_TOOLS)
        ctx = ToolContext(self.ws, session_id=self.session.id, session_key=self.session.key,
                          interactive=False, tools=flush_tools, seen=self._seen)
        tools = flush_tools.schemas()
        for _ in range(FLUSH_MAX_CALLS):
            try:
                response = self._call(messages, tools, state)
            except (ProviderError, NoModelAvailable) as exc:
                self.status(f"memory flush skipped: {exc}")
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

    def _compact(self, system: str, state: _TurnState, tokens: int, window: int) -> cp.CompactionResult:
        system_tokens = cp.context_tokens([{"role": "system", "content": system}]) + self._tools_tokens()
        keep = max(0, int(cp.KEEP_RATIO * window) - system_tokens)
        old, recent = cp.split_history(self.history, keep)
        if not old:
            return cp.CompactionResult("none", tokens, tokens, error="nothing old enough to compact")
        fire_hook(self.ws, "compaction:before",
                  {"session_id": self.session.id, "tokens": tokens, "context_window": window,
                   "messages": len(self.history), "compacting": len(old)},
                  session_key=self.session.key)
        self.status(f"compacting: context at {tokens / window:.0%} of the window")
        error = None
        summary = None
        try:
            response = self._call(cp.summary_messages(old), [], state)
            summary = (response.text or "").strip() or None
            if summary is None:
                error = "the model returned an empty summary"
        except (ProviderError, NoModelAvailable) as exc:
            error = f"summarising failed: {exc}"
        if summary is not None:
            message = cp.summary_message(summary)
            self.history = [message, *recent]
            self._record(message, kind="compaction", mode="summary", dropped=len(old))
            mode, replaced = "summary", {}
        else:
            replaced = cp.placeholders(old)
            self.history = [
                {**m, "content": replaced[m["tool_call_id"]]}
                if m.get("role") == "tool" and m.get("tool_call_id") in replaced else m
                for m in self.history
            ]
            if replaced:
                self._record({"role": "system", "content": ""}, kind="compaction",
                                  mode="placeholders", replaced=replaced)
            mode = "placeholders" if replaced else "none"
        after = self._context_tokens(system)
        result = cp.CompactionResult(mode, tokens, after, dropped=len(old) if mode == "summary" else 0,
                                     replaced=replaced, summary=summary, error=error)
        fire_hook(self.ws, "compaction:after", {"session_id": self.session.id, **result.to_json()},
                  session_key=self.session.key)
        return result
