"""What a streamed model call yields: frozen dataclasses, the last one always `Reply`.

    for event in client.stream(messages, tools):
        if isinstance(event, TextDelta): print(event.text, end="")
    response = drain(client.stream(messages, tools))   # the same call, not streamed

Provider events (`TextDelta`, `ToolCallDelta`, `UsageUpdate`, `Finish`) come from the model;
status events (`ModelCall`, `Retry`, `Failover`, `Notice`) from the failover client, each with a
`line` for people. Every event has `type` and `to_json()` (one `--stream-json` line).
`Assembler` builds the reply from the deltas — the providers use it, and so can a caller that
stops early (Ctrl-C) and wants what arrived.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kit.providers.base import FINISH_LENGTH, Attempt, ModelResponse, ToolCall, Usage


def _fields(event: Any) -> dict[str, Any]:
    return {"type": event.type, **{k: v for k, v in event.__dict__.items()}}


@dataclass(frozen=True)
class TextDelta:
    text: str
    type: ClassVar[str] = "text_delta"

    def to_json(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of tool call `index`: its first delta has `id` and `name`; `arguments` is the
    next piece of the JSON arguments string."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    type: ClassVar[str] = "tool_call_delta"

    def to_json(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True)
class UsageUpdate:
    usage: Usage
    type: ClassVar[str] = "usage"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self.usage.to_json()}


@dataclass(frozen=True)
class Finish:
    reason: str | None  # OpenAI's words: stop | length | tool_calls | content_filter
    type: ClassVar[str] = "finish"

    def to_json(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True)
class Reply:
    """The assembled reply; always the last event of a call that succeeded."""

    response: ModelResponse
    type: ClassVar[str] = "reply"

    def to_json(self) -> dict[str, Any]:
        r = self.response
        return {
            "type": self.type,
            "model": r.model,
            "text": r.text,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in r.tool_calls],
            "finish_reason": r.finish_reason,
            "cut_tool_calls": list(r.cut_tool_calls),
            "usage": r.usage.to_json(),
            "attempts": [a.to_json() for a in r.attempts],
        }


# ---------------------------------------------------------------------------- status events


@dataclass(frozen=True)
class ModelCall:
    """A request is about to go to `target` (its `attempt`-th on this call)."""

    target: str
    attempt: int = 1
    type: ClassVar[str] = "model_call"

    @property
    def line(self) -> str:
        return f"asking {self.target}" + (f" (attempt {self.attempt})" if self.attempt > 1 else "")

    def to_json(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True)
class Retry:
    """Attempt `attempt` at `target` failed with a retryable error; the same model is asked
    again after `wait_s`."""

    target: str
    attempt: int
    max_attempts: int
    wait_s: float
    kind: str
    message: str
    type: ClassVar[str] = "retry"

    @property
    def line(self) -> str:
        return (f"{self.target} {KIND_WORDS.get(self.kind, self.kind)} ({self.message}); retrying in "
                f"{self.wait_s:.1f} s (attempt {self.attempt + 1} of {self.max_attempts})")

    def to_json(self) -> dict[str, Any]:
        return {**_fields(self), "wait_s": round(self.wait_s, 3)}


@dataclass(frozen=True)
class Failover:
    """`target` answers after the candidates before it failed (`failed`, newest last)."""

    target: str
    failed: tuple[Attempt, ...] = ()
    type: ClassVar[str] = "failover"

    @property
    def line(self) -> str:
        seen: list[str] = []
        for attempt in self.failed:
            words = f"{attempt.target} {KIND_WORDS.get(attempt.outcome, attempt.outcome)}"
            if words not in seen:
                seen.append(words)
        return f"{', '.join(seen)}, answered by {self.target}"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "target": self.target, "failed": [a.to_json() for a in self.failed]}


@dataclass(frozen=True)
class Notice:
    """A one-time warning about a model or its server (`code` e.g. "tools_dropped")."""

    target: str
    code: str
    message: str
    type: ClassVar[str] = "notice"

    @property
    def line(self) -> str:
        return f"warning: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return _fields(self)


KIND_WORDS = {
    "rate_limit": "rate-limited",
    "overloaded": "overloaded",
    "timeout": "timed out",
    "unreachable": "unreachable",
    "dropped": "dropped the connection",
    "interrupted": "was interrupted",
    "cooldown": "cooling down",
    "auth": "refused the key",
    "auth_permanent": "refused the key",
    "billing": "has a billing problem",
    "model_not_found": "does not serve the model",
    "config": "is misconfigured",
}

ProviderEvent = TextDelta | ToolCallDelta | UsageUpdate | Finish | Reply
StatusEvent = ModelCall | Retry | Failover | Notice
StreamEvent = ProviderEvent | StatusEvent
VISIBLE = (TextDelta, ToolCallDelta)  # once one of these was yielded, a retry would repeat it


# ---------------------------------------------------------------------------- assembling


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class Assembler:
    """Builds a ModelResponse from provider events. Tool calls are keyed by `index`, so several
    calls in one reply and arguments split across any number of deltas come out whole."""

    def __init__(self, model: str = ""):
        self.model = model
        self.text: list[str] = []
        self.calls: dict[int, _Call] = {}
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.visible = False  # a text or tool-call delta arrived

    def feed(self, event: Any) -> None:
        if isinstance(event, TextDelta):
            self.text.append(event.text)
            self.visible = self.visible or bool(event.text)
        elif isinstance(event, ToolCallDelta):
            call = self.calls.setdefault(event.index, _Call())
            if event.id and not call.id:
                call.id = event.id
            if event.name:
                # servers send the name whole in the first delta; a few send it in pieces
                call.name = event.name if not call.name or event.name.startswith(call.name) else call.name + event.name
            call.arguments.append(event.arguments or "")
            self.visible = True
        elif isinstance(event, UsageUpdate):
            self.usage = event.usage
        elif isinstance(event, Finish):
            self.finish_reason = event.reason

    def response(self) -> ModelResponse:
        """The reply. At a `length` finish, a call whose arguments are not complete JSON was cut
        by the cap: it goes to `cut_tool_calls` instead of `tool_calls`."""
        calls: list[ToolCall] = []
        cut: list[str] = []
        for position, index in enumerate(sorted(self.calls)):
            call = self.calls[index]
            raw = "".join(call.arguments)
            arguments = parse_arguments(raw, strict=self.finish_reason == FINISH_LENGTH)
            if arguments is None or not call.name:
                cut.append(call.name or f"call {index}")
                continue
            calls.append(ToolCall(id=call.id or f"call_{position}", name=call.name, arguments=arguments))
        text = "".join(self.text)
        return ModelResponse(
            text=text or None,
            tool_calls=tuple(calls),
            usage=self.usage,
            finish_reason=self.finish_reason,
            model=self.model,
            cut_tool_calls=tuple(cut),
        )

    def partial(self) -> ModelResponse:
        """What arrived so far, for a call that broke off: text only (half a tool call is not
        a call), finish_reason "interrupted"."""
        text = "".join(self.text)
        return ModelResponse(text=text or None, usage=self.usage, finish_reason="interrupted", model=self.model)


def parse_arguments(raw: Any, *, strict: bool = False) -> dict[str, Any] | None:
    """Tool-call arguments arrive as a JSON string. Small models sometimes send junk, which is
    kept as {"_raw": …} for the tool to refuse. `strict` (the reply was cut by the cap): junk or
    nothing at all means the cap cut the call, so None."""
    if isinstance(raw, dict):
        return raw
    if raw is None or not str(raw).strip():
        return None if strict else {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return None if strict else {"_raw": str(raw)}
    return value if isinstance(value, dict) else {"_value": value}


def drain(events: Iterable[Any], on_event: Callable[[Any], None] | None = None) -> ModelResponse:
    """The reply of a stream (its `Reply` event), passing every event to `on_event` on the way."""
    reply: ModelResponse | None = None
    for event in events:
        if on_event is not None:
            on_event(event)
        if isinstance(event, Reply):
            reply = event.response
    if reply is None:
        raise RuntimeError("the stream ended without a Reply event")  # a provider bug, not the server's
    return reply
