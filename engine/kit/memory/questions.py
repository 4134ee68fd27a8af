"""What counts as a question, not a fact: one definition for the session archive (which never
keeps one) and the dreaming junk filter (which never promotes one).

A sentence is a question when it ends with "?", opens like one ("which day do we ship …",
"is the VPN down again"), or ends in a question clause after a comma ("I need to text Dad, what's
his mobile", "quote for the Lumen extension, what rate") — people type questions without the
question mark. A text of several sentences is a question when every sentence is one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_I = re.IGNORECASE
QUESTION_START = re.compile(
    r"^(?:what|when|where|who|whom|whose|why|how|which|is|are|am|was|were|do(?!\s+not)|does|did|can|could|would"
    r"|should|shall|might|isn'?t|aren'?t|doesn'?t|didn'?t|wouldn'?t|any\s+idea|tell\s+me|remind\s+me|wonder)\b", _I)
# ", what's his mobile" / ", which dentist" / ", how long" / ", when does it open": a wh-word after the
# last comma, then an inverted verb or a noun — not a relative clause (", where we met",
# ", which is why …", ", when the lease ends"), whose wh-word is followed by its own subject
_QUESTION_TAIL = re.compile(
    r",\s*(?:what(?:'s|\s+(?!a\b|an\b)\w+)|which\s+(?!(?:is|was|means|meant|makes|made|we|i|you|they|he|she|it)\b)\w+|how(?:'s|\s+(?:much|many|long|often|far|old|do|does|did|is|are|can|should))"
    r"|(?:when|where|who)(?:'s|\s+(?:do|does|did|should|can|could|would|will|are)\b))[^,;.!]{0,60}$", _I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


def sentence_is_question(sentence: str) -> bool:
    """One sentence: ends with "?", opens like a question, or ends in a question clause."""
    text = sentence.strip()
    return (text.endswith("?") or QUESTION_START.match(text) is not None
            or _QUESTION_TAIL.search(text.rstrip(" .")) is not None)


def sentences(text: str) -> list[str]:
    """The sentences of a text (it breaks after . ! ? and at line ends), stripped; pieces of
    nothing but spaces and marks (. ! ? ,) are left out."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip(" .!?,")]


def is_question(text: str, parts: Sequence[str] | None = None) -> bool:
    """A question, not a fact: it ends with "?", or every sentence of it is a question. `parts`:
    `sentences(text.strip())`, when the caller has them already (the junk filter's greeting rule
    reads them too)."""
    text = text.strip()
    if text.endswith("?"):
        return True
    if parts is None:
        parts = sentences(text)
    return bool(parts) and all(sentence_is_question(s) for s in parts)
