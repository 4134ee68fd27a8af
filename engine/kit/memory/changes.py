"""Whether a note line says a value changed ("moves to", "no longer", "now", "extended to" …).

One definition for search, whose recency prior lets a later line that says so supersede an older
line on its topic (`search.topic_ages`), and for dreaming, whose Deep phase weighs an update that
states its change more readily (`kit.dreaming.claims.relation`).
"""

from __future__ import annotations

import re

from kit.lazyre import fold_ascii

_CHANGE = re.compile(
    # "moved to", and "moved the production cluster to": what moves may sit between the verb and "to"
    r"\b(?:mov(?:e|es|ed|ing)\s+(?:[\w'-]+\s+){0,4}?(?:to|from)\b|mov(?:e|es|ed|ing)\s+(?:back|over|house|in)|chang(?:es|ed|ing)\s+(?:to|from)"
    r"|(?:has|have|had|was|were|is)\s+changed|switch(?:es|ed)?\s+to|now|new"
    r"|no\s+longer|not\s+\w+\s+any\s?more|any\s?more|instead(?:\s+of)?|from\s+now\s+on|starting|as\s+of|from\s+(?:next|this)"
    r"|goes\s+(?:up|down)|went\s+(?:up|down)|(?:raised|increased|decreased|reduced|lowered)\s+to|extended|postponed"
    r"|rescheduled|brought\s+forward|pushed\s+(?:back|to)|replaced|updated?\s+to|used\s+to|was\s+\S+\s+(?:but|until))\b",
    re.I)


# A word every match of one alternative of _CHANGE holds (for "as of", "from next|this": both
# words): a line without any of them is not searched. The pattern, tried at every offset, cost
# ~28 µs on a 100-character line, and search asks it of every later line on a hit's topic.
_WORDS = frozenset("""move moves moved moving changes changed changing switch switches switched now new longer
    more anymore instead starting goes went raised increased decreased reduced lowered extended postponed
    rescheduled forward pushed replaced update updated used but until""".split())
_TOKEN = re.compile(r"[^\W\d_]+")


def states_change(text: str) -> bool:
    """The line says a value changed ("moves to", "new", "no longer", "extended to", …)."""
    words = set(_TOKEN.findall(fold_ascii(text)))
    if _WORDS.isdisjoint(words) and not ("as" in words and "of" in words) and not (
            "from" in words and ("next" in words or "this" in words)):
        return False
    return _CHANGE.search(text) is not None
