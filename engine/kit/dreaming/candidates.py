"""Candidates (§8): recall events aggregated per candidate key and claim hash.

A key whose line range now holds a different claim hash is a different candidate, so a rewritten
note line starts from zero instead of inheriting the old line's recalls.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from kit.dreaming.junk import junk_reason
from kit.dreaming.tags import concept_tags
from kit.memory.recall import RecallEvent


@dataclass(frozen=True)
class Candidate:
    key: str
    path: str
    start_line: int
    end_line: int
    claim: str
    snippet: str
    recall_count: int
    total_score: float
    max_score: float
    query_hashes: frozenset[str]
    queries: tuple[str, ...]  # distinct query texts, first-seen order (for explain)
    days: tuple[str, ...]  # distinct recall days, sorted
    first_ts: float
    last_ts: float
    tags: tuple[str, ...]
    junk: str | None  # why it can never be promoted, or None

    @property
    def id(self) -> str:
        return f"{self.key}@{self.claim}"

    @property
    def unique_queries(self) -> int:
        return len(self.query_hashes)

    @property
    def recall_days(self) -> int:
        return len(self.days)

    @property
    def first_day(self) -> date:
        return date.fromisoformat(self.days[0])

    @property
    def last_day(self) -> date:
        return date.fromisoformat(self.days[-1])

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "claim": self.claim,
            "snippet": self.snippet,
            "recall_count": self.recall_count,
            "total_score": round(self.total_score, 6),
            "max_score": round(self.max_score, 6),
            "unique_queries": self.unique_queries,
            "recall_days": self.recall_days,
            "first_day": self.days[0],
            "last_day": self.days[-1],
            "concept_tags": list(self.tags),
            "junk": self.junk,
        }


def build_candidates(events: Iterable[RecallEvent]) -> list[Candidate]:
    groups: dict[tuple[str, str], list[RecallEvent]] = {}
    for ev in events:
        groups.setdefault((ev.key, ev.claim_hash), []).append(ev)
    out = []
    for (key, claim), evs in groups.items():
        evs.sort(key=lambda e: (e.ts, e.id))
        snippet = evs[-1].snippet
        queries: list[str] = []
        for e in evs:
            if e.query not in queries:
                queries.append(e.query)
        out.append(
            Candidate(
                key=key,
                path=evs[-1].path,
                start_line=evs[-1].start_line,
                end_line=evs[-1].end_line,
                claim=claim,
                snippet=snippet,
                recall_count=len(evs),
                total_score=sum(e.score for e in evs),
                max_score=max(e.score for e in evs),
                query_hashes=frozenset(e.query_hash for e in evs),
                queries=tuple(queries),
                days=tuple(sorted({e.day for e in evs})),
                first_ts=evs[0].ts,
                last_ts=evs[-1].ts,
                tags=concept_tags(snippet),
                junk=junk_reason(snippet),
            )
        )
    out.sort(key=lambda c: (c.path, c.start_line, c.end_line, c.claim))
    return out
