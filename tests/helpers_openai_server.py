"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat completions API (and, for the
Anthropic SDK, the Messages API), scriptable per test.

    # tests/ is on sys.path under pytest (no package), so import the module by name:
    from helpers_openai_server import FakeLLMServer, text_reply, tool_reply, error_reply

    with FakeLLMServer() as server:
        server.push(tool_reply("memory_search", {"query": "deploy"}))   # first request
        server.push(text_reply("done"))                                  # second request
        server.push(error_reply(429, "slow down"), model="gpt-a")        # only for model gpt-a
        ... point a client at server.url (".../v1") ...
        server.requests  # every request: {"path", "model", "body", "headers" (lower-case names)}

Queues: a reply pushed with `model=` is served only to requests for that model; otherwise the
shared queue is used. When both are empty the server answers 500 "script exhausted", so a test
that sends more requests than it scripted fails loudly. A reply may also be a callable
`(request_body) -> Reply`. `Reply(delay=...)` sleeps before answering (for client timeouts).

The same scripted Reply works on both routes: `/v1/chat/completions` renders it in OpenAI shape,
`/v1/messages` in Anthropic shape.

Streaming: a request with `"stream": true` gets Server-Sent Events over chunked transfer
encoding, flushed one event at a time — OpenAI's `chat.completion.chunk`s (with the usage chunk
when `stream_options.include_usage` is set, then `data: [DONE]`) or Anthropic's
`message_start` … `message_stop`. The text goes out in `Reply.pieces` (default: word by word),
each tool call's arguments in pieces of `Reply.arg_chunk` characters, with `Reply.chunk_delay`
seconds between events. `Reply.drop_after=N` closes the connection after N events without ending
the chunked body (the client sees the connection drop mid-stream); `Reply.drop_at_end` does so
after the last event. `Reply.sse` sends a recorded
SSE body verbatim (the llama.cpp transcripts in tests/data/llamacpp). `Reply.stream_error`
(Anthropic) sends an `error` event after the first text piece.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name", "arguments": dict}]
    error: dict[str, Any] | None = None  # {"message", "type", "code"} for status >= 400
    raw_body: str | None = None  # sent verbatim (malformed responses)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    finish_reason: str | None = None
    prompt_tokens: int = 11
    completion_tokens: int = 7
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # streaming (a request with "stream": true)
    pieces: list[str] | None = None  # the text's deltas; default word by word
    arg_chunk: int = 3  # tool-call arguments go out in pieces of this many characters
    chunk_delay: float = 0.0  # seconds between events
    drop_after: int | None = None  # close the connection after this many events
    reset: bool = False  # with drop_after: a TCP reset instead of a plain close
    drop_at_end: bool = False  # after the last event, close the connection instead of ending the body
    sse: str | None = None  # a recorded SSE body, sent verbatim
    stream_error: dict[str, Any] | None = None  # Anthropic: an `error` event after the first piece
    # proof of streaming: after `gate_after` events the server waits (up to `gate_timeout` s) until
    # the test sets `gate` — which it can only do if the client handed it the first events already
    gate: threading.Event | None = None
    gate_after: int = 2
    gate_timeout: float = 10.0
    gate_opened: bool | None = None  # set by the server: was the gate opened in time?
    client_gone: threading.Event = field(default_factory=threading.Event)  # set when a write failed


def text_reply(text: str, **kw: Any) -> Reply:
    return Reply(text=text, **kw)


def tool_reply(name: str, arguments: dict[str, Any], *more: tuple[str, dict[str, Any]], text: str | None = None) -> Reply:
    calls = [{"name": name, "arguments": arguments}] + [{"name": n, "arguments": a} for n, a in more]
    return Reply(text=text, tool_calls=calls)


def error_reply(status: int, message: str = "error", *, type: str | None = None, code: str | None = None, **kw: Any) -> Reply:
    default_type = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    return Reply(status=status, error={"message": message, "type": type or default_type, "code": code}, **kw)


Script = Reply | Callable[[dict[str, Any]], Reply]


