"""Light sleep (§8): stage recent candidates, drop same-file near-duplicates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from kit.dreaming.candidates import Candidate
from kit.dreaming.tags import jaccard, tokens


@dataclass(frozen=True)
class LightResult:
    lookback_days: int
    considered: int
    staged: tuple[Candidate, ...]
    duplicates: tuple[tuple[Candidate, Candidate], ...]  # (dropped, kept)

    def to_json(self) -> dict:
        return {
            "lookback_days": self.lookback_days,
            "considered": self.considered,
            "staged": [c.key for c in self.staged],
            "duplicates": [{"key": d.key, "duplicate_of": k.key} for d, k in self.duplicates],
        }


def _order(c: Candidate) -> tuple:
    # strongest evidence first, so a near-duplicate loses to the better-recalled line
    return (-c.recall_count, -c.total_score, c.path, c.start_line, c.claim)


def run_light(cands: Sequence[Candidate], *, today: date, lookback_days: int, limit: int, dedupe: float) -> LightResult:
    recent = [c for c in cands if c.junk is None and (today - c.last_day).days <= lookback_days]
    recent.sort(key=_order)
    staged: list[Candidate] = []
    dups: list[tuple[Candidate, Candidate]] = []
    toks: dict[str, frozenset[str]] = {}
    for c in recent:
        if len(staged) >= limit:
            break
        mine = toks.setdefault(c.id, tokens(c.snippet))
        twin = next((k for k in staged if k.path == c.path and jaccard(mine, toks[k.id]) >= dedupe), None)
        if twin is not None:
            dups.append((c, twin))
            continue
        staged.append(c)
    return LightResult(lookback_days, len(recent), tuple(staged), tuple(dups))
