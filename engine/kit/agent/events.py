"""What a turn reports while it runs: frozen events handed to `Agent(on_event=...)`.

The loop consumes the provider's stream (kit.providers.events) and re-emits what a person or a
program watching the turn needs, in this order per model call:

    model_call (waiting for …) → text_delta … → tool_call → tool_result … → (next call) … → final

Status lines (retry, failover, notice, compaction, memory flush, recall errors, interruption)
come as `status` events wherever they happen. Every event has `type` and `to_json()`: one line of
`kit run --stream-json` (the schema is documented in docs/agent.md, "Streaming"). The library
never prints; the CLI renders these (live Markdown and a spinner on a terminal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

STREAM_SCHEMA = 1  # the `v` of the stream's first event; bumped when a field changes meaning


@dataclass(frozen=True)
class TurnStarted:
    """The turn begins: its session and the model asked first."""

    session: str
    model: str
    type: ClassVar[str] = "turn_start"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "v": STREAM_SCHEMA, "session": self.session, "model": self.model}


@dataclass(frozen=True)
class ModelWaiting:
    """A request went to `target`; nothing has come back yet (the spinner's model name)."""

    target: str
    attempt: int = 1
    step: int = 1  # the model call's number in this turn (1, 2 … after tool results)
    type: ClassVar[str] = "model_call"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "target": self.target, "attempt": self.attempt, "step": self.step}


@dataclass(frozen=True)
class TextDelta:
    """The next piece of the reply text, as the model produced it."""

    text: str
    step: int = 1
    type: ClassVar[str] = "text_delta"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text, "step": self.step}


@dataclass(frozen=True)
class ToolCallStarted:
    """The model asked for a tool; it runs now (assembled: the arguments are whole)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    step: int = 1
    type: ClassVar[str] = "tool_call"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "id": self.id, "name": self.name, "arguments": self.arguments,
                "step": self.step}


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool call's outcome (what the model receives, as a preview)."""

    id: str
    name: str
    ok: bool
    blocked: bool
    truncated: bool
    preview: str
    step: int = 1
    arguments: dict[str, Any] = field(default_factory=dict)  # as run (a tool:before hook may rewrite them)
    type: ClassVar[str] = "tool_result"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "id": self.id, "name": self.name, "ok": self.ok, "blocked": self.blocked,
                "truncated": self.truncated, "preview": self.preview, "step": self.step}


@dataclass(frozen=True)
class StatusLine:
    """Something a person should know: `kind` is retry | failover | notice | compaction | flush |
    recall | prompt | interrupted | info; `line` is what the CLI prints; `data` the details
    (a provider status event's own fields)."""

    kind: str
    line: str
    data: dict[str, Any] = field(default_factory=dict)
    type: ClassVar[str] = "status"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "kind": self.kind, "line": self.line, **self.data}


@dataclass(frozen=True)
class TurnFinished:
    """The turn's result (`kit run --json`'s document, under type "final")."""

    result: Any  # TurnResult (kit.agent.loop); Any here so this module imports nothing of the loop
    type: ClassVar[str] = "final"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self.result.to_json()}


AgentEvent = TurnStarted | ModelWaiting | TextDelta | ToolCallStarted | ToolCallFinished | StatusLine | TurnFinished
EventCallback = Callable[[AgentEvent], None]
