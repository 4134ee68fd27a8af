"""Kit's search as it was before issue 13 (engine/kit/memory/search.py at fe21717), kept verbatim so the
benchmark can show before and after in one run. Not used by Kit itself.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from kit.memory.chunker import _CJK, has_cjk
from kit.memory.daily import note_date
from kit.memory.index import ChunkRow, MemoryIndex
from kit.provenance import strip_kit_comments

LIKE_RANK = -1.0  # a substring hit the trigram index cannot rank (1–2 CJK chars) maps to text score 0.5
_WORD = re.compile(r"[^\W_]+")
NEAR_DUPLICATE = 0.9  # token Jaccard at which MMR drops another piece of a picked result's lines


@dataclass(frozen=True)
class SearchSettings:
    max_results: int = 6
    min_score: float = 0.35
    min_vector_score: float = 0.35
    vector_weight: float = 0.7
    text_weight: float = 0.3
    candidate_multiplier: int = 4
    half_life_days: float = 30.0
    mmr_lambda: float = 0.7
    snippet_chars: int = 700

    @classmethod
    def from_config(cls, config: Any) -> SearchSettings:
        section = config.get("memory.search", {}) if hasattr(config, "get") else {}
        known = {k: section[k] for k in cls.__dataclass_fields__ if k in section}
        return cls(**known)


@dataclass(frozen=True)
class SearchHit:
    path: str
    start_line: int
    end_line: int
    score: float  # combined, after temporal decay
    vector_score: float | None  # cosine similarity (None in fts-only mode)
    text_score: float | None  # |r|/(1+|r|) of the BM25 rank; 0 when the text side did not find it
    snippet: str
    heading: str = ""

    @property
    def key(self) -> str:
        return f"{self.path}:{self.start_line}:{self.end_line}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 4),
            "vector_score": None if self.vector_score is None else round(self.vector_score, 4),
            "text_score": None if self.text_score is None else round(self.text_score, 4),
            "snippet": self.snippet,
        }


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str  # hybrid | fts-only | vector-only
    results: tuple[SearchHit, ...]
    recorded: int = 0  # recall events written for this search

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "results": [r.to_json() for r in self.results]}


# --------------------------------------------------------------------------- formulas


def bm25_to_score(rank: float) -> float:
    """SQLite's bm25() is negative-better: s = |r| / (1 + |r|)."""
    r = abs(rank)
    return r / (1.0 + r)


def normalised_weights(vector_weight: float, text_weight: float) -> tuple[float, float]:
    total = vector_weight + text_weight
    if total <= 0:
        return 0.5, 0.5
    return vector_weight / total, text_weight / total


def combine(vector_score: float, text_score: float, vector_weight: float, text_weight: float) -> float:
    vw, tw = normalised_weights(vector_weight, text_weight)
    return vw * vector_score + tw * text_score


def age_days(path: str, today: date) -> int | None:
    """Days since a dated note's date; None for evergreen files (MEMORY.md, undated files)."""
    day = note_date(path)
    if day is None:
        return None
    return max(0, (today - day).days)


def decay(score: float, age: int | None, half_life_days: float) -> float:
    """score × exp(−ln2/half_life × age); evergreen (age None) and half_life 0 do not decay."""
    if age is None or half_life_days <= 0:
        return score
    return score * math.exp(-math.log(2) / half_life_days * age)


