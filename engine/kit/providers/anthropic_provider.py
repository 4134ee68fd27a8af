"""Anthropic Messages API through the official SDK (imported on first use).

Kit speaks OpenAI-format messages everywhere; this module translates them: the system message
becomes `system`, assistant tool calls become `tool_use` blocks, `tool` messages become
`tool_result` blocks on a user turn (consecutive ones merged, as the API requires).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kit.providers.base import GenerationSettings, Usage, system_text
from kit.providers.events import Finish, TextDelta, ToolCallDelta, UsageUpdate, parse_arguments
from kit.providers.streaming import SDKProvider

MAX_TOKENS = 4096  # the API requires max_tokens; used only when no setting gives one
CACHE = {"type": "ephemeral"}
# stop_reason in OpenAI's words, so the loop checks one vocabulary
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


class AnthropicProvider(SDKProvider):
    sdk = "anthropic"
    client_class = "Anthropic"

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        timeout_s: float = 120.0,
        prompt_cache: bool = True,
    ):
        super().__init__(name, base_url=base_url, api_key_env=api_key_env, timeout_s=timeout_s)
        self.prompt_cache = prompt_cache

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str,
                generation: GenerationSettings | None = None) -> dict[str, Any]:
        """The keyword arguments of messages.create. With prompt caching on, `cache_control`
        breakpoints go after the tool list, after the system prompt's stable prefix (the part
        before the time; see kit.providers.base.system_message) and on the last message, so each
        request reads the previous one's prefix from the cache."""
        g = generation or GenerationSettings()
        system, converted = to_anthropic_messages(messages, cache=self.prompt_cache)
        kwargs: dict[str, Any] = {"model": model, "max_tokens": g.max_tokens or MAX_TOKENS,
                                  "messages": converted, "stream": True}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = to_anthropic_tools(tools)
            if self.prompt_cache:
                kwargs["tools"][-1]["cache_control"] = dict(CACHE)
        # sampling goes in the body itself: recent SDKs dropped these keyword arguments (newer
        # models refuse them: unset agent.temperature / top_p for those), older SDKs ignore none
        sampling = {k: v for k, v in (("temperature", g.temperature), ("top_p", g.top_p)) if v is not None}
        if sampling:
            kwargs["extra_body"] = sampling
        if g.stop:
            kwargs["stop_sequences"] = list(g.stop)
        return kwargs

    def events(self, kwargs: dict[str, Any]) -> Iterator[Any]:
        translate = _Translator()
        received = 0
        with self.client().messages.create(**kwargs) as raw_events:
            refused = self.not_a_stream(raw_events)
            if refused is not None:
                raise refused
            head = self.tap(raw_events)
            for raw in raw_events:
                received += 1
                yield from translate(raw)
            if not translate.stopped:
                raise self.ended(raw_events, received, head)


class _Translator:
    """Messages API stream events → Kit events. Tool-use blocks are numbered 0, 1 … among
    themselves (text blocks take content indexes too); a tool_use block that closes without any
    input delta had no arguments: "{}"."""

    def __init__(self) -> None:
        self.tool_index: dict[int, int] = {}  # content block index -> tool call index
        self.had_input: set[int] = set()
        self.usage = Usage()
        self.stopped = False

    def __call__(self, raw: Any) -> Iterator[Any]:
        kind = getattr(raw, "type", "")
        if kind == "message_start":
            self.usage = _usage(getattr(raw.message, "usage", None), self.usage)
        elif kind == "content_block_start":
            block = raw.content_block
            if block.type == "tool_use":
                index = self.tool_index.setdefault(raw.index, len(self.tool_index))
                yield ToolCallDelta(index=index, id=block.id, name=block.name)
            elif block.type == "text" and getattr(block, "text", ""):
                yield TextDelta(block.text)
        elif kind == "content_block_delta":
            delta = raw.delta
            if delta.type == "text_delta" and delta.text:
                yield TextDelta(delta.text)
            elif delta.type == "input_json_delta" and raw.index in self.tool_index:
                self.had_input.add(raw.index)
                yield ToolCallDelta(index=self.tool_index[raw.index], arguments=delta.partial_json or "")
        elif kind == "content_block_stop":
            if raw.index in self.tool_index and raw.index not in self.had_input:
                yield ToolCallDelta(index=self.tool_index[raw.index], arguments="{}")
        elif kind == "message_delta":
            self.usage = _usage(getattr(raw, "usage", None), self.usage)
            reason = getattr(raw.delta, "stop_reason", None)
            if reason:
                yield Finish(FINISH.get(reason, reason))
        elif kind == "message_stop":
            self.stopped = True
            yield UsageUpdate(self.usage)


