"""Where a memory snippet comes from, and what that means before it reaches a prompt.

Sources, by how much a snippet is worth trusting for the same content:

    memory    MEMORY.md: curated long-term memory (the user's lines and promoted facts)
    note      a daily note memory/YYYY-MM-DD.md, memory.extra_paths, any other memory file
    retired   memory/archive/…: entries retired from MEMORY.md (still searchable)
    archive   a session archive memory/YYYY-MM-DD-<slug>.md written by the session-memory hook

`screen(result)` is the door between search and a prompt (the memory_search tool, active recall,
memory_get): a snippet the threat scan flags is withheld and reported, and so are the raw turns
an older session archive kept (format v1: `- **Assistant:** …`, `- **User:** …`): what the model
guessed is never fed back to it as memory, nor recorded as a recall that dreaming could promote,
and only the extractive summary of a session (format v2) is promotable.

`by_source(hits)` keeps an archive snippet below a MEMORY.md or user-note hit that says the same
thing (same content words), so the curated line leads wherever both are found.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kit.memory.notes import DAILY_RE, MEMORY_FILE
from kit.threats import scan

RETIRED_DIR = "memory/archive/"
# lines of an older session archive (format v1 kept one raw turn per bullet): the model's answers,
# and the user's raw turns (questions and requests as much as statements)
MODEL_ANSWER = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)\s*(?:assistant|model|ai|kit)\s*:?\s*(?:\*\*|__)\s*:?", re.I)
RAW_TURN = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)\s*(?:user|human)\s*:?\s*(?:\*\*|__)\s*:?", re.I)
SAME_CONTENT = 0.5  # share of the shorter snippet's content words the other one has too
_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset("""a an the and or but of to in on at for with by from into about as is are was were be been
am i me my we us our you your he him his she her it its they them their this that these those what which who
do does did have has had will would can could should not no so than then there here just also""".split())


def source_of(path: str) -> str:
    """memory | archive | retired | note (see the module docstring)."""
    if path == MEMORY_FILE:
        return "memory"
    if path.startswith(RETIRED_DIR):
        return "retired"
    match = DAILY_RE.match(path)
    if match and match.group(2):
        return "archive"
    return "note"


def is_session_archive(path: str) -> bool:
    return source_of(path) == "archive"


@dataclass(frozen=True)
class Withheld:
    """A search hit kept out of a prompt, and why (the threat rule, or `model-answer`)."""

    path: str
    start_line: int
    end_line: int
    rule: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "start_line": self.start_line, "end_line": self.end_line,
                "rule": self.rule, "reason": self.reason}


def withhold_reason(path: str, text: str) -> tuple[str, str] | None:
    """(rule, reason) when `text` from `path` must not enter a prompt, else None."""
    if is_session_archive(path):
        lines = text.splitlines()
        if any(MODEL_ANSWER.match(line) for line in lines):
            return "model-answer", "a model's answer kept by a session archive, not something the user stated"
        if any(RAW_TURN.match(line) for line in lines):
            return "raw-turn", "a raw turn kept by an old session archive (questions as much as facts), not a stated fact"
    threat = scan(text)
    if threat is not None:
        return threat.rule, threat.summary  # never the matched text: this report reaches the prompt
    return None


def screen(result: Any) -> Any:
    """The search result without the hits that must not reach a prompt; they are listed in
    `result.withheld` instead (path, lines, rule, reason)."""
    kept, withheld = [], []
    for hit in result.results:
        why = withhold_reason(hit.path, hit.snippet)
        if why is None:
            kept.append(hit)
        else:
            withheld.append(Withheld(hit.path, int(hit.start_line), int(hit.end_line), *why))
    if not withheld:
        return result
    return dataclasses.replace(result, results=tuple(kept), withheld=tuple(withheld))


def content_words(text: str) -> frozenset[str]:
    """Lower-cased words minus stop words, a plural or third-person 's' dropped: enough to tell
    two snippets that say the same thing."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(out)


def same_content(a: str, b: str) -> bool:
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return False
    return len(wa & wb) / min(len(wa), len(wb)) >= SAME_CONTENT


def by_source(hits: Sequence[Any]) -> list[Any]:
    """`hits` (best first) with every session-archive hit moved just below the last MEMORY.md or
    note hit that says the same thing; everything else keeps its order."""
    order = list(hits)
    for hit in [h for h in hits if is_session_archive(h.path)]:
        at = order.index(hit)
        curated = [i for i, other in enumerate(order) if i > at and source_of(other.path) in ("memory", "note")
                   and same_content(hit.snippet, other.snippet)]
        if curated:
            order.insert(curated[-1], order.pop(at))
    return order
