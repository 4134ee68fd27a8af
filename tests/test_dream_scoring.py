"""§8 scoring (credited, issue 16), with expected values worked out by hand (each component and the total, to 1e-6)."""

from __future__ import annotations

import pytest

from kit.dreaming import scoring
from kit.dreaming.scoring import Signals

WEIGHTS = {"relevance": 0.30, "frequency": 0.24, "diversity": 0.15, "recency": 0.15, "consolidation": 0.10,
           "conceptual": 0.06}
HL = 14.0


def approx(x):
    return pytest.approx(x, abs=1e-6)


def test_candidate_recalled_on_two_adjacent_days():
    # credited 1.0 + 0.6 on two days one day apart, 3 credited queries, last recall today, 6 tags
    s = Signals(recall_count=1.6, total_score=1.6, unique_queries=3, recall_days=2, span_days=1,
                days_since_last_recall=0, tag_count=6, raw_recalls=4)
    sc = scoring.score(s, WEIGHTS, HL)
    assert sc.components == {
        "relevance": approx(0.8),  # 1.6 credited / 2 credited days
        "frequency": approx(0.398479),  # ln 2.6 / ln 11
        "diversity": approx(0.4),  # min(3, 2) / 5
        "recency": approx(1.0),
        "consolidation": approx(0.301158),  # 0.55·ln2/ln5 + 0.45·1/7
        "conceptual": approx(1.0),
    }
    assert sc.boost == 0.0
    assert sc.total == approx(0.635751)


def test_one_day_consolidation_and_recency_decay():
    # one credited day worth 0.7, one query, three days ago, 3 tags
    s = Signals(recall_count=0.7, total_score=0.7, unique_queries=1, recall_days=1, span_days=0,
                days_since_last_recall=3, tag_count=3, raw_recalls=5)
    sc = scoring.score(s, WEIGHTS, HL)
    assert sc.components["relevance"] == approx(0.7)
    assert sc.components["frequency"] == approx(0.221289)  # ln 1.7 / ln 11
    assert sc.components["diversity"] == approx(0.2)
    assert sc.components["recency"] == approx(0.861973)  # exp(−ln2/14·3)
    assert sc.components["consolidation"] == approx(0.2)  # one day
    assert sc.components["conceptual"] == approx(0.5)
    assert sc.total == approx(0.472405)


def test_multi_day_consolidation_saturates():
    # 5.4 credited over 6 days spanning 9 days, 7 queries, last yesterday, 8 tags
    s = Signals(recall_count=5.4, total_score=5.4, unique_queries=7, recall_days=6, span_days=9,
                days_since_last_recall=1, tag_count=8, raw_recalls=12)
    sc = scoring.score(s, WEIGHTS, HL)
    assert sc.components["relevance"] == approx(0.9)
    assert sc.components["frequency"] == approx(0.774136)  # ln 6.4 / ln 11
    assert sc.components["diversity"] == approx(1.0)  # min(7, 6) / 5, capped
    assert sc.components["consolidation"] == approx(1.0)
    assert sc.components["conceptual"] == approx(1.0)
    assert sc.components["recency"] == approx(0.951695)
    assert sc.total == approx(0.908547)


def test_diversity_needs_both_queries_and_days():
    assert scoring.diversity(9, 1) == approx(0.2)  # nine wordings on one day
    assert scoring.diversity(1, 6) == approx(0.2)  # one query on six days
    assert scoring.diversity(3, 4) == approx(0.6)


def test_recall_credit_follows_rank_and_relative_score():
    assert scoring.recall_credit(0, 1.0) == 1.0  # the answer
    assert scoring.recall_credit(2, 0.9) == approx(0.213333)  # ((0.9−0.5)/0.5)² / 3
    assert scoring.recall_credit(4, 0.7) == approx(0.032)  # ((0.7−0.5)/0.5)² / 5
    assert scoring.recall_credit(1, 0.5) == 0.0  # half the top score: nothing
    assert scoring.recall_credit(2, 0.9, used=True) == approx(0.963333)  # + 0.75, read or quoted
    assert scoring.recall_credit(0, 1.0, used=True) == 1.0  # capped
    assert scoring.recall_credit(None, None) == 1.0  # logged before ranks were kept
    assert scoring.saturated({"2026-05-01": 4.0, "2026-05-02": 0.25}) == approx(1.25)  # a day counts ≤ 1


