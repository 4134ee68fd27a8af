"""The formulas of §8, one function each, written to read like the spec.

Ages are whole days between calendar dates (today − the day of the event), so a score does not
drift during a day and re-running a dream the same day reproduces its reports byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from kit.settings import weight_shares

LN2 = math.log(2)
PHASE_HALF_LIFE_DAYS = 14.0
COMPONENTS = ("relevance", "frequency", "diversity", "recency", "consolidation", "conceptual")

# Recall credit: how much one search hit counts as a recall of its line.
CLOSENESS_FLOOR = 0.5  # a hit scoring half the top hit (or less) earns nothing for its closeness
USE_BONUS = 0.75  # the agent read the hit in full (memory_get) or its text reached the reply
DAY_CAP = 1.0  # a day's credit saturates: one day counts at most one recall, whatever the burst
CREDITED = 0.5  # the credit a hit needs for its day and its query to count (distinct days, queries)
SIDE_CREDIT = 0.25  # at most, for a hit the agent passed over: below CREDITED, it never earns a day
# a hit scoring under half of its line's best score so far in the log was found for something else (an
# off-topic hit): at most SIDE_CREDIT, whatever its rank or use — the same half as CLOSENESS_FLOOR
OWN_FLOOR = 0.5


def recall_credit(rank: int | None, relative: float | None, used: bool = False, *,
                  passed_over: bool = False, own: float | None = None) -> float:
    """One search hit's credit as a recall of its line, 0..1.

        closeness = clamp((relative − 0.5) / 0.5, 0, 1)²     relative = score / the search's top score
        credit    = min(1, closeness / (1 + rank) + 0.75·used)
        credit    = min(credit, 0.25)                          when the agent passed it over,
                                                               or own < 0.5 (off-topic)

    `rank` is the hit's place (0 = best) among the search's promotable hits — junk hits (transcripts,
    commands …) do not push an answer down — and `relative` its score over the search's top score.
    The answer (rank 0) earns full credit; a neighbour at 90 % of the top score in third place earns
    0.21, one at 70 % in fifth place 0.03. A hit the agent then used (read in full, or quoted in its
    reply) earns 0.75 more: it answered. A hit the agent *passed over* — in the same turn it used
    another hit and not this one, or searched again after an active recall showed it, and did not
    find it again — did not
    answer, whatever its rank: at most SIDE_CREDIT, so it never earns a day or a query on its own.
    Events logged before ranks were kept (`rank` None) earn full credit, as every hit did then.

    `own` is the hit's score over the best score its line reached in the log up to this hit (what it
    scores when it is what was asked about; later searches never take back a day already earned, so
    asking for a fact directly never un-promotes it). Under OWN_FLOOR the search was about something else and
    found the line only by a weak match — the top of a search with no answer in the notes ("what
    book am I reading" → the hotel *booking*), quoted by an agent with nothing better, is still off
    topic: at most SIDE_CREDIT, so it never earns a day or a query. This measures a hit against its
    own line, not against the other results nor a fixed score, so the weak matches search keeps for
    a query it cannot answer earn no day for a line that is asked about elsewhere.
    """
    if rank is None or relative is None:
        base = 1.0
    else:
        closeness = min(1.0, max(0.0, (relative - CLOSENESS_FLOOR) / (1 - CLOSENESS_FLOOR))) ** 2
        base = closeness / (1 + max(0, rank))
    # base is in [0, 1] and never NaN (max(0.0, NaN) is 0.0): only a use can take it over 1
    credit = min(1.0, base + USE_BONUS) if used else base
    off_topic = own is not None and own < OWN_FLOOR  # a use does not make it on topic
    return min(credit, SIDE_CREDIT) if (passed_over and not used) or off_topic else credit


def saturated(day_credits: Mapping[str, float]) -> float:
    """Credited recalls: each day's credit, capped at DAY_CAP, summed over days."""
    return sum([min(DAY_CAP, c) for c in day_credits.values()])


def relevance(credited: float, credited_days: int) -> float:
    """How well it answered on the days it counted: the mean (saturated) credit of its credited
    days. Side appearances on other days do not dilute it; they earn no days at all."""
    return min(1.0, credited / credited_days) if credited_days else 0.0


def frequency(recall_count: float) -> float:
    return min(1.0, math.log(1 + recall_count) / math.log(11))  # saturates at 10


def diversity(unique_queries: int, recall_days: int) -> float:
    """Both spreads must be there: many queries on one day, or one query on many days, is narrow."""
    return min(1.0, min(unique_queries, recall_days) / 5)


def recency(days_since_last_recall: float, half_life_days: float) -> float:
    if half_life_days <= 0:
        return 1.0
    return math.exp(-LN2 / half_life_days * max(0.0, days_since_last_recall))


def consolidation(recall_days: int, span_days: float) -> float:
    if recall_days <= 0:
        return 0.0
    if recall_days == 1:
        return 0.2
    return 0.55 * min(1.0, math.log(recall_days) / math.log(5)) + 0.45 * min(1.0, span_days / 7)


def conceptual(tag_count: int) -> float:
    return min(1.0, tag_count / 6)


def phase_strength(hits: int) -> float:
    return min(1.0, math.log(1 + hits) / math.log(7))


def phase_recency(days_since_hit: float | None) -> float:
    if days_since_hit is None:
        return 0.0  # never hit by that phase
    return math.exp(-LN2 / PHASE_HALF_LIFE_DAYS * max(0.0, days_since_hit))


def phase_boost(light_hits: int, days_since_light: float | None, rem_hits: int, days_since_rem: float | None) -> float:
    ls, lr = phase_strength(light_hits), phase_recency(days_since_light)
    rs, rr = phase_strength(rem_hits), phase_recency(days_since_rem)
    return 0.06 * ls * lr + 0.09 * rs * rr


def normalised_weights(weights: Mapping[str, float]) -> dict[str, float]:
    shares = weight_shares([max(0.0, float(weights.get(name, 0.0))) for name in COMPONENTS])
    if shares is None:
        return {name: 1 / len(COMPONENTS) for name in COMPONENTS}
    return dict(zip(COMPONENTS, shares, strict=True))


@dataclass(frozen=True)
class Signals:
    """What the recall log says about one candidate, as of one day. Counts are credited (see
    `recall_credit`); `raw_recalls` is the number of events."""

    recall_count: float  # credited recalls, each day saturating at DAY_CAP
    total_score: float  # the credit of its credited days (saturated), for relevance
    unique_queries: int  # queries with a credited hit
    recall_days: int  # days with a credited hit
    span_days: float  # last credited day − first credited day
    days_since_last_recall: float
    tag_count: int
    light_hits: int = 0
    days_since_light: float | None = None
    rem_hits: int = 0
    days_since_rem: float | None = None
    raw_recalls: int = 0


@dataclass(frozen=True)
class Score:
    components: dict[str, float]
    weighted: float
    boost: float
    total: float

    def to_json(self) -> dict:
        return {
            "components": {k: round(v, 6) for k, v in self.components.items()},
            "weighted": round(self.weighted, 6),
            "phase_boost": round(self.boost, 6),
            "score": round(self.total, 6),
        }


def components(s: Signals, half_life_days: float) -> dict[str, float]:
    return {
        "relevance": relevance(s.total_score, s.recall_days),
        "frequency": frequency(s.recall_count),
        "diversity": diversity(s.unique_queries, s.recall_days),
        "recency": recency(s.days_since_last_recall, half_life_days),
        "consolidation": consolidation(s.recall_days, s.span_days),
        "conceptual": conceptual(s.tag_count),
    }


def score(s: Signals, weights: Mapping[str, float], half_life_days: float, *, with_boost: bool = True) -> Score:
    parts = components(s, half_life_days)
    w = normalised_weights(weights)
    weighted = sum(w[name] * parts[name] for name in COMPONENTS)
    boost = phase_boost(s.light_hits, s.days_since_light, s.rem_hits, s.days_since_rem) if with_boost else 0.0
    return Score(parts, weighted, boost, min(1.0, weighted + boost))


def truth_confidence(relevance_value: float, recall_count: int, recall_days: int, tag_count: int) -> float:
    """REM's candidate-truth confidence."""
    return (
        0.45 * relevance_value
        + 0.25 * min(1.0, math.log(1 + recall_count) / math.log(7))
        + 0.20 * min(1.0, recall_days / 3)
        + 0.10 * min(1.0, tag_count / 6)
    )


def theme_strength(members: int, candidates: int) -> float:
    return min(1.0, 2 * members / candidates) if candidates else 0.0
