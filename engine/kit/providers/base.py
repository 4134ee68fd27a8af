"""Types every provider speaks. Messages are OpenAI chat-format dicts:

    {"role": "system"|"user"|"assistant"|"tool", "content": str,
     "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": json-str}}],  # assistant
     "tool_call_id": str}                                                                  # tool

Tools are OpenAI function schemas: {"type": "function", "function": {"name", "description", "parameters"}}.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from kit.errors import KitError

# Error kinds (§9). Retryable kinds put the provider on a cooldown and move on to fallbacks.
ERROR_KINDS = (
    "auth",
    "auth_permanent",
    "billing",
    "rate_limit",
    "overloaded",
    "timeout",
    "format",
    "model_not_found",
    "context_overflow",
    "unreachable",
    "dropped",
    "interrupted",
)
# Retryable kinds put the provider/model on a cooldown once its retries are spent, and move on to
# the fallbacks. `unreachable` (nothing accepts the connection) is not retried on the same model:
# a server that is not listening will not be in a second, so the fallback is asked at once.
# `dropped` (the connection was reset or closed before a reply) and the others are retried first.
RETRYABLE = frozenset({"rate_limit", "overloaded", "timeout", "unreachable", "dropped"})
RETRY_SAME_MODEL = frozenset({"rate_limit", "overloaded", "timeout", "dropped"})


class ProviderError(KitError):
    def __init__(self, message: str, *, kind: str, provider: str = "", status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.provider = provider
        self.status = status
        self.retry_after = retry_after  # seconds the server asked for (Retry-After), if any

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


class StreamInterrupted(ProviderError):
    """The connection broke after part of the reply was already shown: retrying would repeat it,
    so the caller gets the partial reply (`partial`, finish_reason "interrupted") to keep."""

    def __init__(self, message: str, *, provider: str = "", partial: ModelResponse):
        super().__init__(message, kind="interrupted", provider=provider)
        self.partial = partial


def api_key(provider: str, env: str | None) -> str:
    """The key from the provider's `api_key_env`; an `auth` error naming the variable when unset
    (classified like a 401: no retry, no cooldown, next candidate)."""
    key = os.environ.get(env) if env else None
    if not key:
        raise ProviderError(f"{provider}: {env or 'an api_key_env'} is not set", kind="auth", provider=provider)
    return key


class NoModelAvailable(KitError):
    """Every configured model failed or is cooling down."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """Token counts of one model call. `prompt_tokens` counts the whole prompt, cached parts
    included (OpenAI's convention; Anthropic's input_tokens + cache reads + cache writes), so it
    is what the request weighs against the context window. `cache_read_tokens` came from the
    provider's prompt cache, `cache_write_tokens` were written to it (Anthropic)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass(frozen=True)
class Attempt:
    """One request of a model call (or a candidate skipped without a request)."""

    target: str  # "provider/model"
    outcome: str  # ok | cooldown | config | <error kind>
    message: str = ""
    cause: str = ""  # for a cooldown: the error kind that started it (what the user can fix)
    flag: bool = False  # the spec came from the caller (`kit run --model`), not from kit.yaml
    fix: str = ""  # what to do, when the failure itself knows (the kit.yaml line that left a provider out)
    wait_s: float = 0.0  # the pause before the next request to the same model (a retry)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"target": self.target, "outcome": self.outcome}
        if self.message:
            out["message"] = self.message
        if self.wait_s:
            out["wait_s"] = round(self.wait_s, 3)
        return out


# finish_reason values, in OpenAI's words for every provider
FINISH_LENGTH = "length"  # the max_tokens cap cut the reply


@dataclass(frozen=True)
class ModelResponse:
    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None  # stop | length | tool_calls | content_filter | interrupted
    model: str = ""  # "provider/model" that actually answered
    # names of tool calls the max_tokens cap cut mid-arguments: not in tool_calls, never executed
    cut_tool_calls: tuple[str, ...] = ()
    attempts: tuple[Attempt, ...] = ()  # every request of this call, retries and failovers included
    estimated_prompt_tokens: int = 0  # Kit's (calibrated) estimate of the request, before sending
    max_tokens: int | None = None  # the cap the request carried (None: the server's default)

    @property
    def truncated(self) -> bool:
        """The max_tokens cap cut the reply (its text, or a tool call it was writing)."""
        return self.finish_reason == FINISH_LENGTH


class Provider(Protocol):
    """One configured provider. `stream` yields kit.providers.events (the last is `Reply`);
    `complete` drains it into the reply."""

    name: str

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, model: str,
        generation: GenerationSettings | None = None,
    ) -> Iterator[Any]: ...

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, model: str,
        generation: GenerationSettings | None = None,
    ) -> ModelResponse: ...


@dataclass(frozen=True)
class GenerationSettings:
    """What a request asks of the model's sampling. None: not sent (the server's default)."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()

    def over(self, base: GenerationSettings) -> GenerationSettings:
        """These settings where set, `base` elsewhere."""
        return GenerationSettings(
            max_tokens=self.max_tokens if self.max_tokens is not None else base.max_tokens,
            temperature=self.temperature if self.temperature is not None else base.temperature,
            top_p=self.top_p if self.top_p is not None else base.top_p,
            stop=self.stop or base.stop,
        )

    def to_json(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                "stop": list(self.stop)}


def system_text(content: Any) -> str:
    """A message's content as one string: Kit sends the system prompt as two text parts (the
    stable prefix and the dynamic tail, see `system_message`); most servers want one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def system_message(text: str, stable_chars: int | None = None) -> dict[str, Any]:
    """The system message. With `stable_chars` (where the prompt's stable prefix ends) it is two
    OpenAI text parts, so a provider with prompt caching (Anthropic) can put a breakpoint there;
    OpenAI-compatible providers join them back into one string."""
    if not stable_chars or stable_chars >= len(text):
        return {"role": "system", "content": text}
    return {"role": "system", "content": [{"type": "text", "text": text[:stable_chars]},
                                          {"type": "text", "text": text[stable_chars:]}]}
