"""`kit memory explain KEY|TEXT`: one candidate's signals, components, gates and recall history."""

from __future__ import annotations

import re
from typing import Any

from kit import clock
from kit.core import WorkspaceCore
from kit.dreaming import store
from kit.dreaming.candidates import Candidate, build_candidates
from kit.dreaming.ranking import DeepSettings, rank
from kit.dreaming.scoring import normalised_weights
from kit.dreaming.tags import jaccard, tokens
from kit.errors import NotFoundError
from kit.memory.recall import events as recall_events
from kit.memory.recall import normalise_claim

_KEY = re.compile(r"^.+:\d+:\d+$")
MIN_TEXT_MATCH = 0.2


def _has(db, table: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is not None


def find(cands: list[Candidate], target: str) -> Candidate:
    """A key (path:start:end, newest claim first) or the candidate whose text matches best."""
    target = target.strip()
    if _KEY.match(target):
        hits = [c for c in cands if c.key == target]
        if hits:
            return max(hits, key=lambda c: c.last_ts)
    want = normalise_claim(target)
    exact = [c for c in cands if normalise_claim(c.snippet) == want]
    if exact:
        return max(exact, key=lambda c: c.last_ts)
    inside = [c for c in cands if want and want in normalise_claim(c.snippet)]
    if inside:
        return max(inside, key=lambda c: (c.recall_count, c.last_ts))
    mine = tokens(target)
    best = max(cands, key=lambda c: (jaccard(mine, tokens(c.snippet)), c.recall_count), default=None)
    if best is not None and jaccard(mine, tokens(best.snippet)) >= MIN_TEXT_MATCH:
        return best
    raise NotFoundError(f"no recalled candidate matches {target!r}; `kit memory promote` lists the candidates")


def explain(ws: WorkspaceCore, target: str) -> dict[str, Any]:
    state = ws.kit_dir / "state.db"
    if not state.exists():
        raise NotFoundError("nothing has been recalled yet (no .kit/state.db)")
    db = ws.open_state()
    try:
        evs = recall_events(db) if _has(db, "recall_events") else []
        cands = build_candidates(evs)
        cand = find(cands, target)
        have = _has(db, "dream_phase_hits")
        light = store.phase_stats(db, "light") if have else {}
        rem = store.phase_stats(db, "rem") if have else {}
        promos = store.promotions(db) if _has(db, "dream_promotions") else []
    finally:
        db.close()
    today = clock.today()
    settings = DeepSettings.from_config(ws.config)
    ranked = next(r for r in rank([cand], today=today, settings=settings, light=light, rem=rem, promotions=promos))
    demoted_texts = [p.snippet for p in promos if p.status == "demoted"]
    if ranked.passed and demoted_texts:  # as Deep does: a paraphrase of an entry you removed is blocked too
        from kit.dreaming.deep import block_demoted_twins
        from kit.memory.embeddings import EmbeddingError
        from kit.memory.service import memory_for

        embedder = memory_for(ws).embedder
        try:
            ranked = block_demoted_twins([ranked], demoted_texts, embedder)[0]
        except EmbeddingError:  # a model that cannot load: lexical similarity, like the dream
            ranked = block_demoted_twins([ranked], demoted_texts, None)[0]
    sig, c = ranked.signals, cand
    status = next((p.status for p in promos if p.key == c.key and p.claim == c.claim), None)
    if status is None and any(p.status == "demoted" and (p.key == c.key or p.claim == c.claim) for p in promos):
        status = "demoted"
    gates = {
        "not_junk": {"passed": ranked.gates["not_junk"], "value": c.junk},
        "min_score": {"passed": ranked.gates["min_score"], "value": round(ranked.score.total, 6),
                      "threshold": settings.min_score},
        "min_recall_count": {"passed": ranked.gates["min_recall_count"], "value": c.recall_count,
                             "threshold": settings.min_recall_count},
        "min_unique_queries": {"passed": ranked.gates["min_unique_queries"],
                               "value": max(c.unique_queries, c.recall_days), "threshold": settings.min_unique_queries},
        "max_age_days": {"passed": ranked.gates["max_age_days"], "value": sig.days_since_last_recall,
                         "threshold": settings.max_age_days},
        "not_promoted": {"passed": ranked.gates["not_promoted"], "value": status},
        "not_demoted": {"passed": ranked.gates["not_demoted"], "value": status},
    }
    history = [
        {"day": e.day, "query": e.query, "score": round(e.score, 6), "source": e.source,
         "lines": f"{e.start_line}-{e.end_line}"}
        for e in evs if e.key == c.key and e.claim_hash == c.claim
    ]
    others = [o.claim for o in cands if o.key == c.key and o.claim != c.claim]
    return {
        "key": c.key,
        "claim": c.claim,
        "snippet": c.snippet,
        "status": status,
        "signals": {
            **{k: v for k, v in c.to_json().items() if k not in ("key", "claim", "snippet", "junk")},
            "span_days": sig.span_days,
            "days_since_last_recall": sig.days_since_last_recall,
            "light_hits": sig.light_hits,
            "days_since_light": sig.days_since_light,
            "rem_hits": sig.rem_hits,
            "days_since_rem": sig.days_since_rem,
        },
        "weights": {k: round(v, 6) for k, v in normalised_weights(settings.weights).items()},
        **ranked.score.to_json(),
        "gates": gates,
        "passed": ranked.passed,
        "blocked_by": ranked.blocked_by,
        "history": history,
        "other_claims_at_key": others,
    }
