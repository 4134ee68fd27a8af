"""Rank candidates with the §8 score and check every gate; shared by Deep, promote and explain."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import date

from kit.config import Config
from kit.dreaming import scoring
from kit.dreaming.candidates import Candidate
from kit.dreaming.store import DEMOTED, PhaseStats, Promotion

GATES = ("not_junk", "min_score", "min_recall_count", "min_recall_days", "min_unique_queries", "max_age_days",
         "not_promoted", "not_demoted")


@dataclass(frozen=True)
class DeepSettings:
    limit: int
    min_score: float
    min_recall_count: int
    min_unique_queries: int
    max_age_days: int
    half_life_days: float
    weights: Mapping[str, float]
    min_recall_days: int = 2

    @classmethod
    def from_config(cls, config: Config) -> DeepSettings:
        d = config.dreaming.deep
        return cls(
            limit=d.limit,
            min_score=d.min_score,
            min_recall_count=d.min_recall_count,
            min_unique_queries=d.min_unique_queries,
            max_age_days=d.max_age_days,
            half_life_days=d.half_life_days,
            weights=asdict(config.dreaming.weights),
            min_recall_days=d.min_recall_days,
        )


@dataclass(frozen=True)
class Ranked:
    cand: Candidate
    signals: scoring.Signals
    score: scoring.Score
    gates: dict[str, bool]

    @property
    def blocked_by(self) -> list[str]:
        return [name for name in GATES if not self.gates[name]]

    @property
    def passed(self) -> bool:
        return all(self.gates.values())

    @property
    def blocked_reasons(self) -> list[str]:
        """`blocked_by` for people: "already in MEMORY.md" rather than `not_promoted`."""
        return [gate_reason(name, self.cand.junk) for name in self.blocked_by]

    def to_json(self) -> dict:
        c = self.cand
        return {
            "key": c.key,
            "claim": c.claim,
            "snippet": c.snippet,
            "score": round(self.score.total, 6),
            "components": {k: round(v, 6) for k, v in self.score.components.items()},
            "phase_boost": round(self.score.boost, 6),
            "recall_count": c.recall_count,
            "unique_queries": c.unique_queries,
            "recall_days": c.recall_days,
            "credited_recalls": round(c.credited, 6),
            "credited_queries": len(c.credited_queries),
            "credited_days": len(c.credited_days),
            "concept_tags": list(c.tags),
            "passed": self.passed,
            "blocked_by": self.blocked_by,
            "junk": c.junk,
            "junk_rule": c.junk_rule,
        }


def _days(today: date, day: str | None) -> float | None:
    return None if day is None else float((today - date.fromisoformat(day)).days)


def signals_for(c: Candidate, today: date, light: PhaseStats | None, rem: PhaseStats | None) -> scoring.Signals:
    """Credited counts (days and span from credited days; recency from the last credited day, or
    the last recall when none was credited)."""
    return scoring.Signals(
        recall_count=c.credited,
        total_score=c.credited_day_credit,
        unique_queries=len(c.credited_queries),
        recall_days=len(c.credited_days),
        span_days=float((c.last_day - c.first_day).days),
        days_since_last_recall=float((today - c.last_day).days),
        tag_count=len(c.tags),
        light_hits=light.hits if light else 0,
        days_since_light=_days(today, light.last_day if light else None),
        rem_hits=rem.hits if rem else 0,
        days_since_rem=_days(today, rem.last_day if rem else None),
        raw_recalls=c.recall_count,
    )


# A credited count that is a hair under a whole number (0.9999…) is that number.
_EPS = 1e-9


def rank(
    cands: Iterable[Candidate],
    *,
    today: date,
    settings: DeepSettings,
    light: Mapping[str, PhaseStats],
    rem: Mapping[str, PhaseStats],
    promotions: Iterable[Promotion],
    with_boost: bool = True,
) -> list[Ranked]:
    promoted_claims, demoted_claims = set(), set()
    for p in promotions:
        if p.status in DEMOTED:
            demoted_claims.add(p.claim)
        else:  # active, retired or superseded: promoted once is enough
            promoted_claims.add(p.claim)
    out = []
    for c in cands:
        sig = signals_for(c, today, light.get(c.id), rem.get(c.id))
        sc = scoring.score(sig, settings.weights, settings.half_life_days, with_boost=with_boost)
        wordings = c.claims | {c.claim}
        gates = {
            "not_junk": c.junk is None,
            "min_score": sc.total >= settings.min_score,
            "min_recall_count": c.credited + _EPS >= settings.min_recall_count,
            "min_recall_days": len(c.credited_days) >= settings.min_recall_days,
            "min_unique_queries": len(c.credited_queries) >= settings.min_unique_queries,
            "max_age_days": sig.days_since_last_recall <= settings.max_age_days,
            "not_promoted": not (wordings & promoted_claims),
            "not_demoted": not (wordings & demoted_claims),
        }
        out.append(Ranked(c, sig, sc, gates))
    out.sort(key=lambda r: (-r.score.total, -r.cand.credited, -r.cand.recall_count, r.cand.path, r.cand.start_line, r.cand.claim))
    return out


# Human wording of every gate (the JSON keeps the names; explain adds the setting beside its number).
_FAILED = {"not_promoted": "already in MEMORY.md", "not_demoted": "you removed it from MEMORY.md",
           "min_score": "score too low", "min_recall_count": "too few credited recalls",
           "min_recall_days": "recalled on too few days", "min_unique_queries": "recalled by too few queries",
           "max_age_days": "not recalled lately"}
_PASSED = {"not_junk": "not junk", "not_promoted": "not in MEMORY.md yet", "not_demoted": "not removed by you",
           "min_score": "score high enough", "min_recall_count": "enough credited recalls",
           "min_recall_days": "recalled on enough days", "min_unique_queries": "recalled by enough queries",
           "max_age_days": "recalled lately"}


def gate_reason(name: str, junk: str | None = None, *, passed: bool = False) -> str:
    """What a gate means in human output: why it blocks (or, with `passed`, what it checked)."""
    if passed:
        return _PASSED.get(name, name)
    if name == "not_junk":
        return f"junk: {junk}" if junk else "junk"
    return _FAILED.get(name, name)
