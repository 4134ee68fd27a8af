"""Streaming through the official SDKs against a real HTTP server on 127.0.0.1: OpenAI-style SSE
(also the llama.cpp server's own recorded bytes) and Anthropic's Messages stream, turned into
kit.providers.events and assembled into one reply."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from helpers_openai_server import FakeLLMServer, Reply, text_reply, tool_reply
from kit.providers.anthropic_provider import AnthropicProvider
from kit.providers.base import GenerationSettings, Usage
from kit.providers.events import (
    Assembler,
    Finish,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
    drain,
)
from kit.providers.events import (
    Reply as ReplyEvent,
)
from kit.providers.openai_provider import OpenAIProvider

LLAMACPP = Path(__file__).parent / "data" / "llamacpp"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
HI = [{"role": "system", "content": "You are Kit."}, {"role": "user", "content": "hi"}]


@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


def openai(server: FakeLLMServer, **kw) -> OpenAIProvider:
    return OpenAIProvider("local", base_url=server.url, api_key_env=None, require_key=False, timeout_s=30, **kw)


def anthropic(server: FakeLLMServer, monkeypatch) -> AnthropicProvider:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return AnthropicProvider("anthropic", base_url=server.base, timeout_s=30)


def kinds(events) -> list[str]:
    return [e.type for e in events]


# ---------------------------------------------------------------------------- OpenAI SSE


def test_text_arrives_as_deltas_before_the_reply_is_complete(server):
    gate = threading.Event()
    reply = text_reply("The door code is ZEBRA-7431.", gate=gate, gate_after=2, prompt_tokens=40,
                       completion_tokens=9, cache_read_tokens=32)
    server.push(reply)
    events = []
    for event in openai(server).stream(HI, [], model="smollm2"):
        events.append(event)
        if isinstance(event, TextDelta):
            gate.set()  # the server holds the rest of the reply until the first piece got here
    assert reply.gate_opened is True
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["The ", "door ", "code ", "is ", "ZEBRA-7431."]
    assert kinds(events)[-3:] == ["finish", "usage", "reply"]
    final = events[-1].response
    assert (final.text, final.finish_reason, final.model) == ("The door code is ZEBRA-7431.", "stop", "local/smollm2")
    assert final.usage == Usage(prompt_tokens=40, completion_tokens=9, cache_read_tokens=32)
    body = server.requests[0]["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_several_tool_calls_with_arguments_split_across_chunks(server):
    server.push(tool_reply("get_weather", {"city": "Paris"}, ("get_weather", {"city": "Berlin"}),
                           text="Checking."))
    events = list(openai(server).stream(HI, TOOLS, model="m"))
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    # each call's first delta carries id and name; its arguments come 3 characters at a time
    assert [(d.index, d.name) for d in deltas if d.name] == [(0, "get_weather"), (1, "get_weather")]
    assert len(deltas) == 6 + 6  # '{"city": "Paris"}' (17 chars) and '{"city": "Berlin"}' (18), 3 at a time
    assert all(d.id is None for d in deltas if not d.name)
    final = events[-1].response
    assert [(c.name, c.arguments) for c in final.tool_calls] == [
        ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Berlin"})]
    assert final.tool_calls[0].id != final.tool_calls[1].id
    assert (final.text, final.finish_reason, final.cut_tool_calls) == ("Checking.", "tool_calls", ())


def test_a_tool_call_cut_by_the_cap_is_not_returned(server):
    server.push(Reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}},
                                  {"name": "read_file", "arguments": '{"path": "SO'}],
                      finish_reason="length"))
    final = drain(openai(server).stream(HI, TOOLS, model="m"))
    assert final.finish_reason == "length" and final.truncated
    assert [c.name for c in final.tool_calls] == ["get_weather"]  # complete: kept
    assert final.cut_tool_calls == ("read_file",)  # broken arguments: never a call


def test_a_text_reply_cut_by_the_cap_says_length(server):
    server.push(text_reply("Once upon a", finish_reason="length"))
    final = openai(server).complete(HI, [], model="m", generation=GenerationSettings(max_tokens=3))
    assert (final.text, final.finish_reason, final.tool_calls) == ("Once upon a", "length", ())
    assert server.requests[0]["body"]["max_tokens"] == 3


def test_stream_false_asks_for_one_json_reply_and_gives_the_same_events(server):
    server.push(tool_reply("get_weather", {"city": "Oslo"}, text="One moment."))
    events = list(openai(server, stream=False).stream(HI, TOOLS, model="m"))
    assert "stream" not in server.requests[0]["body"]
    assert kinds(events) == ["text_delta", "tool_call_delta", "finish", "usage", "reply"]
    final = events[-1].response
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("get_weather", {"city": "Oslo"})]


def test_a_stream_that_ends_without_a_finish_is_a_dropped_connection(server):
    from kit.providers.base import ProviderError

    # the last events (finish, usage, [DONE]) never come; the chunked body still ends cleanly
    sse = "".join(f'data: {json.dumps({"choices": [{"index": 0, "delta": {"content": w}}]})}\n\n' for w in ("a ", "b"))
    server.push(Reply(sse=sse))
    with pytest.raises(ProviderError) as info:
        list(openai(server).stream(HI, [], model="m"))
    assert info.value.kind == "dropped"


KEEP_ALIVE = ": PROCESSING\n\n: PROCESSING\n\n"  # an OpenRouter-style proxy waiting for the model


@pytest.mark.parametrize("cut", [False, True], ids=["body-ended", "connection-closed"])
def test_a_stream_of_keep_alive_comments_only_is_a_dropped_connection(server, monkeypatch, cut):
    """Regression: SSE comments make no event (the SDKs drop them), so a stream that sent only
    `: PROCESSING` and then closed was a `format` error (raised, never retried) instead of `dropped`."""
    from kit.providers.base import ProviderError

    for provider in (openai(server), anthropic(server, monkeypatch)):
        server.push(Reply(sse=KEEP_ALIVE, drop_at_end=cut))
        with pytest.raises(ProviderError) as info:
            list(provider.stream(HI, [], model="m"))
        assert info.value.kind == "dropped", str(info.value)
    # other SSE that makes no event: blank lines, an unknown field after a comment, a BOM first
    for sse in ("\n\n: ping\nfoo: bar\n\n", "\ufeff: hi\n\n", "\n\n"):
        server.push(Reply(sse=sse, drop_at_end=cut))
        with pytest.raises(ProviderError) as info:
            list(openai(server).stream(HI, [], model="m"))
        assert info.value.kind == "dropped", (sse, str(info.value))


def test_keep_alive_comments_then_a_close_are_retried_by_failover(ws_path, server):
    from kit.providers.failover import FailoverClient
    from kit.workspace import Workspace

    (ws_path / "kit.yaml").write_text(
        "agent:\n  model: lab/x\n  fallbacks: [lab/y]\n  retry: {max_attempts: 3, backoff_s: 0}\n"
        f"providers:\n  lab: {{type: openai, base_url: '{server.url}'}}\n")
    server.push(Reply(sse=KEEP_ALIVE), text_reply("whole reply"), model="x")
    events = list(FailoverClient(Workspace.open(ws_path), sleep=lambda s: None).stream(HI))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "whole reply"
    assert [(a.target, a.outcome) for a in events[-1].response.attempts] == [("lab/x", "dropped"), ("lab/x", "ok")]


class _HtmlPage:
    """A server that answers every POST with a 200 HTML page (a proxy's login page, a web UI)."""

    def __enter__(self) -> str:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = b"<html><body>Please sign in</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_200_that_is_not_a_stream_is_a_malformed_response_not_a_dropped_connection(server, monkeypatch):
    """Regression (new user): a 200 whose body is not SSE was "dropped the connection (the stream
    ended before the reply was complete); retrying …" and then "no model available"; with
    stream: false the same body said "malformed response". docs/providers.md: `format`, raised."""
    from kit.providers.base import ProviderError

    cases = [
        (Reply(raw_body="this is not json at all"),  # a 200 with Content-Type application/json
         "local: malformed response (expected server-sent events, got application/json: "
         "'this is not json at all')"),
        (Reply(raw_body=json.dumps({"id": "x", "choices": []})),  # a server that ignores stream: true
         "local: malformed response (expected server-sent events, got application/json: "
         "'{\"id\": \"x\", \"choices\": []}'; set providers.local.stream: false for a server that cannot stream)"),
        (Reply(sse="this is not json at all\n"),  # text/event-stream in name only
         "local: malformed response (24 bytes with no server-sent event in them)"),
    ]
    for reply, message in cases:
        server.push(reply)
        with pytest.raises(ProviderError) as info:
            list(openai(server).stream(HI, [], model="m"))
        assert (info.value.kind, str(info.value)) == ("format", message)
    server.push(Reply(raw_body="this is not json at all"))  # the Anthropic provider alike
    with pytest.raises(ProviderError) as info:
        list(anthropic(server, monkeypatch).stream(HI, [], model="m"))
    assert (info.value.kind, str(info.value)) == (
        "format", "anthropic: malformed response (expected server-sent events, got application/json: "
                  "'this is not json at all')")
    with _HtmlPage() as url, pytest.raises(ProviderError) as info:
        list(OpenAIProvider("local", base_url=url, api_key_env=None, require_key=False).stream(HI, [], model="m"))
    assert (info.value.kind, str(info.value)) == (
        "format", "local: malformed response (expected server-sent events, got text/html: "
                  "'<html><body>Please sign in</body></html>')")


def test_a_200_that_is_not_a_stream_is_raised_by_failover_not_retried(ws_path, server, monkeypatch):
    """Through FailoverClient: one request, no retry, no cooldown, no fallback asked."""
    from kit.providers.base import ProviderError
    from kit.providers.failover import FailoverClient
    from kit.workspace import Workspace

    (ws_path / "kit.yaml").write_text(
        "agent:\n  model: lab/x\n  fallbacks: [lab/y]\n  retry: {max_attempts: 3, backoff_s: 0}\n"
        f"providers:\n  lab: {{type: openai, base_url: '{server.url}'}}\n")
    server.push(Reply(raw_body="this is not json at all"), model="x")
    client = FailoverClient(Workspace.open(ws_path), sleep=lambda s: None)
    with pytest.raises(ProviderError) as info:
        client.complete(HI)
    assert info.value.kind == "format"
    assert [(a.target, a.outcome) for a in client.last_attempts] == [("lab/x", "format")]
    assert [r["model"] for r in server.requests] == ["x"]
    assert client.cooldowns.all() == []


# ---------------------------------------------------------------------------- llama.cpp's own bytes


def replay(name: str) -> Reply:
    return Reply(sse=(LLAMACPP / f"{name}.sse").read_text(encoding="utf-8"))


def test_llamacpp_text_stream_with_its_usage_chunk(server):
    server.push(replay("stream-text"))
    events = list(openai(server).stream(HI, [], model="smollm2"))
    recorded = [json.loads(line[6:]) for line in (LLAMACPP / "stream-text.sse").read_text().splitlines()
                if line.startswith("data: {")]
    text = "".join(c["delta"].get("content") or "" for chunk in recorded for c in chunk["choices"])
    usage = next(chunk["usage"] for chunk in recorded if chunk.get("usage"))
    final = events[-1].response
    assert final.text == text and len(text) > 20
    assert final.finish_reason == "stop"
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert sum(isinstance(e, TextDelta) for e in events) == sum(
        1 for chunk in recorded for c in chunk["choices"] if c["delta"].get("content"))


def test_llamacpp_two_streamed_tool_calls_then_the_cap(server):
    """The real server: two calls with arguments split into pieces like `"`, `city`, `":`, then
    max_tokens stopped a third call before llama.cpp sent any of it."""
    server.push(replay("stream-tool-calls"))
    final = drain(openai(server).stream(HI, TOOLS, model="smollm2"))
    assert [(c.name, c.arguments) for c in final.tool_calls] == [
        ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Berlin"})]
    assert [c.id for c in final.tool_calls] == ["h6beGiicxU97tIM8i5CpfYKHklBACw86", "GkgRpxAsL6Fio8y3Mt0Y56TS9elhw3PP"]
    assert final.finish_reason == "length" and final.cut_tool_calls == ()


def test_llamacpp_reply_cut_by_max_tokens(server):
    server.push(replay("stream-length"))
    final = drain(openai(server).stream(HI, [], model="smollm2"))
    assert (final.finish_reason, final.usage.completion_tokens) == ("length", 12)


def test_llamacpp_stream_without_usage(server):
    server.push(replay("stream-no-usage"))
    final = drain(openai(server).stream(HI, [], model="smollm2"))
    assert final.text and final.usage == Usage()


# ---------------------------------------------------------------------------- Anthropic


def test_anthropic_stream_events_text_tool_use_and_cache_usage(server, monkeypatch):
    gate = threading.Event()
    reply = tool_reply("get_weather", {"city": "Paris"}, ("get_weather", {}), text="Let me check.")
    reply.gate, reply.gate_after = gate, 3  # message_start, block start, first text delta
    reply.prompt_tokens, reply.cache_read_tokens, reply.cache_write_tokens = 1500, 1200, 100
    server.push(reply)
    events = []
    for event in anthropic(server, monkeypatch).stream(HI, TOOLS, model="claude-test"):
        events.append(event)
        if isinstance(event, TextDelta):
            gate.set()
    assert reply.gate_opened is True
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let ", "me ", "check."]
    starts = [(e.index, e.name) for e in events if isinstance(e, ToolCallDelta) and e.name]
    assert starts == [(0, "get_weather"), (1, "get_weather")]  # numbered among the tool calls
    final = events[-1].response
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("get_weather", {"city": "Paris"}), ("get_weather", {})]
    assert final.finish_reason == "tool_calls"
    # input 200 fresh + 1200 read from the cache + 100 written to it: 1500 prompt tokens in all
    assert final.usage == Usage(prompt_tokens=1500, completion_tokens=7, cache_read_tokens=1200, cache_write_tokens=100)
    assert next(e for e in events if isinstance(e, UsageUpdate)).usage == final.usage
    assert any(isinstance(e, Finish) and e.reason == "tool_calls" for e in events)


def test_anthropic_max_tokens_is_length_and_an_open_tool_use_is_cut(server, monkeypatch):
    server.push(Reply(text="Sure.", tool_calls=[{"name": "get_weather", "arguments": '{"city": "Par'}],
                      finish_reason="max_tokens"))
    provider = anthropic(server, monkeypatch)
    final = provider.complete(HI, TOOLS, model="claude-test", generation=GenerationSettings(max_tokens=20))
    assert (final.text, final.finish_reason, final.tool_calls, final.cut_tool_calls) == (
        "Sure.", "length", (), ("get_weather",))
    assert server.requests[0]["body"]["max_tokens"] == 20


def test_anthropic_request_carries_generation_settings_and_cache_breakpoints(server, monkeypatch):
    from kit.providers.base import system_message

    server.push(text_reply("ok"))
    provider = anthropic(server, monkeypatch)
    messages = [system_message("STABLE PREFIX\n## Current time\nThursday", stable_chars=14),
                {"role": "user", "content": "hi"}]
    provider.complete(messages, TOOLS, model="claude-test",
                      generation=GenerationSettings(max_tokens=512, temperature=0.2, top_p=0.9, stop=("END",)))
    body = server.requests[0]["body"]
    cache = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "STABLE PREFIX\n", "cache_control": cache},
                              {"type": "text", "text": "## Current time\nThursday"}]
    assert body["tools"][-1]["cache_control"] == cache
    assert body["messages"][-1]["content"][-1]["cache_control"] == cache
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["stop_sequences"]) == (512, 0.2, 0.9, ["END"])


