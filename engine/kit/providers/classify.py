"""Map what went wrong talking to a model onto the error kinds of §9.

Both official SDKs raise `APIStatusError` (with `.status_code` and a JSON body),
`APITimeoutError` and `APIConnectionError`; we classify by status first, then by the message,
because servers disagree on codes (a context overflow is a 400 for OpenAI, a 413 elsewhere).
"""

from __future__ import annotations

import re

from kit.providers.base import ProviderError

_CONTEXT = re.compile(
    r"context[_ ]length|maximum context|context window|too many tokens|prompt is too long|"
    r"max_tokens.*exceed|input is too long|reduce the length",
    re.I,
)
_BILLING = re.compile(r"insufficient[_ ]quota|billing|credit balance|payment|exceeded your current quota", re.I)
_PERMANENT = re.compile(r"deactivated|disabled|revoked|suspended|banned", re.I)
_NOT_FOUND = re.compile(r"model.*(not found|does not exist|not exist)|unknown model|no such model", re.I)


def kind_for_status(status: int, message: str = "") -> str:
    """The error kind for an HTTP status and the server's message."""
    if _CONTEXT.search(message) and status in (400, 413, 422):
        return "context_overflow"
    if status == 401:
        return "auth_permanent" if _PERMANENT.search(message) else "auth"
    if status == 402 or _BILLING.search(message):
        return "billing"
    if status == 403:
        return "auth_permanent"
    if status == 404:
        return "model_not_found"
    if status == 408:
        return "timeout"
    if status == 413:
        return "context_overflow"
    if status == 429:
        return "rate_limit"
    if status in (503, 529) or status >= 500:
        return "overloaded"
    if _NOT_FOUND.search(message):
        return "model_not_found"
    return "format"  # 400/409/422: the request itself is wrong


def status_message(exc: Exception) -> str:
    """The server's own error message from an SDK exception, else str(exc)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return getattr(exc, "message", None) or str(exc)


# the `type` of an error event that arrives inside a 200 stream (Anthropic's SSE `error` event)
ERROR_TYPES = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "api_error": "overloaded",
    "timeout_error": "timeout",
    "authentication_error": "auth",
    "permission_error": "auth_permanent",
    "not_found_error": "model_not_found",
    "billing_error": "billing",
    "request_too_large": "context_overflow",
    "invalid_request_error": "format",
}
# what httpx calls a connection that was never made (everything else broke an open one)
NOT_CONNECTED = ("ConnectError", "ConnectTimeout", "UnsupportedProtocol")


def _cause_names(exc: BaseException) -> set[str]:
    names: set[str] = set()
    seen = exc
    while seen is not None and len(names) < 10:
        names.add(type(seen).__name__)
        seen = seen.__cause__ or seen.__context__
    return names


def _body_type(exc: Exception) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("type"), str):
            return err["type"]
    return None


def from_sdk_exception(exc: Exception, provider: str, sdk) -> ProviderError:
    """Classify an exception from the openai or anthropic SDK module `sdk`."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(f"{provider}: request timed out", kind="timeout", provider=provider)
    if isinstance(exc, sdk.APIConnectionError):
        if _cause_names(exc) & set(NOT_CONNECTED):
            return ProviderError(f"{provider}: cannot connect ({exc})", kind="unreachable", provider=provider)
        # reset, or closed before the reply was complete (also mid-stream)
        return ProviderError(f"{provider}: the connection was dropped ({_cause(exc)})", kind="dropped",
                             provider=provider)
    if isinstance(exc, sdk.APIStatusError):
        message = status_message(exc)
        status = int(exc.status_code)
        kind = kind_for_status(status, message)
        if status < 400:  # an error event inside a streamed 200: its type says what it is
            return _stream_error(exc, message, provider)
        return ProviderError(f"{provider}: HTTP {status}: {message}", kind=kind, provider=provider,
                             status=status, retry_after=retry_after(exc))
    if isinstance(exc, sdk.APIError):
        # OpenAI's SDK raises a bare APIError for an `error` object inside a stream
        return _stream_error(exc, status_message(exc), provider)
    if isinstance(exc, (ValueError, KeyError, TypeError, AttributeError)):
        # a 200 whose body we cannot read (malformed JSON, missing fields)
        return ProviderError(f"{provider}: malformed response ({exc})", kind="format", provider=provider)
    names = _cause_names(exc)
    if any(name.endswith("Timeout") for name in names):  # an SDK that lets httpx errors through
        return ProviderError(f"{provider}: request timed out", kind="timeout", provider=provider)
    if names & set(NOT_CONNECTED):
        return ProviderError(f"{provider}: cannot connect ({exc})", kind="unreachable", provider=provider)
    if names & {"RemoteProtocolError", "ReadError", "WriteError", "ConnectionResetError", "BrokenPipeError"}:
        return ProviderError(f"{provider}: the connection was dropped ({type(exc).__name__}: {exc})",
                             kind="dropped", provider=provider)
    return ProviderError(f"{provider}: {type(exc).__name__}: {exc}", kind="unreachable", provider=provider)


def _stream_error(exc: Exception, message: str, provider: str) -> ProviderError:
    """An error reported inside a stream that had started with 200."""
    if _CONTEXT.search(message):
        kind = "context_overflow"
    else:
        kind = ERROR_TYPES.get(_body_type(exc) or "", "overloaded")
    return ProviderError(f"{provider}: error in the stream: {message}", kind=kind, provider=provider)


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    return f"{type(inner).__name__}: {inner}" if inner is not None else str(exc)


MAX_RETRY_AFTER = 3600.0  # a server asking for more than an hour is not taken literally


def retry_after(exc: Exception) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds or an HTTP date), if the server sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")  # OpenAI's and Anthropic's precise variant
    try:
        if raw_ms is not None:
            return min(max(0.0, float(raw_ms) / 1000.0), MAX_RETRY_AFTER)
    except ValueError:
        pass
    raw = headers.get("retry-after")
    try:
        seconds = float(raw) if raw is not None else None
    except ValueError:
        seconds = _http_date(raw)
    if seconds is None or seconds < 0:
        return None
    return min(seconds, MAX_RETRY_AFTER)


def _http_date(raw: str) -> float | None:
    """Retry-After as an HTTP date: the seconds until then (Kit's clock)."""
    from email.utils import parsedate_to_datetime

    from kit import clock

    try:
        moment = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if moment is None:
        return None
    return max(0.0, moment.timestamp() - clock.timestamp())
