"""OpenAI chat completions through the official SDK; with `base_url` it talks to any
OpenAI-compatible server (Ollama, llama.cpp, vLLM). The SDK is imported on first use.

Replies are streamed (SSE, `stream_options.include_usage` for the usage chunk) and turned into
kit.providers.events; `providers.<name>.stream: false` asks for one JSON reply instead, turned
into the same events.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from kit.providers.base import GenerationSettings, Usage, system_text
from kit.providers.events import Finish, TextDelta, ToolCallDelta, UsageUpdate
from kit.providers.streaming import SDKProvider


class OpenAIProvider(SDKProvider):
    """One configured provider (`providers.<name>` in kit.yaml) of type openai or ollama."""

    sdk = "openai"
    client_class = "OpenAI"

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        require_key: bool = True,
        stream: bool = True,
    ):
        super().__init__(name, base_url=base_url, api_key_env=api_key_env, timeout_s=timeout_s)
        # local servers (Ollama) take any key; the hosted API needs a real one
        self.require_key = require_key
        self.streaming = stream

    def _api_key(self) -> str:
        if self.require_key:
            return super()._api_key()
        return (os.environ.get(self.api_key_env) if self.api_key_env else None) or "kit-no-key"

    @property
    def hosted(self) -> bool:
        """The OpenAI API itself (not a compatible server): it wants `max_completion_tokens`."""
        return not self.base_url or "api.openai.com" in self.base_url

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str,
                generation: GenerationSettings | None = None) -> dict[str, Any]:
        """The keyword arguments of chat.completions.create for this call."""
        kwargs: dict[str, Any] = {"model": model, "messages": [_plain(m) for m in messages]}
        if tools:
            kwargs["tools"] = tools
        g = generation or GenerationSettings()
        if g.max_tokens is not None:
            # newer OpenAI models refuse max_tokens; compatible servers know only max_tokens
            kwargs["max_completion_tokens" if self.hosted else "max_tokens"] = g.max_tokens
        if g.temperature is not None:
            kwargs["temperature"] = g.temperature
        if g.top_p is not None:
            kwargs["top_p"] = g.top_p
        if g.stop:
            kwargs["stop"] = list(g.stop)
        if self.streaming:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    def events(self, kwargs: dict[str, Any]) -> Iterator[Any]:
        result = self.client().chat.completions.create(**kwargs)
        if not self.streaming:
            yield from events_of_completion(result)
            return
        finished, chunks = False, 0
        with result:
            refused = self.not_a_stream(result)
            if refused is not None:
                raise refused
            head = self.tap(result)
            for chunk in result:
                chunks += 1
                for event in events_of_chunk(chunk):
                    finished = finished or isinstance(event, Finish)
                    yield event
            if not finished:
                # the server closed the stream without saying the reply was complete
                raise self.ended(result, chunks, head)


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """Kit's system message may be two text parts (for Anthropic's cache breakpoint); local
    servers' chat templates want a string, so the parts are joined back, byte for byte."""
    if message.get("role") == "system" and not isinstance(message.get("content"), str):
        return {**message, "content": system_text(message.get("content"))}
    return message


def usage_of(raw: Any) -> Usage:
    details = getattr(raw, "prompt_tokens_details", None)
    return Usage(
        prompt_tokens=int(getattr(raw, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
        cache_read_tokens=int(getattr(details, "cached_tokens", 0) or 0),
    )


def events_of_chunk(chunk: Any) -> Iterator[Any]:
    """The events in one ChatCompletionChunk: text and tool-call deltas, the finish reason, and
    usage (in its own chunk with `choices: []` when include_usage is on)."""
    for choice in getattr(chunk, "choices", None) or ():
        if getattr(choice, "index", 0):
            continue  # n > 1 is never asked for
        delta = getattr(choice, "delta", None)
        if delta is not None:
            if getattr(delta, "content", None):
                yield TextDelta(delta.content)
            for call in getattr(delta, "tool_calls", None) or ():
                fn = getattr(call, "function", None)
                yield ToolCallDelta(
                    index=int(getattr(call, "index", 0) or 0),
                    id=getattr(call, "id", None) or None,
                    name=getattr(fn, "name", None) or None,
                    arguments=getattr(fn, "arguments", None) or "",
                )
        if getattr(choice, "finish_reason", None):
            yield Finish(choice.finish_reason)
    usage = getattr(chunk, "usage", None)
    if usage is not None:
        yield UsageUpdate(usage_of(usage))


def events_of_completion(response: Any) -> list[Any]:
    """The same events for a reply that was not streamed."""
    if not getattr(response, "choices", None):
        raise ValueError("response has no choices")
    choice = response.choices[0]
    message = choice.message
    events: list[Any] = []
    if message.content:
        events.append(TextDelta(message.content))
    for index, call in enumerate(message.tool_calls or ()):
        events.append(ToolCallDelta(index=index, id=call.id or None, name=call.function.name,
                                    arguments=call.function.arguments or ""))
    events.append(Finish(choice.finish_reason))
    if response.usage is not None:
        events.append(UsageUpdate(usage_of(response.usage)))
    return events
