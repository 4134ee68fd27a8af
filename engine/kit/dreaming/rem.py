"""REM sleep (§8): themes from embedding clusters and a few candidate truths. Never writes MEMORY.md."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from kit.dreaming import scoring
from kit.dreaming.candidates import Candidate
from kit.dreaming.embed import similarity_matrix

CLUSTER_THRESHOLD = 0.75
TRUTH_DEDUPE = 0.88
MAX_TRUTHS = 3
MAX_CANDIDATES = 300  # REM embeds every recent candidate; keep the strongest so a dream stays seconds


@dataclass(frozen=True)
class Theme:
    name: str
    strength: float
    members: tuple[Candidate, ...]

    def to_json(self) -> dict:
        return {"name": self.name, "strength": round(self.strength, 6), "members": [c.key for c in self.members]}


@dataclass(frozen=True)
class Truth:
    cand: Candidate
    confidence: float

    def to_json(self) -> dict:
        return {"key": self.cand.key, "snippet": self.cand.snippet, "confidence": round(self.confidence, 6)}


@dataclass(frozen=True)
class RemResult:
    lookback_days: int
    considered: int
    themes: tuple[Theme, ...]
    truths: tuple[Truth, ...]

    def to_json(self) -> dict:
        return {
            "lookback_days": self.lookback_days,
            "considered": self.considered,
            "themes": [t.to_json() for t in self.themes],
            "truths": [t.to_json() for t in self.truths],
        }


def _clusters(sim, n: int, threshold: float) -> list[list[int]]:
    """Single-link clustering: connected components of the graph sim ≥ threshold (union-find)."""
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    import numpy as np

    for i, j in np.argwhere(np.triu(sim >= threshold, 1)):
        a, b = find(int(i)), find(int(j))
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def theme_name(members: Sequence[Candidate]) -> str:
    counts = Counter(tag for c in members for tag in c.tags)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return ", ".join(tag for tag, _ in top) or "untitled"


def truth_confidence(c: Candidate) -> float:
    return scoring.truth_confidence(scoring.relevance(c.total_score, c.recall_count), c.recall_count,
                                    c.recall_days, len(c.tags))


def run_rem(cands: Sequence[Candidate], *, today: date, lookback_days: int, limit: int,
            min_pattern_strength: float, truth_min_confidence: float, embedder: Any | None) -> RemResult:
    recent = sorted(
        (c for c in cands if c.junk is None and (today - c.last_day).days <= lookback_days),
        key=lambda c: (-c.recall_count, -c.total_score, c.path, c.start_line, c.claim),
    )[:MAX_CANDIDATES]
    recent.sort(key=lambda c: (c.path, c.start_line, c.claim))
    n = len(recent)
    texts = [c.snippet for c in recent]
    sim = similarity_matrix(embedder, texts, texts)
    themes = []
    for idx in _clusters(sim, n, CLUSTER_THRESHOLD):
        members = tuple(recent[i] for i in idx)
        strength = scoring.theme_strength(len(members), n)
        if strength >= min_pattern_strength:
            themes.append(Theme(theme_name(members), strength, members))
    themes.sort(key=lambda t: (-t.strength, -len(t.members), t.name))
    scored = sorted(
        ((truth_confidence(c), i) for i, c in enumerate(recent)),
        key=lambda ci: (-ci[0], recent[ci[1]].path, recent[ci[1]].start_line, recent[ci[1]].claim),
    )
    truths: list[Truth] = []
    kept: list[int] = []
    for conf, i in scored:
        if conf < truth_min_confidence or len(truths) >= MAX_TRUTHS:
            break
        if any(sim[i, j] >= TRUTH_DEDUPE for j in kept):
            continue
        kept.append(i)
        truths.append(Truth(recent[i], conf))
    return RemResult(lookback_days, n, tuple(themes[:limit]), tuple(truths))
