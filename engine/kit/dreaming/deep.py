"""Deep sleep (§8): rehydrate, dedupe against MEMORY.md, write the managed section, enforce the cap.

Only this phase writes MEMORY.md. The write re-reads the file immediately before replacing it and
applies Deep's additions and removals to whatever is there now, so a user's edit made while the
dream ran is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from kit.dreaming import managed
from kit.dreaming.candidates import Candidate
from kit.dreaming.embed import similarity_matrix
from kit.dreaming.ranking import Ranked
from kit.memory.recall import claim_hash, normalise_claim

SEMANTIC_DUPLICATE = 0.88
NEARBY_LINES = 50
MEMORY_FILE = "MEMORY.md"
ARCHIVE_FILE = "memory/archive/promoted.md"
ARCHIVE_HEADER = (
    "# Retired promoted memories\n\n"
    "Entries Kit's dreaming moved out of MEMORY.md when its promoted section grew over\n"
    "`dreaming.memory_max_chars`. Still searchable with `kit memory search`; no longer in the prompt.\n"
)


@dataclass(frozen=True)
class Live:
    """Where a candidate's claim is in its note now."""

    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class Decision:
    ranked: Ranked
    action: str  # promoted | gone | duplicate | over_limit
    detail: str
    live: Live | None = None

    def to_json(self) -> dict:
        return {"key": self.ranked.cand.key, "action": self.action, "detail": self.detail}


def _matches(window: str, cand: Candidate) -> bool:
    if claim_hash(window) == cand.claim:
        return True
    # snippets are cut to memory.search.snippet_chars: a cut snippet still identifies its lines
    want = normalise_claim(cand.snippet).rstrip("…. ")
    return len(want) >= 12 and want in normalise_claim(window)


def rehydrate(root: Path, cand: Candidate) -> Live | None:
    """Re-read the note: the claim at its lines, else nearby (same line count), else None (gone)."""
    from kit.errors import KitError
    from kit.fsutil import read_text, safe_join

    try:  # missing, unreadable, not UTF-8 or escaping the workspace: not promotable tonight
        lines = read_text(safe_join(root, cand.path), display=cand.path).split("\n")
    except (OSError, KitError):
        return None
    n = cand.end_line - cand.start_line + 1
    starts = sorted(range(1, max(1, len(lines) - n + 2)), key=lambda s: (abs(s - cand.start_line), s))
    for s in starts:
        if abs(s - cand.start_line) > NEARBY_LINES:
            break
        window = "\n".join(lines[s - 1 : s - 1 + n])
        if window.strip() and _matches(window, cand):
            return Live(s, s + n - 1, window)
    return None


def block_demoted_twins(ranked: Sequence[Ranked], demoted_texts: Sequence[str], embedder: Any | None) -> list[Ranked]:
    """Fail `not_demoted` for a passing candidate semantically equal (the MEMORY.md dedupe test,
    cosine ≥ SEMANTIC_DUPLICATE) to an entry the user removed: a paraphrase of a deleted fact is
    not promoted either. Only candidates that passed every gate are embedded."""
    from kit.dreaming.embed import CachedEmbedder

    texts = [t for t in dict.fromkeys(t.strip() for t in demoted_texts) if t]
    passing = [r for r in ranked if r.passed]
    if not texts or not passing:
        return list(ranked)
    if embedder is not None and not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder)
    sims = similarity_matrix(embedder, [managed.one_line(r.cand.snippet) for r in passing], texts)
    twins = {r.cand.id for r, row in zip(passing, sims, strict=True) if float(row.max()) >= SEMANTIC_DUPLICATE}
    return [replace(r, gates={**r.gates, "not_demoted": False}) if r.cand.id in twins else r for r in ranked]


def plan(
    ranked: Sequence[Ranked],
    *,
    root: Path,
    memory_text: str,
    limit: int,
    embedder: Any | None,
) -> list[Decision]:
    """Decide, in rank order, what to promote among the candidates that passed every gate.

    Candidates past today's limit are not rehydrated or embedded: the work stays proportional to
    the limit, not to the size of the recall log.
    """
    from kit.dreaming.embed import CachedEmbedder

    if embedder is not None and not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder)
    existing = [e.text for e in managed.parse(memory_text).entries] + managed.user_lines(memory_text)
    decisions: list[Decision] = []
    accepted: list[str] = []
    passing = [r for r in ranked if r.passed]
    lives: dict[str, Live | None] = {}
    if embedder is not None and limit > 0:
        # one batch for the likely winners (and what they are compared with) instead of one call each
        head = passing[: limit + 10]
        for r in head:
            lives[r.cand.id] = rehydrate(root, r.cand)
        embedder.encode(existing + [managed.one_line(v.text) for v in lives.values() if v is not None])
    for r in passing:
        if len(accepted) >= limit:
            decisions.append(Decision(r, "over_limit", f"over today's limit of {limit} promotions"))
            continue
        live = lives[r.cand.id] if r.cand.id in lives else rehydrate(root, r.cand)
        if live is None:
            decisions.append(Decision(r, "gone", "its lines are no longer in the note"))
            continue
        text = managed.one_line(live.text)
        others = existing + accepted
        sims = similarity_matrix(embedder, [text], others)[0] if others else None
        if sims is not None and float(sims.max()) >= SEMANTIC_DUPLICATE:
            twin = others[int(sims.argmax())]
            decisions.append(Decision(r, "duplicate", f"semantically equal to a MEMORY.md entry: {twin[:80]}"))
            continue
        accepted.append(text)
        decisions.append(Decision(r, "promoted", "passed every gate", live))
    return decisions


def entry_for(d: Decision, today: date) -> managed.Entry:
    c, live = d.ranked.cand, d.live
    assert live is not None
    return managed.make_entry(
        key=c.key, claim=c.claim, score=d.ranked.score.total, recalls=c.recall_count,
        queries=c.unique_queries, day=today.isoformat(), text=live.text,
    )


def choose_retirements(text: str, cap: int, last_recall: Callable[[managed.Entry], tuple[str, float]]) -> list[managed.Entry]:
    """Entries to retire, oldest last recall first (ties: lowest score), until the section fits."""
    p = managed.parse(text)
    size = len(p.section_text())
    if cap <= 0 or size <= cap:
        return []
    order = sorted(p.entries, key=lambda e: (*last_recall(e), e.key, e.claim))
    out: list[managed.Entry] = []
    blocks = list(p.blocks)
    for e in order:
        if size <= cap:
            break
        blocks.remove(e)
        out.append(e)
        size = len(managed.render_section(blocks))
    return out


def archive_text(current: str | None, retired: Sequence[managed.Entry], today: date) -> str:
    text = current if current and current.strip() else ARCHIVE_HEADER
    text = text.rstrip("\n") + "\n"
    for e in retired:
        attrs = tuple((k, v) for k, v in e.attrs if k != "retired") + (("retired", today.isoformat()),)
        text += "\n" + "\n".join(managed.Entry(attrs, e.body).render()) + "\n"
    return text
