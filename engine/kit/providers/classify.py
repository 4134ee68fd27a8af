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


def from_sdk_exception(exc: Exception, provider: str, sdk) -> ProviderError:
    """Classify an exception from the openai or anthropic SDK module `sdk`."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(f"{provider}: request timed out", kind="timeout", provider=provider)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(f"{provider}: cannot connect ({exc})", kind="unreachable", provider=provider)
    if isinstance(exc, sdk.APIStatusError):
        message = status_message(exc)
        status = int(exc.status_code)
        kind = kind_for_status(status, message)
        return ProviderError(f"{provider}: HTTP {status}: {message}", kind=kind, provider=provider,
                             status=status, retry_after=retry_after(exc))
    if isinstance(exc, (ValueError, KeyError, TypeError, AttributeError)):
        # a 200 whose body we cannot read (malformed JSON, missing fields)
        return ProviderError(f"{provider}: malformed response ({exc})", kind="format", provider=provider)
    return ProviderError(f"{provider}: {type(exc).__name__}: {exc}", kind="unreachable", provider=provider)


MAX_RETRY_AFTER = 3600.0  # a server asking for more than an hour is not taken literally


def retry_after(exc: Exception) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form only), if the server sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw = headers.get("retry-after")
    try:
        seconds = float(raw) if raw is not None else None
    except ValueError:
        return None
    if seconds is None or seconds < 0:
        return None
    return min(seconds, MAX_RETRY_AFTER)