def test_recall_credit_of_an_off_topic_hit_is_side_credit_whatever_its_rank_or_use():
    # own = the hit's score over its line's best score in the log
    assert scoring.recall_credit(0, 1.0, used=True, own=0.375) == scoring.SIDE_CREDIT  # 0.30 vs 0.80
    assert scoring.recall_credit(0, 1.0, own=0.49) == scoring.SIDE_CREDIT
    assert scoring.recall_credit(0, 1.0, used=True, own=0.5) == 1.0  # half its best: still on topic
    assert scoring.recall_credit(2, 0.9, own=0.4) == approx(0.213333)  # under the cap already: unchanged
    assert scoring.recall_credit(None, None, own=0.4) == scoring.SIDE_CREDIT  # a pre-rank event too
    assert scoring.recall_credit(0, 1.0, own=None) == 1.0  # unknown: no cap


def test_consolidation_three_days_span_three():
    assert scoring.consolidation(0, 0) == 0.0
    assert scoring.consolidation(1, 0) == approx(0.2)
    assert scoring.consolidation(3, 3) == approx(0.568291)  # 0.55·ln3/ln5 + 0.45·3/7


def test_phase_boost():
    # two light hits, the last one yesterday; one REM hit today
    assert scoring.phase_strength(2) == approx(0.564575)  # ln 3 / ln 7
    assert scoring.phase_recency(1) == approx(0.951695)
    assert scoring.phase_recency(None) == 0.0  # never hit
    assert scoring.phase_boost(2, 1, 1, 0) == approx(0.064297)
    assert scoring.phase_boost(0, None, 0, None) == 0.0
    s = Signals(recall_count=1.6, total_score=1.6, unique_queries=3, recall_days=2, span_days=1,
                days_since_last_recall=0, tag_count=6, light_hits=2, days_since_light=1, rem_hits=1, days_since_rem=0,
                raw_recalls=4)
    sc = scoring.score(s, WEIGHTS, HL)
    assert sc.boost == approx(0.064297)
    assert sc.total == approx(0.700048)
    assert scoring.score(s, WEIGHTS, HL, with_boost=False).total == approx(0.635751)


def test_weights_are_renormalised_and_total_is_capped():
    doubled = {k: 2 * v for k, v in WEIGHTS.items()}
    s = Signals(recall_count=1.6, total_score=1.6, unique_queries=3, recall_days=2, span_days=1,
                days_since_last_recall=0, tag_count=6, raw_recalls=4)
    assert scoring.score(s, doubled, HL).total == approx(0.635751)
    only_relevance = {"relevance": 5.0}
    assert scoring.normalised_weights(only_relevance)["relevance"] == 1.0
    assert scoring.score(s, only_relevance, HL).total == approx(0.8)
    # finite weights whose sum overflows: the same shares as any equal weights, not all 0
    huge = {k: 1e308 for k in WEIGHTS}
    assert scoring.normalised_weights(huge) == approx(scoring.normalised_weights({k: 1.0 for k in WEIGHTS}))
    assert scoring.score(s, huge, HL).total > 0
    assert scoring.normalised_weights({"relevance": float("inf"), "frequency": 1.0})["relevance"] == 1.0
    top = Signals(recall_count=10, total_score=10, unique_queries=9, recall_days=10, span_days=20,
                  days_since_last_recall=0, tag_count=8, light_hits=9, days_since_light=0, rem_hits=9,
                  days_since_rem=0, raw_recalls=20)
    assert scoring.score(top, WEIGHTS, HL).total == 1.0  # min(1, 1 + 0.15)


def test_truth_confidence_and_theme_strength():
    assert scoring.truth_confidence(0.8, 4, 2, 3) == approx(0.750105)
    assert scoring.theme_strength(3, 8) == approx(0.75)
    assert scoring.theme_strength(5, 8) == 1.0
