"""Token estimates without a tokenizer (§4): chars/4 for Latin text, one token per CJK character,
times a 1.2 safety margin. Cheap, deterministic and pessimistic on purpose."""

from __future__ import annotations

from kit.lazyre import LazyPattern

SAFETY_MARGIN = 1.2

# CJK ideographs, kana, Hangul syllables, CJK punctuation and full-width forms: about one token each.
# (compiled at its first non-ASCII text: a class of 40,000 characters costs milliseconds to compile)
_CJK = LazyPattern(
    "[\u3000-\u303f\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`: (latin_chars / 4 + cjk_chars) × 1.2, rounded up."""
    if not text:
        return 0
    cjk = 0 if text.isascii() else len(_CJK.findall(text))
    latin = len(text) - cjk
    # (latin/4 + cjk) × 1.2 = (latin + 4·cjk) × 3/10, in integers so 2.5 × 1.2 is exactly 3
    return -(-(latin + 4 * cjk) * 3 // 10)


MESSAGE_OVERHEAD = 4  # role and separators, per message


def _content_text(content: object) -> str:
    if isinstance(content, list):  # OpenAI content parts (Kit's two-part system message)
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def message_tokens(message: dict) -> int:
    """One chat message: its text, its tool calls' JSON, and a small overhead."""
    import json

    text = _content_text(message.get("content"))
    if message.get("tool_calls"):
        text += json.dumps(message["tool_calls"], ensure_ascii=False)
    return estimate_tokens(text) + MESSAGE_OVERHEAD


def messages_tokens(messages: list[dict]) -> int:
    return sum(message_tokens(m) for m in messages)


def tools_tokens(schemas: list[dict]) -> int:
    """The tool schemas travel with every request and take room in the window too."""
    import json

    return estimate_tokens(json.dumps(list(schemas), ensure_ascii=False)) if schemas else 0
