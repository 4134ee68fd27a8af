"""The Anthropic provider through the official SDK, pointed at a local Messages API server."""

from __future__ import annotations

import pytest

from helpers_openai_server import FakeLLMServer, error_reply, text_reply, tool_reply
from kit.providers.anthropic_provider import to_anthropic_messages, to_anthropic_tools
from kit.providers.failover import FailoverClient
from kit.workspace import Workspace

TOOLS = [{"type": "function", "function": {
    "name": "memory_search", "description": "Search notes",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]


@pytest.fixture
def anthropic_ws(ws_path, monkeypatch, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeLLMServer() as server:
        # the SDK appends /v1/messages itself, so base_url is the bare host
        (ws_path / "kit.yaml").write_text(
            "agent: {model: anthropic/claude-test, fallbacks: [anthropic/claude-other], retry: {max_attempts: 1}}\n"
            f"providers:\n  anthropic: {{base_url: '{server.base}'}}\n"
        )
        yield Workspace.open(ws_path), server


def test_tool_exchange_through_the_sdk(anthropic_ws):
    ws, server = anthropic_ws
    server.push(tool_reply("memory_search", {"query": "deploy"}, text="Let me look."))
    server.push(text_reply("It is in Tuesday's note."))
    client = FailoverClient(ws)
    messages = [{"role": "system", "content": "You are Kit."}, {"role": "user", "content": "Where is the checklist?"}]

    first = client.complete(messages, TOOLS)
    assert first.text == "Let me look."
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("memory_search", {"query": "deploy"})]
    assert first.finish_reason == "tool_calls"  # Anthropic's tool_use, in the words every provider uses
    assert first.model == "anthropic/claude-test"

    call = first.tool_calls[0]
    messages += [
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": '{"query": "deploy"}'}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "memory/2026-05-05.md: deploy checklist"},
    ]
    second = client.complete(messages, TOOLS)
    assert second.text == "It is in Tuesday's note."

    request = server.requests[1]
    assert request["path"] == "/v1/messages"
    headers = request["headers"]  # SDK versions differ: x-api-key or a bearer token
    assert "sk-ant-test" in (headers.get("x-api-key", ""), headers.get("authorization", "").removeprefix("Bearer "))
    body = request["body"]
    assert body["model"] == "claude-test"
    assert body["stream"] is True
    # prompt caching: breakpoints after the tools, the system prompt and the last message
    cache = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "You are Kit.", "cache_control": cache}]
    assert body["tools"] == [{"name": "memory_search", "description": "Search notes",
                              "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
                              "cache_control": cache}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Where is the checklist?"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": call.id, "name": "memory_search", "input": {"query": "deploy"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": "memory/2026-05-05.md: deploy checklist",
             "cache_control": cache}]},
    ]


def test_overloaded_529_fails_over(anthropic_ws):
    ws, server = anthropic_ws
    server.push(error_reply(529, "Overloaded"), model="claude-test")
    server.push(text_reply("other model"), model="claude-other")
    client = FailoverClient(ws)
    assert client.complete([{"role": "user", "content": "hi"}]).text == "other model"
    assert client.cooldowns.get("anthropic/claude-test").kind == "overloaded"


def test_consecutive_tool_results_merge_into_one_user_turn():
    system, converted = to_anthropic_messages([
        {"role": "system", "content": "a"}, {"role": "system", "content": "b"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "function": {"name": "x", "arguments": "{}"}},
            {"id": "2", "function": {"name": "y", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "r1"},
        {"role": "tool", "tool_call_id": "2", "content": "r2"},
    ])
    assert system == "a\n\nb"
    assert [m["role"] for m in converted] == ["user", "assistant", "user"]
    assert converted[1]["content"][1]["input"] == {"_raw": "not json"}
    assert [b["tool_use_id"] for b in converted[2]["content"]] == ["1", "2"]
    assert to_anthropic_tools([{"type": "function", "function": {"name": "n"}}]) == [
        {"name": "n", "description": "", "input_schema": {"type": "object", "properties": {}}}]
