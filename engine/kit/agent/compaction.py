"""Context compaction (§9): memory flush at 70 % of the window, compaction at 80 % — cheap first
(old tool results to one-line placeholders), a model-written summary only if still over.

The pure parts live here (token estimates, thresholds, where to split, the placeholder fallback,
the messages); the agent loop drives them because flushing and summarising need the model. The
texts the model reads are templates: memory-flush, compaction-system and compaction-request.
Token estimates use kit.tokens.estimate_tokens (chars/4, CJK one per char, × 1.2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# the estimates live in kit.tokens, where the provider layer calibrates the same numbers
from kit.tokens import MESSAGE_OVERHEAD as MESSAGE_OVERHEAD
from kit.tokens import estimate_tokens as estimate_tokens
from kit.tokens import message_tokens as message_tokens
from kit.tokens import messages_tokens as context_tokens
from kit.tokens import tools_tokens as tools_tokens

FLUSH_RATIO = 0.70
SUMMARY_RATIO = 0.80
KEEP_RATIO = 0.35  # after a summary, the recent turns kept verbatim use at most this share
SUMMARY_MAX_INPUT_CHARS = 60_000  # what one summarising call may read of the old history

Render = Callable[..., str]  # (template name, **context) -> text

SUMMARY_PREFIX = "<conversation-summary>\nSummary of the earlier conversation, written by Kit's compaction:\n"
SUMMARY_SUFFIX = "\n</conversation-summary>"


def needs_flush(tokens: int, window: int) -> bool:
    return tokens >= FLUSH_RATIO * window


def needs_summary(tokens: int, window: int) -> bool:
    return tokens >= SUMMARY_RATIO * window


def split_history(history: list[dict[str, Any]], keep_tokens: int) -> tuple[list[dict], list[dict]]:
    """(old, recent): recent is the longest suffix that starts at a user message and fits
    `keep_tokens`, but always holds the last user message and what followed it, so a tool call is
    never separated from its result and the current request is never summarised away."""
    user_starts = [i for i, m in enumerate(history) if m.get("role") == "user"]
    if not user_starts:
        return [], list(history)
    cut = user_starts[-1]
    for start in reversed(user_starts[:-1]):
        if context_tokens(history[start:]) > keep_tokens:
            break
        cut = start
    return list(history[:cut]), list(history[cut:])


def render_for_summary(old: list[dict[str, Any]]) -> tuple[str, int]:
    """The old messages as plain text for the summariser; the oldest text is cut past the cap."""
    lines = []
    for message in old:
        role = message.get("role", "?")
        content = str(message.get("content") or "")
        if role == "tool":
            name = message.get("name") or "tool"
            lines.append(f"[tool result {name}]\n{content[:4000]}")
        else:
            calls = message.get("tool_calls") or []
            call_text = "".join(
                f"\n[calls {c['function']['name']}({c['function'].get('arguments', '')})]" for c in calls
            )
            lines.append(f"[{role}]\n{content}{call_text}")
    text = "\n\n".join(lines)
    cut = max(0, len(text) - SUMMARY_MAX_INPUT_CHARS)
    return text[cut:], cut


def summary_messages(old: list[dict[str, Any]], render: Render, *, focus: str = "") -> list[dict[str, Any]]:
    """The summarising call's messages; `render(name, **context)` gives a template's text."""
    transcript, cut = render_for_summary(old)
    return [
        {"role": "system", "content": render("compaction-system.md.j2")},
        {"role": "user", "content": render("compaction-request.md.j2", count=len(old), cut=cut,
                                           transcript=transcript, focus=focus.strip())},
    ]


def summary_message(summary: str) -> dict[str, Any]:
    # a user-role message: every provider accepts it mid-conversation, unlike a second system one
    return {"role": "user", "content": SUMMARY_PREFIX + summary.strip() + SUMMARY_SUFFIX}


def placeholder_for(message: dict[str, Any]) -> str:
    name = message.get("name") or "tool"
    size = len(str(message.get("content") or ""))
    return f"[{name} result ({size} chars) dropped by compaction; call the tool again if needed]"


def placeholders(old: list[dict[str, Any]]) -> dict[str, str]:
    """tool_call_id → one-line placeholder for each old tool output that the placeholder makes
    shorter (cheap compaction, before any summary; one already replaced is left alone)."""
    out = {}
    for message in old:
        if message.get("role") == "tool" and message.get("tool_call_id"):
            content = str(message.get("content") or "")
            placeholder = placeholder_for(message)
            if len(placeholder) < len(content) and not (
                    content.startswith("[") and "dropped by compaction" in content):
                out[message["tool_call_id"]] = placeholder
    return out


@dataclass(frozen=True)
class CompactionResult:
    mode: str  # summary | placeholders | none
    before_tokens: int
    after_tokens: int
    dropped: int = 0  # messages replaced by the summary
    replaced: dict[str, str] = field(default_factory=dict)  # placeholder mode
    summary: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "before_tokens": self.before_tokens,
            "after_tokens": self.after_tokens,
            "dropped": self.dropped,
            "placeholders": len(self.replaced),
            "error": self.error,
        }
