"""The junk filter (§8): what must never be promoted, whatever its recall count.

Returns a reason string (shown by `kit memory explain`) or None for a snippet worth keeping. The
reason names the rule that matched: SHELL, CODE, TABLE, KIT_TEXT, too short, or the threat scan.
"""

from __future__ import annotations

import re

from kit.memory.threats import scan_text

MIN_CHARS = 12

SHELL = "looks like a shell command"
CODE = "looks like code"
TABLE = "looks like a table"
KIT_TEXT = "looks like Kit's own text"

# Command names that are not everyday English: the name plus an argument is enough.
_SHELL_STRONG = re.compile(
    r"^\s*(?:\$\s+|>>>\s|#\s*\w+@|(?:sudo|kubectl|docker|git|npm|npx|pnpm|yarn|pip|pip3|python3?|apt|apt-get|"
    r"brew|systemctl|journalctl|chmod|chown|mkdir|rm|mv|cp|curl|wget|ssh|scp|cargo|helm|terraform|ansible|grep|"
    r"awk|psql|mysql|redis-cli|ffmpeg)\s+\S)"
)
# Words that are also English ("make sure…", "go to…"): only with a flag, path or shell operator.
_SHELL_WEAK = re.compile(r"^\s*(?:cd|ls|make|cat|echo|export|source|go|node|kill|ps|tar|sed|uv|cargo)\s+\S")
_SHELL_SIGNS = re.compile(r"(?:^|\s)--?[a-zA-Z]|(?:^|\s)(?:\.{0,2}/|~/)\S|\|\s*\w|&&|>>?\s*\S|\$\(|=\S")
_CODE_CHARS = set("{}[]();=<>$|&\\`")
_KIT_TEXT = re.compile(
    r"<!--\s*kit:|\bkit:promoted\b|^#+\s*(?:Promoted memories|Light sleep|REM sleep|Deep sleep|Dream diary)\b"
    r"|\b(?:recall_count|unique_queries|recall_days|claim_hash|query_hash|blocked_by|phase boost)\b"
    r"|\bscore[=:]\s*\d|\brecalls[=:]\s*\d|\bconfidence[=:]\s*\d",
    re.I | re.M,
)
_FENCE = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:```|~~~)", re.M)
# a table's delimiter row (|---|:--:|), also when a table was flattened onto one line
_TABLE_RULE = re.compile(r"\|\s*:?-{2,}:?\s*\|")


def _strip_marker(line: str) -> str:
    return re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?", "", line)


def _code_kind(text: str) -> str | None:
    """SHELL or CODE when the snippet is mostly commands or code, else None."""
    if _FENCE.search(text) or text.lstrip().startswith("    "):
        return CODE
    lines = [_strip_marker(line).strip().strip("`") for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    shell = sum(1 for line in lines if _SHELL_STRONG.match(line) or (_SHELL_WEAK.match(line) and _SHELL_SIGNS.search(line)))
    if shell * 2 >= len(lines):
        return SHELL
    body = "".join(lines)
    symbols = sum(1 for ch in body if ch in _CODE_CHARS)
    letters = sum(1 for ch in body if ch.isalpha())
    # prose has few brackets and operators; code and shell have many
    return CODE if symbols >= 4 and symbols > 0.12 * max(1, letters) else None


def _is_table(text: str) -> bool:
    """Any Markdown table (a row of cells means nothing out of its table), flattened or not."""
    if _TABLE_RULE.search(text):
        return True
    rows = [line for line in (_strip_marker(raw).strip() for raw in text.splitlines())
            if line.startswith("|") and line.count("|") >= 2]
    return len(rows) >= 2 or any(row.count("|") >= 3 for row in rows)


def junk_reason(snippet: str) -> str | None:
    text = snippet.strip()
    if len(_strip_marker(text).strip()) < MIN_CHARS:
        return f"too short (under {MIN_CHARS} chars)"
    if _KIT_TEXT.search(text):
        return KIT_TEXT
    if _is_table(text):
        return TABLE
    kind = _code_kind(text)
    if kind:
        return kind
    threat = scan_text(text)
    if threat:
        return f"failed the threat scan: {threat}"
    return None
