"""Threat scan for text that would enter memory (and later every prompt).

A daily note is re-read by the model, and promoted notes are injected every turn, so a note is a
prompt. Refuse text that tries to steer the model (prompt injection, role hijack), to leak secrets
(exfiltration commands) or to hide itself (invisible Unicode). Each rule has a name; the reason
returned names it so the user or model knows what to rephrase.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    pattern: re.Pattern[str]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


_PREVIOUS = r"(?:all\s+|any\s+|the\s+|your\s+|my\s+)?(?:previous|prior|above|earlier|preceding|former|system)"
_ORDERS = r"(?:instructions?|prompts?|rules|directions|guidelines|context|messages?)"

RULES: tuple[Rule, ...] = (
    Rule(
        "prompt-injection",
        "tries to override the agent's instructions",
        _rx(
            rf"\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+)?{_PREVIOUS}\s+{_ORDERS}"
            rf"|\b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:you\s+(?:were|have\s+been)\s+told|above)"
            r"|\bnew\s+(?:system\s+)?instructions\s*:"
            r"|\b(?:reveal|print|show|repeat|output)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|hidden\s+instructions)"
            r"|\bdo\s+not\s+follow\s+(?:your|the)\s+(?:rules|instructions|guidelines)"
            r"|忽略(?:之前|以上|先前|所有)(?:的)?(?:所有)?(?:指令|指示|提示)"
        ),
    ),
    Rule(
        "role-hijack",
        "tries to give the agent a new role or speak as the system",
        _rx(
            r"\byou\s+are\s+now\s+(?:a|an|the|my|no\s+longer|in|dan|jailbroken|unrestricted|unfiltered|free\s+of|evil|root|admin(?:istrator)?|developer)\b"
            r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should)\b"
            r"|\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:the\s+|a\s+|an\s+)?(?:system|developer|admin(?:istrator)?|root|jailbroken|unrestricted|dan)\b"
            r"|\bpretend\s+(?:to\s+be|you\s+are)\b"
            r"|\benter\s+(?:developer|god|dan|jailbreak)\s+mode\b"
            r"|^\s*(?:system|assistant|developer)\s*:\s"
            r"|<\|?(?:im_start|im_end|system|endoftext)\|?>|\[/?INST\]|<</?SYS>>|</?system>"
        ),
    ),
    Rule(
        "exfiltration",
        "looks like a command that sends secrets or local files somewhere",
        _rx(
            r"\b(?:curl|wget|nc|ncat|netcat|scp|rsync|http|Invoke-WebRequest)\b[^\n]*"
            r"(?:\$\{?[A-Z_]*(?:KEY|TOKEN|SECRET|PASS(?:WORD)?|CREDENTIALS?)[A-Z_]*\}?|\$\(\s*(?:env|printenv|cat)\b|@?~?/?\.(?:ssh|aws|env|netrc|gnupg)\b|/etc/(?:passwd|shadow))"
            r"|\b(?:env|printenv|set)\s*\|\s*(?:curl|wget|nc|ncat|netcat|base64)\b"
            r"|\bcat\s+[^\n|]*(?:\.ssh/|id_rsa|id_ed25519|\.aws/credentials|\.netrc|\.env\b)[^\n]*\|\s*(?:curl|wget|nc|ncat|base64)\b"
            r"|\b(?:send|post|upload|email|forward|exfiltrate|leak)\s+(?:the\s+|all\s+|any\s+|your\s+|my\s+)*(?:api[\s_-]?keys?|passwords?|secrets?|tokens?|credentials|private\s+keys?|ssh\s+keys?|env(?:ironment)?\s+variables)\s+to\b"
        ),
    ),
)

# zero-width, bidi controls, word joiners, BOM, tag characters: text a person cannot see
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)


def _invisible_reason(text: str) -> str | None:
    match = _INVISIBLE.search(text)
    if not match:
        return None
    char = match.group(0)
    name = unicodedata.name(char, "UNNAMED")
    return f"rule invisible-unicode: contains an invisible character U+{ord(char):04X} {name} at offset {match.start()}"


def scan_text(text: str) -> str | None:
    """None when the text is clean, else a reason naming the rule that refused it."""
    if not text:
        return None
    reason = _invisible_reason(text)
    if reason:
        return reason
    # NFKC folds full-width and compatibility look-alikes onto the ASCII the rules match
    folded = unicodedata.normalize("NFKC", text)
    for rule in RULES:
        match = rule.pattern.search(folded)
        if match:
            excerpt = " ".join(match.group(0).split())[:60]
            return f"rule {rule.name}: {rule.description} (matched {excerpt!r})"
    return None