def llama_apply_template(*, renders_tools: bool) -> Callable[[str, dict[str, Any]], dict[str, Any] | None]:
    """llama.cpp's POST /apply-template: the prompt its chat template builds (with the tools'
    names when the template renders tools, without them when it drops them)."""

    def answer(path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        if not path.endswith("/apply-template"):
            return None
        text = "".join(f"<|im_start|>{m.get('role')}\n{m.get('content')}<|im_end|>\n" for m in body.get("messages", []))
        if renders_tools:
            names = ", ".join(t["function"]["name"] for t in body.get("tools", []))
            text = f"<|im_start|>system\nTools: {names}<|im_end|>\n" + text
        return {"prompt": text + "<|im_start|>assistant\n"}

    return answer


class FakeLLMServer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Script] = deque()
        self._by_model: dict[str, deque[Script]] = {}
        self.requests: list[dict[str, Any]] = []
        self.gets: list[tuple[str, str | None]] = []  # (path, Authorization header) of each GET
        self._counter = 0
        # (path, body) -> a JSON answer for endpoints other than the two APIs, or None for a 404;
        # e.g. `server.extra_post = llama_apply_template(renders_tools=False)`
        self.extra_post: Callable[[str, dict[str, Any]], dict[str, Any] | None] = lambda path, body: None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                outer.gets.append((self.path, self.headers.get("Authorization")))
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": []}))
                else:
                    self._send(404, json.dumps({"error": {"message": "not found"}}))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path.split("?")[0]
                if not path.endswith(("/chat/completions", "/messages")):
                    # other endpoints (llama.cpp's /apply-template) are not part of the script
                    answer = outer.extra_post(path, body)
                    if answer is None:
                        self._send(404, json.dumps({"error": {"message": f"no route {path}"}}))
                    else:
                        self._send(200, json.dumps(answer))
                    return
                outer._record(path, body, {k.lower(): v for k, v in self.headers.items()})
                reply = outer._next(body)
                if reply.delay:
                    time.sleep(reply.delay)
                anthropic = path.endswith("/messages")
                if reply.status < 400 and reply.raw_body is None and (body.get("stream") or reply.sse is not None):
                    events = ([reply.sse] if reply.sse is not None else
                              outer._anthropic_events(reply, body) if anthropic else outer._openai_events(reply, body))
                    self._stream(events, reply)
                    return
                if reply.raw_body is not None:
                    payload = reply.raw_body
                elif reply.status >= 400:
                    err = dict(reply.error or {"message": "error", "type": "api_error"})
                    payload = json.dumps({"type": "error", "error": err} if anthropic else {"error": err})
                elif anthropic:
                    payload = json.dumps(outer._anthropic_body(reply, body))
                else:
                    payload = json.dumps(outer._openai_body(reply, body))
                self._send(reply.status, payload, reply.headers)

            def _stream(self, events: list[str], reply: Reply) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    for number, event in enumerate(events):
                        if reply.drop_after is not None and number >= reply.drop_after:
                            self._drop(reset=reply.reset)
                            return
                        if number and reply.chunk_delay:
                            time.sleep(reply.chunk_delay)
                        if reply.gate is not None and number == reply.gate_after:
                            reply.gate_opened = reply.gate.wait(reply.gate_timeout)
                        data = event.encode("utf-8")
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    if reply.drop_at_end:
                        self._drop(reset=reply.reset)
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    reply.client_gone.set()  # the client stopped reading (Ctrl-C, a cut stream)

            def _drop(self, *, reset: bool) -> None:
                self.wfile.flush()
                if reset:  # SO_LINGER 0: close() sends a TCP RST
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:
                    self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True

            def _send(self, status: int, payload: str, headers: dict[str, str] | None = None) -> None:
                data = payload.encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                # socketserver prints the traceback to sys.stderr — from this server's thread,
                # into whatever CliRunner has swapped in at that moment, where it corrupted a
                # concurrent `kit dream --json`'s output (CI, a worker's keep-alive connection
                # reset). A client that went away is routine here; anything else is kept for the
                # test and written to the real stderr.
                error = sys.exc_info()[1]
                outer.server_errors.append(error)
                if not isinstance(error, (BrokenPipeError, ConnectionResetError)):
                    traceback.print_exc(file=sys.__stderr__)

        self.server_errors: list[BaseException] = []
        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (…/v1)."""
        return f"{self.base}/v1"

    def start(self) -> FakeLLMServer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ scripting

    def push(self, *replies: Script, model: str | None = None) -> None:
        with self._lock:
            queue = self._by_model.setdefault(model, deque()) if model else self._queue
            queue.extend(replies)

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["model"] == model]

    def _record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append({"path": path, "model": body.get("model"), "body": body, "headers": headers})

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            queue = self._by_model.get(body.get("model") or "")
            if queue:
                item = queue.popleft()
            elif self._queue:
                item = self._queue.popleft()
            else:
                return error_reply(500, "FakeLLMServer: script exhausted (no reply queued)")
        return item(body) if callable(item) else item

    def _id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            return f"{prefix}{self._counter}"

    def _openai_body(self, reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._id("call_"),
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for c in reply.tool_calls
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        return {
            "id": self._id("chatcmpl-"),
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }

    # ------------------------------------------------------------------ streaming

    @staticmethod
    def _pieces(reply: Reply) -> list[str]:
        if reply.pieces is not None:
            return list(reply.pieces)
        return re.findall(r"\S+\s*|\s+", reply.text or "")

    @staticmethod
    def _split(text: str, size: int) -> list[str]:
        return [text[i:i + size] for i in range(0, len(text), size)] or [""]

    def _openai_events(self, reply: Reply, request: dict[str, Any]) -> list[str]:
        ident = self._id("chatcmpl-")
        model = request.get("model", "fake")

        def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> str:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
            data = {"id": ident, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
                    "choices": choices, **extra}
            return f"data: {json.dumps(data)}\n\n"

        events = [chunk({"role": "assistant", "content": None})]
        events += [chunk({"content": piece}) for piece in self._pieces(reply)]
        for index, call in enumerate(reply.tool_calls):
            arguments = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
            parts = self._split(arguments, reply.arg_chunk)
            events.append(chunk({"tool_calls": [{"index": index, "id": self._id("call_"), "type": "function",
                                                  "function": {"name": call["name"], "arguments": parts[0]}}]}))
            events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}) for part in parts[1:]]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        events.append(chunk({}, finish))
        if (request.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                     "total_tokens": reply.prompt_tokens + reply.completion_tokens}
            if reply.cache_read_tokens:
                usage["prompt_tokens_details"] = {"cached_tokens": reply.cache_read_tokens}
            events.append(chunk(None, usage=usage))
        events.append("data: [DONE]\n\n")
        return events

    def _anthropic_events(self, reply: Reply, request: dict[str, Any]) -> list[str]:
        def event(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

        fresh = reply.prompt_tokens - reply.cache_read_tokens - reply.cache_write_tokens
        events = [event("message_start", {"message": {
            "id": self._id("msg_"), "type": "message", "role": "assistant", "model": request.get("model", "fake"),
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": fresh, "output_tokens": 1, "cache_read_input_tokens": reply.cache_read_tokens,
                      "cache_creation_input_tokens": reply.cache_write_tokens}}})]
        block = 0
        pieces = self._pieces(reply)
        if pieces:
            events.append(event("content_block_start", {"index": block, "content_block": {"type": "text", "text": ""}}))
            for number, piece in enumerate(pieces):
                events.append(event("content_block_delta", {"index": block, "delta": {"type": "text_delta", "text": piece}}))
                if number == 0 and reply.stream_error is not None:
                    events.append(event("error", {"error": reply.stream_error}))
            events.append(event("content_block_stop", {"index": block}))
            block += 1
        for call in reply.tool_calls:
            arguments = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
            events.append(event("content_block_start", {"index": block, "content_block": {
                "type": "tool_use", "id": self._id("toolu_"), "name": call["name"], "input": {}}}))
            if arguments not in ("", "{}"):
                events += [event("content_block_delta", {"index": block, "delta": {"type": "input_json_delta",
                                                                                   "partial_json": part}})
                           for part in self._split(arguments, reply.arg_chunk)]
            if not (reply.finish_reason == "max_tokens" and call is reply.tool_calls[-1]):
                events.append(event("content_block_stop", {"index": block}))
            block += 1
        stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
        events.append(event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                              "usage": {"output_tokens": reply.completion_tokens}}))
        events.append(event("message_stop", {}))
        return events

    def _anthropic_body(self, reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls:
            content.append({"type": "tool_use", "id": self._id("toolu_"), "name": call["name"], "input": call["arguments"]})
        stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
        return {
            "id": self._id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "fake"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": reply.prompt_tokens - reply.cache_read_tokens - reply.cache_write_tokens,
                      "output_tokens": reply.completion_tokens,
                      "cache_read_input_tokens": reply.cache_read_tokens,
                      "cache_creation_input_tokens": reply.cache_write_tokens},
        }
