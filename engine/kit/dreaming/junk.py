"""The junk filter (§8): what must never be promoted, whatever its recall count.

Returns a reason string (shown by `kit memory explain`) or None for a snippet worth keeping.
"""

from __future__ import annotations

import re

from kit.memory.threats import scan_text

MIN_CHARS = 12

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
_NUMBER_CELL = re.compile(r"^[\s\-+.,:%$€£0-9]*$")


def _strip_marker(line: str) -> str:
    return re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?", "", line)


def _is_code(text: str) -> bool:
    if "```" in text or text.lstrip().startswith("    "):
        return True
    lines = [_strip_marker(line).strip().strip("`") for line in text.splitlines() if line.strip()]
    if not lines:
        return False
    shell = sum(1 for line in lines if _SHELL_STRONG.match(line) or (_SHELL_WEAK.match(line) and _SHELL_SIGNS.search(line)))
    if shell * 2 >= len(lines):
        return True
    # a Markdown table's pipes are layout, not code
    body = "".join(line.replace("|", " ") if line.startswith("|") else line for line in lines)
    symbols = sum(1 for ch in body if ch in _CODE_CHARS)
    letters = sum(1 for ch in body if ch.isalpha())
    # prose has few brackets and operators; code and shell have many
    return symbols >= 4 and symbols > 0.12 * max(1, letters)


def _is_number_table(text: str) -> bool:
    rows = [line for line in text.splitlines() if line.strip().startswith("|")]
    if len(rows) < 2:
        return False
    cells = [c.strip() for row in rows for c in row.strip().strip("|").split("|")]
    cells = [c for c in cells if c and not re.fullmatch(r":?-{2,}:?", c)]
    if not cells:
        return True
    numeric = sum(1 for c in cells if _NUMBER_CELL.match(c))
    return numeric * 2 >= len(cells)


def junk_reason(snippet: str) -> str | None:
    text = snippet.strip()
    if len(_strip_marker(text).strip()) < MIN_CHARS:
        return f"too short (under {MIN_CHARS} chars)"
    if _KIT_TEXT.search(text):
        return "Kit's own report or provenance text"
    if _is_number_table(text):
        return "a table of numbers"
    if _is_code(text):
        return "mostly code or shell commands"
    threat = scan_text(text)
    if threat:
        return f"failed the threat scan: {threat}"
    return None