def tokens(text: str) -> frozenset[str]:
    """Lower-cased word tokens; CJK runs become their characters' bigrams."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).lower())
    if not has_cjk(text):
        return frozenset(words)
    out: set[str] = set()
    for word in words:
        if has_cjk(word):
            for run in _split_script(word):
                if has_cjk(run):
                    out.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
                else:
                    out.add(run)
        else:
            out.add(word)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def mmr(
    scores: Sequence[float],
    token_sets: Sequence[frozenset[str]],
    lam: float,
    limit: int,
    groups: Sequence[object] | None = None,
) -> list[int]:
    """Maximal marginal relevance: indexes in selection order, λ·score − (1−λ)·max Jaccard to picked.

    With `groups` (each result's path:start:end) and λ < 1, a result whose Jaccard to a picked one
    of the same group is at least NEAR_DUPLICATE is dropped, not just ranked lower: the pieces of a
    long repetitive line show once. Equal notes in different files are still all kept.
    """
    remaining = list(range(len(scores)))
    penalty = [0.0] * len(scores)  # max similarity to anything picked so far, updated per pick
    picked: list[int] = []
    while remaining and len(picked) < limit:
        best = max(remaining, key=lambda i: (lam * scores[i] - (1 - lam) * penalty[i], -i))
        picked.append(best)
        remaining.remove(best)
        keep = []
        for i in remaining:
            similarity = jaccard(token_sets[i], token_sets[best])
            penalty[i] = max(penalty[i], similarity)
            if not (groups is not None and lam < 1 and groups[i] == groups[best] and similarity >= NEAR_DUPLICATE):
                keep.append(i)
        remaining = keep
    return picked


def _words(text: str) -> str:
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def has_phrase(text: str, query: str) -> bool:
    """True when `text` holds the query's words (two or more) in a row: an exact match."""
    phrase = _words(query)
    return " " in phrase and f" {phrase} " in f" {_words(text)} "


def _split_script(word: str) -> list[str]:
    """Split a token into CJK and non-CJK runs."""
    runs: list[str] = []
    for char in word:
        cjk = bool(_CJK.match(char))
        if runs and bool(_CJK.match(runs[-1][-1])) == cjk:
            runs[-1] += char
        else:
            runs.append(char)
    return runs


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def query_terms(query: str) -> tuple[list[str], list[str]]:
    """(non-CJK word terms, CJK runs) of a query, in order, without duplicates."""
    words: list[str] = []
    cjk: list[str] = []
    for token in _WORD.findall(unicodedata.normalize("NFKC", query).lower()):
        for run in _split_script(token):
            target = cjk if has_cjk(run) else words
            if run not in target:
                target.append(run)
    return words, cjk


def text_candidates(index: MemoryIndex, query: str, limit: int) -> dict[int, float]:
    """Chunk id → BM25 rank. AND of the terms first, OR when AND finds nothing; CJK via trigrams."""
    words, cjk = query_terms(query)
    if not words and not cjk:
        return {}
    if not cjk:
        for op in (" AND ", " OR "):
            hits = index.text_search(op.join(map(_quote, words)), limit)
            if hits:
                return dict(hits)
        # substrings ("deploy" in "redeployed", "v2" in "api/v2"): trigram index, terms of 3+ chars
        long_words = [w for w in words if len(w) >= 3]
        if long_words:
            return dict(index.text_search(" OR ".join(map(_quote, long_words)), limit, trigram=True))
        return {}
    grams: list[str] = []
    for run in cjk:
        grams.extend(run[i : i + 3] for i in range(len(run) - 2))
    grams.extend(w for w in words if len(w) >= 3)
    grams = list(dict.fromkeys(grams))
    if grams:
        for op in (" AND ", " OR "):
            hits = index.text_search(op.join(map(_quote, grams)), limit, trigram=True)
            if hits:
                return dict(hits)
    short = [run for run in cjk if len(run) < 3]
    found: dict[int, float] = {}
    for run in short:  # too short for trigrams: a plain substring scan, ranked flat
        for chunk_id in index.substring_search(run, limit):
            found.setdefault(chunk_id, LIKE_RANK)
    return found


# --------------------------------------------------------------------------- the search


def hybrid_search(
    index: MemoryIndex,
    query: str,
    settings: SearchSettings,
    *,
    today: date,
    limit: int | None = None,
    vectors: tuple[np.ndarray, np.ndarray] | None = None,
    encode_query: Callable[[str], np.ndarray] | None = None,
) -> SearchResult:
    """Run §7's hybrid search. `vectors` is (chunk ids, matrix) and `encode_query` embeds the query;
    without them the search is fts-only; without FTS5 it is vector-only."""
    query = query.strip()
    limit = max(1, int(limit or settings.max_results))
    n_candidates = limit * settings.candidate_multiplier
    use_vectors = vectors is not None and encode_query is not None
    mode = "hybrid" if use_vectors and index.fts5 else ("fts-only" if not use_vectors else "vector-only")
    if not query:
        return SearchResult(query, mode, ())

    sims: dict[int, float] = {}
    if use_vectors:
        ids, matrix = vectors  # type: ignore[misc]
        if len(ids):
            q = np.asarray(encode_query(query), dtype=np.float32).reshape(-1)
            cos = matrix @ q
            take = min(n_candidates, len(ids))
            top = np.argpartition(-cos, take - 1)[:take] if take < len(ids) else np.arange(len(ids))
            sims = {int(ids[i]): float(cos[i]) for i in top}
            text_ids = text_candidates(index, query, n_candidates)
            missing = [i for i in text_ids if i not in sims]
            for chunk_id in missing:  # text-side candidates get their cosine too (ids are sorted)
                row = int(np.searchsorted(ids, chunk_id))
                if row < len(ids) and int(ids[row]) == chunk_id:
                    sims[chunk_id] = float(cos[row])
        else:
            text_ids = text_candidates(index, query, n_candidates)
    else:
        text_ids = text_candidates(index, query, n_candidates)

    candidate_ids = set(sims) | set(text_ids)
    if not candidate_ids:
        return SearchResult(query, mode, ())
    rows: dict[int, ChunkRow] = index.chunk_rows(candidate_ids)
    vw, tw = normalised_weights(settings.vector_weight, settings.text_weight) if use_vectors else (0.0, 1.0)
    # A keyword hit needs min(min_score, text_weight) next to a vector side. Without one (fts-only)
    # min_score would drop real matches (BM25 gives a word in 3 of 40 chunks |r| ≈ 0.3, a text score
    # of 0.25): there every text match (AND, OR or substring) is kept, ranked by its text score.
    # A chunk holding the query's words as a phrase is an exact match and is kept too, even when
    # its meaning is far from the query ("Long line fact" opening a note about backups: cosine 0).
    keyword_floor = min(settings.min_score, tw)

    scored: list[tuple[float, ChunkRow, float | None, float, bool]] = []
    for chunk_id in candidate_ids:
        row = rows.get(chunk_id)
        if row is None:
            continue
        v = max(0.0, min(1.0, sims.get(chunk_id, 0.0))) if use_vectors else None
        is_text_hit = chunk_id in text_ids
        t = bm25_to_score(text_ids[chunk_id]) if is_text_hit else 0.0
        base = combine(v or 0.0, t, vw, tw)
        score = decay(base, age_days(row.path, today), settings.half_life_days)
        keep = (
            score >= settings.min_score
            or (v is not None and v >= settings.min_vector_score)
            or (is_text_hit and (score >= keyword_floor or not use_vectors or has_phrase(row.text, query)))
        )
        if keep:
            scored.append((score, row, v, t, is_text_hit))
    scored.sort(key=lambda s: (-s[0], s[1].path, s[1].start_line, s[1].id))
    order = mmr([s[0] for s in scored], [tokens(s[1].text) for s in scored], settings.mmr_lambda, limit,
                groups=[(s[1].path, s[1].start_line, s[1].end_line) for s in scored])
    hits = tuple(
        SearchHit(
            path=row.path,
            start_line=row.start_line,
            end_line=row.end_line,
            score=score,
            vector_score=v,
            text_score=t,
            snippet=strip_kit_comments(row.text).strip("\n")[: settings.snippet_chars],
            heading=row.heading,
        )
        for score, row, v, t, _ in (scored[i] for i in order)
    )
    return SearchResult(query, mode, hits)
