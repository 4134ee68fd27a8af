"""`kit memory explain KEY|TEXT`: one candidate's signals, credit, components, gates and history."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kit import clock
from kit.core import WorkspaceCore
from kit.dreaming import store
from kit.dreaming.candidates import Candidate, build_candidates
from kit.dreaming.deep import Decision, may_update
from kit.dreaming.ranking import DeepSettings, Ranked, rank
from kit.dreaming.scoring import CREDITED, normalised_weights
from kit.dreaming.tags import jaccard, tokens
from kit.errors import NotFoundError
from kit.memory.recall import events as recall_events
from kit.memory.recall import normalise_claim
from kit.memory.recall import searches as recall_searches
from kit.memory.recall import top_scores as recall_tops
from kit.memory.recall import uses as recall_uses

_KEY = re.compile(r"^.+:\d+:\d+$")
_WHERE = re.compile(r"^(?P<path>.+):(?P<start>\d+)(?:-(?P<end>\d+))?$")  # as search prints it: path:7, path:7-9
MIN_TEXT_MATCH = 0.2


def _at(c: Candidate, key: str) -> bool:
    return c.key == key or any(f"{p}:{s}:{e}" == key for p, s, e in c.locations)


def find(cands: list[Candidate], target: str) -> tuple[Candidate, tuple[Candidate, ...]]:
    """A key (path:start:end it was recalled at, newest first; or path:7 and path:7-9, as search prints
    a hit) or the candidate whose text matches best; with the other candidates some text matched as
    well (a word like "standup" is in the old value and the new one: the caller says which it chose)."""
    target = target.strip()
    where = None if _KEY.match(target) else _WHERE.match(target)
    if where:
        target = f"{where['path']}:{where['start']}:{where['end'] or where['start']}"
    if _KEY.match(target):
        hits = [c for c in cands if _at(c, target)]
        if hits:
            return max(hits, key=lambda c: (c.key == target, c.last_ts)), ()
    want = normalise_claim(target)
    exact = [c for c in cands if normalise_claim(c.snippet) == want]
    if exact:
        return _chosen(exact, lambda c: c.last_ts)
    inside = [c for c in cands if want and want in normalise_claim(c.snippet)]
    if inside:  # the note line rather than a transcript quoting it
        return _chosen(inside, lambda c: (c.junk is None, c.recall_count, c.last_ts))
    mine = tokens(target)
    best = max(cands, key=lambda c: (jaccard(mine, tokens(c.snippet)), c.recall_count), default=None)
    if best is not None and jaccard(mine, tokens(best.snippet)) >= MIN_TEXT_MATCH:
        return best, ()
    raise NotFoundError(f"no recalled candidate matches {target!r}; `kit memory promote` lists the candidates")


def _chosen(matches: list[Candidate], key: Any) -> tuple[Candidate, tuple[Candidate, ...]]:
    best = max(matches, key=key)
    return best, tuple(sorted((c for c in matches if c is not best), key=key, reverse=True))


@dataclass(frozen=True)
class Explanation:
    """Why a candidate would or would not be promoted. `to_json()` is the `--json` shape."""

    cand: Candidate
    ranked: Ranked
    settings: DeepSettings
    status: str | None  # active | retired | superseded | demoted | rejected | to_verify | None
    history: tuple[dict[str, Any], ...]
    other_claims_at_key: tuple[str, ...]
    verify: store.VerifyItem | None = None
    # what tonight's Deep does with it, when Deep decides for it (it passed every gate, or may update
    # a value MEMORY.md holds): promoted, stale, duplicate, superseded, to_verify …
    tonight: Decision | None = None
    # the other candidates the text given matched too, best first (a key names one exactly)
    also: tuple[Candidate, ...] = ()

    @property
    def passed(self) -> bool:
        return self.ranked.passed

    @property
    def blocked_by(self) -> list[str]:
        return self.ranked.blocked_by

    def gates(self) -> dict[str, dict[str, Any]]:
        c, r, s = self.cand, self.ranked, self.settings
        g = r.gates
        return {
            "not_junk": {"passed": g["not_junk"], "value": c.junk, "rule": c.junk_rule},
            "min_score": {"passed": g["min_score"], "value": round(r.score.total, 6), "threshold": s.min_score},
            "min_recall_count": {"passed": g["min_recall_count"], "value": round(c.credited, 6),
                                 "threshold": s.min_recall_count},
            "min_recall_days": {"passed": g["min_recall_days"], "value": len(c.credited_days),
                                "threshold": s.min_recall_days},
            "min_unique_queries": {"passed": g["min_unique_queries"], "value": len(c.credited_queries),
                                   "threshold": s.min_unique_queries},
            "max_age_days": {"passed": g["max_age_days"], "value": r.signals.days_since_last_recall,
                             "threshold": s.max_age_days},
            "not_promoted": {"passed": g["not_promoted"], "value": self.status},
            "not_demoted": {"passed": g["not_demoted"], "value": self.status},
        }

    def to_json(self) -> dict[str, Any]:
        c, sig = self.cand, self.ranked.signals
        return {
            "key": c.key,
            "claim": c.claim,
            "snippet": c.snippet,
            "status": self.status,
            "signals": {
                **{k: v for k, v in c.to_json().items()
                   if k not in ("key", "claim", "snippet", "junk", "junk_rule", "credited_recalls",
                                "credited_queries", "credited_days", "used")},
                "span_days": sig.span_days,
                "days_since_last_recall": sig.days_since_last_recall,
                "light_hits": sig.light_hits,
                "days_since_light": sig.days_since_light,
                "rem_hits": sig.rem_hits,
                "days_since_rem": sig.days_since_rem,
            },
            "recalls": {
                "raw": c.recall_count, "credited": round(c.credited, 6), "credit": round(c.credit, 6),
                "raw_days": c.recall_days, "credited_days": len(c.credited_days),
                "raw_queries": c.unique_queries, "credited_queries": len(c.credited_queries), "used": c.used,
                "counts_from": CREDITED,  # the credit a hit needs for its day and its query to count
            },
            "weights": {k: round(v, 6) for k, v in normalised_weights(self.settings.weights).items()},
            **self.ranked.score.to_json(),
            "gates": self.gates(),
            "passed": self.passed,
            "blocked_by": self.blocked_by,
            "history": [dict(h) for h in self.history],
            "other_claims_at_key": list(self.other_claims_at_key),
            "verify": self.verify.to_json() if self.verify else None,
            "tonight": None if self.tonight is None else {"action": self.tonight.action, "detail": self.tonight.detail},
            "also_matched": [{"key": o.key, "snippet": o.snippet} for o in self.also],
        }


def explain(ws: WorkspaceCore, target: str) -> Explanation:
    state = ws.kit_dir / "state.db"
    if not state.exists():
        raise NotFoundError("nothing has been recalled yet (no .kit/state.db)")
    db = ws.open_state()
    try:
        evs = recall_events(db)
        cands = build_candidates(evs, recall_uses(db), recall_tops(db), recall_searches(db))
        cand, also = find(cands, target)
        have = db.execute("SELECT 1 FROM sqlite_master WHERE name='dream_phase_hits'").fetchone() is not None
        light = store.phase_stats(db, "light") if have else {}
        rem = store.phase_stats(db, "rem") if have else {}
        promos = store.promotions(db)
        queue = store.verify_items(db)
    finally:
        db.close()
    today = clock.today()
    settings = DeepSettings.from_config(ws.config)
    ranked = rank([cand], today=today, settings=settings, light=light, rem=rem, promotions=promos)[0]
    demoted_texts = [p.snippet for p in promos if p.status in store.DEMOTED]
    if ranked.passed and demoted_texts:  # as Deep does: a paraphrase of an entry you removed is blocked too
        from kit.dreaming.deep import block_demoted_twins
        from kit.memory.embeddings import EmbeddingError
        from kit.memory.service import memory_for

        embedder = memory_for(ws).embedder
        try:
            ranked = block_demoted_twins([ranked], demoted_texts, embedder)[0]
        except EmbeddingError:  # a model that cannot load: lexical similarity, like the dream
            ranked = block_demoted_twins([ranked], demoted_texts, None)[0]
    c = cand
    wordings = c.claims | {c.claim}
    status = next((p.status for p in promos if p.claim in wordings), None)
    verify = next((v for v in reversed(queue) if v.claim in wordings), None)
    if status is None and verify is not None:
        status = {"pending": "to_verify", "rejected": "rejected", "accepted": "active"}.get(verify.status)  # kept_both: a candidate
    credit = {eid: (cr, used, quoted) for eid, cr, used, quoted in c.event_credit}
    history = tuple(
        {"day": e.day, "query": e.query, "score": round(e.score, 6), "source": e.source,
         "lines": f"{e.start_line}-{e.end_line}", "rank": e.rank, "credit": round(credit[e.id][0], 6),
         "used": credit[e.id][1], "quoted_by": e.key if credit[e.id][2] else None}
        for e in evs if e.id in credit
    )
    others = tuple(o.claim for o in cands if o.claim != c.claim and _at(o, c.key))
    tonight = _tonight(ws, c.claim) if status is None and (ranked.passed or may_update(ranked)) else None
    return Explanation(c, ranked, settings, status, history, others, verify, tonight, also)


def _tonight(ws: WorkspaceCore, claim: str) -> Decision | None:
    """Deep's decision for `claim` tonight: a dry run of Deep alone (nothing is written). The gates
    are not all it weighs — a newer value in the notes, a MEMORY.md entry saying the same, the
    day's limit — so a candidate that passed them may still be left out, and this says why."""
    from kit.dreaming.runner import run_dream

    result = run_dream(ws, phases=("deep",), dry_run=True)
    return next((d for d in result.decisions if d.ranked.cand.claim == claim), None)
