"""What every provider shares: a stream of kit.providers.events assembled into its `Reply`, and
`complete` as that stream drained. `SDKProvider` adds what the two SDK-backed providers
(Anthropic, OpenAI) share: the lazily built client, the SDK's own retries off, a stream that ends
early reported as `dropped`, and every SDK exception classified."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from kit.providers.base import GenerationSettings, ModelResponse, ProviderError, api_key
from kit.providers.classify import from_sdk_exception
from kit.providers.events import Assembler, Reply, drain


def assembled(events: Iterable[Any], label: str) -> Iterator[Any]:
    """`events` passed on as they come, then the `Reply` an Assembler made of them."""
    acc = Assembler(label)
    for event in events:
        acc.feed(event)
        yield event
    yield Reply(acc.response())


class StreamingProvider:
    """`complete` is `stream` drained: one code path, so a reply read whole is the streamed one."""

    name: str

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str = "",
               generation: GenerationSettings | None = None) -> Iterator[Any]:
        raise NotImplementedError

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str = "",
                 generation: GenerationSettings | None = None) -> ModelResponse:
        return drain(self.stream(messages, tools, model=model, generation=generation))


class SDKProvider(StreamingProvider):
    """A provider over an official SDK, imported on first use (heavy). A subclass names the SDK
    module and its client class, builds the keyword arguments of one call (`request`) and turns
    the call's raw events into Kit's (`events`)."""

    sdk: ClassVar[str]  # the SDK's module, e.g. "openai"
    client_class: ClassVar[str]  # its client, e.g. "OpenAI"

    def __init__(self, name: str, *, base_url: str | None, api_key_env: str | None, timeout_s: float):
        self.name = name
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self._client: Any = None

    def _api_key(self) -> str:
        return api_key(self.name, self.api_key_env)

    def client(self) -> Any:
        if self._client is None:
            make = getattr(importlib.import_module(self.sdk), self.client_class)
            # max_retries=0: retrying (with backoff, visibly) and failing over is FailoverClient's job
            self._client = make(api_key=self._api_key(), base_url=self.base_url, timeout=self.timeout_s,
                                max_retries=0)
        return self._client

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str,
                generation: GenerationSettings | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def events(self, kwargs: dict[str, Any]) -> Iterator[Any]:
        """Kit's events of one call made with `kwargs`; raises `self.dropped()` when the server
        closes the stream before the reply is complete."""
        raise NotImplementedError

    def dropped(self) -> ProviderError:
        return ProviderError(f"{self.name}: the stream ended before the reply was complete",
                             kind="dropped", provider=self.name)

    def malformed(self, detail: str) -> ProviderError:
        """A 200 Kit cannot read as a reply: another model would be asked the same way, so it is a
        `format` error (raised, not retried), worded as from_sdk_exception words it."""
        return ProviderError(f"{self.name}: malformed response ({detail})", kind="format", provider=self.name)

    def not_a_stream(self, raw: Any) -> ProviderError | None:
        """The error for a 200 answer to a streamed request that is not server-sent events (an HTML
        page, a proxy's text, one JSON document), else None. Read as SSE it holds no event and
        would pass for a dropped connection, retried and failed over for nothing."""
        response = getattr(raw, "response", None)
        headers = getattr(response, "headers", None) or {}
        media = str(headers.get("content-type") or "").split(";")[0].strip().lower()
        if not media or media == "text/event-stream":
            return None  # no content type at all: read it, the events will tell
        head = _head(response)
        # one JSON document: a server that ignores `stream: true` (else the hint would mislead)
        fix = (f"; set providers.{self.name}.stream: false for a server that cannot stream"
               if head.lstrip().startswith("{") else "")
        return self.malformed(f"expected server-sent events, got {media}: {head!r}{fix}")

    def tap(self, raw: Any) -> bytearray:
        """The start of `raw`'s body (its first HEAD_BYTES), filled in as the SDK reads it, for
        `ended`: the SDK's SSE decoder drops comments and unknown lines without a trace."""
        head = bytearray()
        response = getattr(raw, "response", None)
        read = getattr(response, "iter_bytes", None)
        if read is None:
            return head

        def iter_bytes(*args: Any, **kwargs: Any) -> Iterator[bytes]:
            for piece in read(*args, **kwargs):
                if len(head) < HEAD_BYTES:
                    head.extend(piece[:HEAD_BYTES - len(head)])
                yield piece

        try:
            response.iter_bytes = iter_bytes
        except (AttributeError, TypeError):  # a response that takes no attribute: ended() says dropped
            pass
        return head

    def ended(self, raw: Any, events: int, head: bytes | bytearray = b"") -> ProviderError:
        """The error for a stream that ended before the reply was complete: a dropped connection
        (also one that sent only keep-alive comments, `: PROCESSING`, then closed), unless bytes
        came, not one made an event, and the body (`head`, from `tap`) does not even start as
        server-sent events — a body that is not SSE (`format`)."""
        received = getattr(getattr(raw, "response", None), "num_bytes_downloaded", 0) or 0
        if not events and received and _not_sse(head):
            return self.malformed(f"{received} bytes with no server-sent event in them")
        return self.dropped()

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, model: str = "",
               generation: GenerationSettings | None = None) -> Iterator[Any]:
        sdk = importlib.import_module(self.sdk)
        kwargs = self.request(messages, tools, model=model, generation=generation)
        try:
            yield from assembled(self.events(kwargs), f"{self.name}/{model}")
        except Exception as exc:  # classify everything: the caller decides what is retryable
            raise from_sdk_exception(exc, self.name, sdk) from exc


HEAD_BYTES = 4096  # how much of a streamed body `tap` keeps
# an SSE line: a comment, or a field the standard defines ("data: …", "event: …", a bare "data")
_SSE_LINE = re.compile(rb":|(?:data|event|id|retry)(?::|$)")


def _not_sse(head: bytes | bytearray) -> bool:
    """Whether a body starting with `head` is not server-sent events: its first non-blank line
    is neither a comment nor a field (after an optional BOM). Blank lines alone are SSE."""
    for line in re.split(rb"\r\n|\r|\n", bytes(head).removeprefix(b"\xef\xbb\xbf")):
        if line.strip():
            return _SSE_LINE.match(line) is None
    return False


def _head(response: Any, limit: int = 60) -> str:
    """The start of a response body, for an error message (read no further than that)."""
    data = b""
    try:
        for piece in response.iter_bytes():
            data += piece
            if len(data) >= limit:
                break
    except Exception:  # noqa: BLE001 - the message goes without the body rather than fail
        pass
    text = data[:limit].decode("utf-8", "replace")
    return text + "…" if len(data) > limit else text
