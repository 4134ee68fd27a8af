"""Cutting an oversized tool result to what the model's window can take.

A result may use at most `tools.max_result_chars` characters and 30% of the context window. A cut
keeps the head, or the head and the tail when the tail holds an error (a traceback, `exit code 3`),
and says in the text what was cut and how to see the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kit.tokens import estimate_tokens

MIN_HEAD_CHARS = 2000  # a cut result always keeps at least this much of its beginning
WINDOW_SHARE = 0.3  # a single result may use at most 30% of the context window

# An error or traceback near the end of an output is the part worth keeping.
ERROR_TAIL_RE = re.compile(
    r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b|\berror\b|\bfatal\b"
    r"|\bFAILED\b|\bpanic(?:ked)?\b|exit code [1-9]|exit_code: [1-9]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Truncation:
    text: str
    cut: bool
    original_chars: int
    kept_tail: bool = False


def result_limit(text: str, max_result_chars: int, context_window: int) -> int:
    """The char budget for one tool result: tools.max_result_chars and 30% of the context window.

    The window share is measured in estimated tokens (CJK counts one token per character), then
    turned back into characters for this text, so a CJK result gets proportionally fewer chars.
    """
    limit = max_result_chars
    tokens = estimate_tokens(text)
    allowed_tokens = WINDOW_SHARE * context_window
    if tokens > allowed_tokens and tokens > 0:
        limit = min(limit, int(len(text) * allowed_tokens / tokens))
    return max(MIN_HEAD_CHARS, limit)


NARROWER = "ask for a narrower range (e.g. read_file with start/lines) to see the rest"


def saved_hint(path: str) -> str:
    """The marker's pointer to a whole output kept on disk (kit.tools.saved_output)."""
    return f"the whole output is saved in {path} (read_file with start/lines reads any part)"


def truncate_result(text: str, limit: int, *, more: str = NARROWER) -> Truncation:
    """Cut `text` to about `limit` chars: keep the head, or head + tail when the tail holds an error.
    `more`: how the model can see what was cut (the marker's last words)."""
    total = len(text)
    if total <= limit:
        return Truncation(text, False, total)
    head_only = max(MIN_HEAD_CHARS, limit)
    tail_len = max(1000, limit - MIN_HEAD_CHARS)
    tail = text[-tail_len:]
    if ERROR_TAIL_RE.search(tail):
        cut = total - MIN_HEAD_CHARS - tail_len
        marker = (
            f"\n[… {cut} chars cut by Kit: the result had {total} chars, over the {limit}-char limit; "
            f"the beginning and the end (which holds an error) are kept; {more} …]\n"
        )
        return Truncation(text[:MIN_HEAD_CHARS] + marker + tail, True, total, kept_tail=True)
    cut = total - head_only
    marker = (
        f"\n[… {cut} chars cut by Kit: the result had {total} chars, over the {limit}-char limit; "
        f"{more} …]"
    )
    return Truncation(text[:head_only] + marker, True, total)