def test_openai_compatible_servers_get_the_system_prompt_as_one_string(server):
    from kit.providers.base import system_message

    server.push(text_reply("ok"))
    message = system_message("STABLE PREFIX\n## Current time\nThursday", stable_chars=14)
    openai(server).complete([message, {"role": "user", "content": "hi"}], [], model="m",
                            generation=GenerationSettings(max_tokens=64, temperature=0.0, top_p=0.5, stop=("END",)))
    body = server.requests[0]["body"]
    assert body["messages"][0] == {"role": "system", "content": "STABLE PREFIX\n## Current time\nThursday"}
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["stop"]) == (64, 0.0, 0.5, ["END"])


def test_the_hosted_openai_api_gets_max_completion_tokens():
    hosted = OpenAIProvider("openai", base_url=None, api_key_env="OPENAI_API_KEY")
    kwargs = hosted.request(HI, [], model="gpt-4o-mini", generation=GenerationSettings(max_tokens=100))
    assert kwargs["max_completion_tokens"] == 100 and "max_tokens" not in kwargs


# ---------------------------------------------------------------------------- the assembler


def test_assembler_partial_keeps_the_text_only():
    acc = Assembler("x/y")
    for event in (TextDelta("Half a "), ToolCallDelta(0, "c1", "read_file", '{"pa'), TextDelta("reply")):
        acc.feed(event)
    partial = acc.partial()
    assert (partial.text, partial.tool_calls, partial.finish_reason) == ("Half a reply", (), "interrupted")


def test_event_json_lines():
    assert TextDelta("hi").to_json() == {"type": "text_delta", "text": "hi"}
    assert ToolCallDelta(1, None, None, '"x').to_json() == {
        "type": "tool_call_delta", "index": 1, "id": None, "name": None, "arguments": '"x'}
    from kit.providers.base import ModelResponse, ToolCall

    reply = ReplyEvent(ModelResponse("t", (ToolCall("c", "n", {"a": 1}),), Usage(3, 4), "tool_calls", "p/m"))
    assert reply.to_json() == {
        "type": "reply", "model": "p/m", "text": "t", "tool_calls": [{"id": "c", "name": "n", "arguments": {"a": 1}}],
        "finish_reason": "tool_calls", "cut_tool_calls": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7, "cache_read_tokens": 0,
                  "cache_write_tokens": 0},
        "attempts": []}


def test_the_provider_layer_imports_no_sdk_until_a_model_is_called():
    import subprocess
    import sys

    code = ("import sys, kit.providers.failover, kit.providers.events, kit.providers.registry; "
            "print(sorted(m for m in ('openai', 'anthropic', 'httpx', 'httpx2', 'tenacity', 'urllib.request') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
