"""OpenAI chat completions through the official SDK; with `base_url` it talks to any
OpenAI-compatible server (Ollama, llama.cpp, vLLM). The SDK is imported on first use."""

from __future__ import annotations

import json
import os
from typing import Any

from kit.providers.base import ModelResponse, ToolCall, Usage, api_key
from kit.providers.classify import from_sdk_exception


class OpenAIProvider:
    """One configured provider (`providers.<name>` in kit.yaml) of type openai or ollama."""

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        require_key: bool = True,
    ):
        self.name = name
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        # local servers (Ollama) take any key; the hosted API needs a real one
        self.require_key = require_key
        self._client = None

    def _api_key(self) -> str:
        if self.require_key:
            return api_key(self.name, self.api_key_env)
        return (os.environ.get(self.api_key_env) if self.api_key_env else None) or "kit-no-key"

    def client(self):
        if self._client is None:
            import openai  # heavy: only when a model is actually called

            # max_retries=0: retrying and failing over is FailoverClient's job, with cooldowns
            self._client = openai.OpenAI(
                api_key=self._api_key(), base_url=self.base_url, timeout=self.timeout_s, max_retries=0
            )
        return self._client

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str) -> ModelResponse:
        import openai

        kwargs: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        try:
            response = self.client().chat.completions.create(**kwargs)
            return parse_response(response, f"{self.name}/{model}")
        except Exception as exc:  # classify everything: the caller decides what is retryable
            raise from_sdk_exception(exc, self.name, openai) from exc


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments arrive as a JSON string; small models sometimes send junk."""
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return {"_raw": str(raw)}
    return value if isinstance(value, dict) else {"_value": value}


def parse_response(response: Any, label: str) -> ModelResponse:
    if not getattr(response, "choices", None):
        raise ValueError("response has no choices")
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(id=c.id or f"call_{i}", name=c.function.name, arguments=parse_arguments(c.function.arguments))
        for i, c in enumerate(message.tool_calls or ())
    )
    usage = response.usage
    return ModelResponse(
        text=message.content,
        tool_calls=calls,
        usage=Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        ),
        finish_reason=choice.finish_reason,
        model=label,
    )
