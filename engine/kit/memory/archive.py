"""Session archives: what the user stated in a conversation, kept as facts (issue 12 deliver 2,
issue 10 item 7).

The bundled session-memory hook writes `memory/YYYY-MM-DD-<slug>.md` when a session ends. The
archive is an offline, extractive summary — the user's own sentences, sorted into decisions,
preferences, identifiers and facts — never the raw turns, and never the assistant's replies: a
model's answer may be wrong, and what the agent remembers must be what the user said, not what
the model guessed. Dreaming promotes only what is recalled from these lines, so nothing but
stated facts can reach MEMORY.md from a session.

    summary = summarise(messages)           # [{"role": "user"|"assistant", "content": str}, …]
    text = render(summary, day=…, time=…, session_id=…, reason=…)   # "" when there is nothing

Kept: a sentence of a user message that states something — a decision ("we ship on Thursday",
"let's use Postgres"), a preference ("I prefer short answers", "always answer in British
English"), an identifier (an email, URL, host, path, ticket, version, "my username is …"), or a
fact anchored by a name, number or date ("the dentist moved to Harbour Street"). Leading
"no, that's wrong," and "remember that" are dropped, the rest kept ("no, we ship on Thursday").

Not kept: questions (with or without "?"), requests to the assistant ("can you …", "show me …",
"write …"), greetings and acknowledgements, hedges ("I think", "maybe"), vague chatter without
an anchor, anything the threat scan flags (counted, not written), and every assistant message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kit.memory.questions import is_question
from kit.threats import scan
from kit.wording import plural

FORMAT = 2  # v1 (before issue 12) kept one bullet per turn, assistant replies included
MARKER = "kit:session-memory"
SECTIONS = (("decisions", "Decisions"), ("preferences", "Preferences"), ("identifiers", "Identifiers"),
            ("facts", "Facts"))
MAX_ITEMS = 40  # per archive: the statements of one session, not a transcript
MAX_CHARS = 400  # a longer sentence is cut at a word
MIN_WORDS = 3
MIN_CHARS = 12

_I = re.IGNORECASE
_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=[\"'(\[]?[A-Z0-9\u00c0-\u024f])|\n+")
_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_DISCOURSE = re.compile(
    r"^(?:(?:no|nope|yes|yeah|yep|ok(?:ay)?|well|actually|so|right|also|and|but|oh|hmm|sorry|correction)\b[,!.:;]?\s+"
    r"|(?:that'?s|that\s+is|this\s+is|you'?re|you\s+are)\s+(?:wrong|not\s+right|incorrect|not\s+quite\s+right)\b[,!.:;—-]*\s*"
    r"|not\s+quite\b[,!.:;—-]*\s*|wrong\b[,!.:;—-]*\s*)+", _I)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep\s+in\s+mind|don'?t\s+forget|fyi|for\s+the\s+record|just\s+so\s+you\s+know"
    r"|for\s+future\s+reference)\b(?:\s+that)?[,:]?\s+", _I)
_REQUEST = re.compile(
    r"^(?:please|pls|kindly|help|show|tell|give|list|find|search|look|check|explain|summari[sz]e|write|draft|create"
    r"|make|generate|fix|run|open|read|translate|compare|convert|calculate|send|book|schedule|add|update|delete"
    r"|remove|let\s+me\s+know|i\s+need\s+you|i\s+want\s+you|i'?d\s+like\s+you|could\s+you|can\s+you|would\s+you"
    r"|will\s+you|try|go\s+ahead|continue|again|redo|retry|do\s+it|do\s+that|thanks?\b|thank\s+you)\b", _I)
_CHATTER = re.compile(
    r"^(?:hi|hello|hey|hiya|yo|morning|good\s+(?:morning|afternoon|evening|night)|thanks?|thank\s+you|cheers|bye"
    r"|goodbye|see\s+you|ok(?:ay)?|cool|great|nice|sure|yes|no|yep|nope|got\s+it|sounds\s+good|perfect|awesome"
    r"|lol|haha|never\s*mind|nvm|no\s+worries|fine|alright|good)\b", _I)
_PLEASE = re.compile(r"^please\s+(?=(?:always|never|don'?t|do\s+not|call\s+me)\b)", _I)
_HEDGE = re.compile(r"^(?:i\s+think|i\s+guess|i\s+suppose|i\s+wonder|maybe|perhaps|probably|not\s+sure|i'?m\s+not\s+sure"
                    r"|might\s+be|it\s+seems|i\s+feel\s+like)\b", _I)

_DECISION = re.compile(
    r"\b(?:we|i)\s+(?:have\s+|'ve\s+)?(?:decided|agreed|chose|picked|settled|went\s+with)\b"
    r"|\b(?:we|i)\s*(?:will|'ll|shall|are\s+going\s+to|'re\s+going\s+to|am\s+going\s+to|'m\s+going\s+to)\b"
    r"|\b(?:decided|decision\s+is|agreed\s+to|the\s+plan\s+is|going\s+forward|from\s+now\s+on|starting\s+(?:next|on|from|today|tomorrow)"
    r"|postponed|rescheduled|cancell?ed|the\s+deadline\s+is|is\s+scheduled\s+for|switch(?:ed|ing)?\s+to|go(?:ing)?\s+with)\b"
    r"|\b(?:we|i)\s*(?:\s+have\s+|'ve\s+|\s+)?(?:moved|are\s+moving|'re\s+moving)\s+(?:it\s+|the\s+\w+\s+)?to\b"
    r"|^let'?s\b|\bwe\s+(?:ship|release|deploy|launch|use|meet|start|stop|roll|run|keep|store|host|build|test|merge"
    r"|review|pay|need|must|should|always|never|only|don'?t|do\s+not)\b", _I)
_PREFERENCE = re.compile(
    r"\bi\s+(?:really\s+|usually\s+|always\s+|never\s+)?(?:prefer|like|love|hate|dislike|enjoy|want|don'?t\s+like|do\s+not\s+like"
    r"|can'?t\s+stand|'d\s+rather|would\s+rather|tend\s+to|always|never|usually|am\s+allergic|'m\s+allergic)\b"
    r"|\bmy\s+favou?rite\b|\bcall\s+me\b|\bi'?m\s+(?:vegetarian|vegan|allergic|left-handed)\b"
    r"|^(?:always|never)\s+\w+", _I)
_IDENTIFIER = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.-]+|\bhttps?://\S+|\b\d{1,3}(?:\.\d{1,3}){3}\b|\b[\w-]+(?:\.[\w-]+)+\.(?:com|org|net|io|dev|internal|local|lan|corp|cloud)\b"
    r"|\b[A-Z][A-Z0-9]+-\d+\b|\bv?\d+\.\d+(?:\.\d+)+\b|(?:^|\s)(?:~|\.{1,2})?/[\w.\-/]+|\b[\w-]+/[\w.-]+\.\w{1,5}\b"
    r"|\+?\d[\d ()-]{7,}\d|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
    r"|\bmy\s+(?:name|email|e-mail|phone|number|address|username|user\s+name|handle|account|id|login|team|manager)\s+is\b"
    r"|\b(?:is|are)\s+(?:called|named)\b", _I)
_ANCHOR = re.compile(
    r"\d|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|yesterday|tonight|weekend"
    r"|january|february|march|april|june|july|august|september|october|november|december|week|month|year)s?\b", _I)
_PROPER = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z\u00e0-\u00ff]+")


@dataclass(frozen=True)
class Summary:
    """The statements kept from one conversation, by section, and how many were left out."""

    decisions: tuple[str, ...] = ()
    preferences: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()
    withheld: int = 0  # statements the threat scan refused
    considered: int = 0  # user sentences read
    first_user: str = ""  # the first user message (the archive's name comes from it)
    reasons: dict[str, str] = field(default_factory=dict)  # sentence -> why it was left out (tests, debugging)

    @property
    def items(self) -> tuple[str, ...]:
        return self.decisions + self.preferences + self.identifiers + self.facts

    def to_json(self) -> dict[str, Any]:
        return {"decisions": list(self.decisions), "preferences": list(self.preferences),
                "identifiers": list(self.identifiers), "facts": list(self.facts),
                "withheld": self.withheld, "considered": self.considered}


def sentences(text: str) -> list[str]:
    """A user message as sentences: one per line or list item, long lines split after . ! ? ;"""
    out = []
    for line in str(text).replace("\r\n", "\n").split("\n"):
        line = _MARKER.sub("", line).strip()
        if not line or line.startswith(("```", "    ", ">")):
            continue
        out.extend(part.strip() for part in _SPLIT.split(line) if part.strip())
    return out


def _clean(sentence: str) -> str:
    text = _DISCOURSE.sub("", sentence.strip()).strip()
    text = _REMEMBER.sub("", text).strip()
    text = _PLEASE.sub("", text)  # "please always answer in English" states a preference
    text = text.strip(" ,;:-—")
    if text and text[0].islower() and not re.match(r"^[a-z]+[@./]", text):
        text = text[0].upper() + text[1:]
    if len(text) > MAX_CHARS:
        text = text[: MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return text


def classify(sentence: str) -> tuple[str | None, str]:
    """(section, cleaned text) for a sentence worth keeping, else (None, why it was left out)."""
    if sentence.rstrip().endswith("?"):
        return None, "question"
    text = _clean(sentence)
    words = text.split()
    if len(words) < MIN_WORDS or len(text) < MIN_CHARS:
        return None, "too short"
    if is_question(text):  # also without "?": "I need to text Dad, what's his mobile" (kit.memory.questions)
        return None, "question"
    if _CHATTER.match(text) and len(words) <= 6:
        return None, "greeting or acknowledgement"
    if _REQUEST.match(text):
        return None, "a request to the assistant"
    if _HEDGE.match(text):
        return None, "a guess, not a statement"
    if _DECISION.search(text):
        return "decisions", text
    if _PREFERENCE.search(text):
        return "preferences", text
    if _IDENTIFIER.search(text):
        return "identifiers", text
    if _ANCHOR.search(text) or _PROPER.search(text):
        return "facts", text
    return None, "no name, number or date to anchor it"


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def summarise(messages: Iterable[dict[str, Any]]) -> Summary:
    """Extract what the user stated (see the module docstring). Assistant, tool and system
    messages are never read; slash commands (`/skill …`) are not statements."""
    kept: dict[str, list[str]] = {name: [] for name, _ in SECTIONS}
    seen: set[str] = set()
    reasons: dict[str, str] = {}
    withheld = considered = 0
    first_user = ""
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = str(message.get("content") or "").strip()
        if not content:
            continue
        first_user = first_user or content
        if content.startswith("/"):
            continue
        for sentence in sentences(content):
            considered += 1
            section, text = classify(sentence)
            if section is None:
                reasons[sentence] = text
                continue
            if scan(text) is not None:
                withheld += 1
                reasons[sentence] = "refused by the threat scan"
                continue
            key = _norm(text)
            if key in seen or sum(len(v) for v in kept.values()) >= MAX_ITEMS:
                continue
            seen.add(key)
            kept[section].append(text)
    return Summary(**{name: tuple(kept[name]) for name, _ in SECTIONS}, withheld=withheld,
                   considered=considered, first_user=first_user, reasons=reasons)


def render(summary: Summary, *, day: str, time: str, session_id: str | None, reason: str) -> str:
    """The archive's Markdown; "" when the conversation stated nothing worth keeping."""
    if not summary.items:
        return ""
    meta = f"{MARKER} v{FORMAT}: what the user stated, archived on {reason}"
    if session_id:
        meta += f" (session {session_id})"
    meta += "; questions, requests and the assistant's replies are not kept"
    if summary.withheld:
        meta += f"; {plural(summary.withheld, 'statement')} refused by the threat scan"
    lines = [f"# Session {day} {time}", "", f"<!-- {meta} -->"]
    for name, title in SECTIONS:
        items = getattr(summary, name)
        if items:
            lines += ["", f"## {title}", ""]
            lines += [f"- {item}" for item in items]
    return "\n".join(lines) + "\n"
