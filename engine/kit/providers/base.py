"""Types every provider speaks. Messages are OpenAI chat-format dicts:

    {"role": "system"|"user"|"assistant"|"tool", "content": str,
     "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": json-str}}],  # assistant
     "tool_call_id": str}                                                                  # tool

Tools are OpenAI function schemas: {"type": "function", "function": {"name", "description", "parameters"}}.
"""

from __future__ import annotations

import os
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
)
RETRYABLE = frozenset({"rate_limit", "overloaded", "timeout", "unreachable"})


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
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True)
class ModelResponse:
    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str = ""  # "provider/model" that actually answered


class Provider(Protocol):
    name: str

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, model: str
    ) -> ModelResponse: ...