def _usage(raw: Any, before: Usage) -> Usage:
    """Anthropic counts the uncached input, cache reads and cache writes apart; Kit's
    prompt_tokens is their sum (what the request weighs). message_delta repeats output_tokens
    (cumulative) and, on newer APIs, the input counts."""
    if raw is None:
        return before

    def value(name: str, default: int) -> int:
        got = getattr(raw, name, None)
        return default if got is None else int(got)

    read = value("cache_read_input_tokens", before.cache_read_tokens)
    write = value("cache_creation_input_tokens", before.cache_write_tokens)
    fresh = value("input_tokens", before.prompt_tokens - before.cache_read_tokens - before.cache_write_tokens)
    return Usage(prompt_tokens=fresh + read + write, completion_tokens=value("output_tokens", before.completion_tokens),
                 cache_read_tokens=read, cache_write_tokens=write)


def to_anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        fn = tool.get("function", tool)
        out.append(
            {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    return out


_text = system_text


def to_anthropic_messages(messages: list[dict[str, Any]], *, cache: bool = False) -> tuple[Any, list[dict[str, Any]]]:
    """(system, messages) for the API. Without `cache` the system prompt is one string; with it,
    a list of text blocks with a breakpoint after the stable prefix, and a breakpoint on the last
    message's last block."""
    system_parts: list[str] = []
    system_blocks: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []

    def append(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)  # the API wants alternating roles
        else:
            out.append({"role": role, "content": blocks})

    for msg in messages:
        role = msg.get("role")
        if role == "system":
            content = msg.get("content")
            system_parts.append(_text(content))
            parts = [p for p in content if isinstance(p, dict)] if isinstance(content, list) else [{"text": _text(content)}]
            for index, part in enumerate(parts):
                if part.get("text"):
                    # the first part is the stable prefix when Kit split the prompt in two
                    marked = index == 0 and len(parts) > 1
                    system_blocks.append({"type": "text", "text": part["text"], **({"cache_control": dict(CACHE)} if marked else {})})
        elif role == "tool":
            append(
                "user",
                [{"type": "tool_result", "tool_use_id": msg.get("tool_call_id", ""), "content": _text(msg.get("content"))}],
            )
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            text = _text(msg.get("content"))
            if text:
                blocks.append({"type": "text", "text": text})
            for call in msg.get("tool_calls") or ():
                fn = call.get("function", {})
                blocks.append(
                    {"type": "tool_use", "id": call.get("id", ""), "name": fn.get("name", ""),
                     "input": parse_arguments(fn.get("arguments"))}
                )
            if blocks:
                append("assistant", blocks)
        else:
            append("user", [{"type": "text", "text": _text(msg.get("content"))}])
    if not cache:
        return "\n\n".join(p for p in system_parts if p), out
    if system_blocks and not any("cache_control" in b for b in system_blocks):
        system_blocks[-1]["cache_control"] = dict(CACHE)  # one string: cache all of it
    if out and out[-1]["content"]:
        out[-1]["content"][-1]["cache_control"] = dict(CACHE)
    return system_blocks, out
