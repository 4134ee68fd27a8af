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
"""

from __future__ import annotations

import json
import threading
import time
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


class FakeLLMServer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Script] = deque()
        self._by_model: dict[str, deque[Script]] = {}
        self.requests: list[dict[str, Any]] = []
        self._counter = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
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
                outer._record(path, body, {k.lower(): v for k, v in self.headers.items()})
                reply = outer._next(body)
                if reply.delay:
                    time.sleep(reply.delay)
                anthropic = path.endswith("/messages")
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

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
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
            "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
        }
