"""Anthropic Messages API through the official SDK (imported on first use).

Kit speaks OpenAI-format messages everywhere; this module translates them: the system message
becomes `system`, assistant tool calls become `tool_use` blocks, `tool` messages become
`tool_result` blocks on a user turn (consecutive ones merged, as the API requires).
"""

from __future__ import annotations

from typing import Any

from kit.providers.base import ModelResponse, ToolCall, Usage, api_key
from kit.providers.classify import from_sdk_exception
from kit.providers.openai_provider import parse_arguments

MAX_TOKENS = 4096


class AnthropicProvider:
    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        timeout_s: float = 120.0,
    ):
        self.name = name
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self._client = None

    def client(self):
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(
                api_key=api_key(self.name, self.api_key_env), base_url=self.base_url, timeout=self.timeout_s, max_retries=0
            )
        return self._client

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str) -> ModelResponse:
        import anthropic

        system, converted = to_anthropic_messages(messages)
        kwargs: dict[str, Any] = {"model": model, "max_tokens": MAX_TOKENS, "messages": converted}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = to_anthropic_tools(tools)
        try:
            response = self.client().messages.create(**kwargs)
            return parse_response(response, f"{self.name}/{model}")
        except Exception as exc:
            raise from_sdk_exception(exc, self.name, anthropic) from exc


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


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def to_anthropic_messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []

    def append(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)  # the API wants alternating roles
        else:
            out.append({"role": role, "content": blocks})

    for msg in messages:
        role = msg.get("role")
        if role == "system":
            system_parts.append(_text(msg.get("content")))
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
    return "\n\n".join(p for p in system_parts if p), out


def parse_response(response: Any, label: str) -> ModelResponse:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in response.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(block.input or {})))
    usage = response.usage
    return ModelResponse(
        text="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        usage=Usage(
            prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        ),
        finish_reason=response.stop_reason,
        model=label,
    )
