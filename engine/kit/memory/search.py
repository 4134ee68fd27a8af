"""Hybrid search (spec §7, issue 13) in plain stages, each a small function whose formula is the one
docs/memory.md gives:

    read the query's time words → gather candidates (cosine, BM25, and both inside a named period)
    → relevance = vw·cosine + tw·text → keep the relevant ones → score = relevance × recency prior
    × period factor → normalise to the best → threshold → MMR → snippets (date, times, context)

Relevance ranks; recency only breaks near-ties (or lifts recent notes for "latest"/"now" queries),
so a strong match is never pushed below a weak one by age alone. MMR and the threshold work on
scores normalised to the query's best candidate, so the result set does not depend on the scale of
the scores and a larger limit keeps every result of a smaller one.
"""

from __future__ import annotations

import calendar
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from kit.memory.changes import states_change
from kit.memory.chunker import _CJK, has_cjk
from kit.memory.dates import WEEKDAYS, Period, QueryTime, find_times, query_time
from kit.memory.index import ChunkRow, MemoryIndex
from kit.provenance import strip_kit_comments
from kit.settings import SearchSettings, weight_shares  # the memory.search section (re-exported)

LIKE_RANK = -1.0  # a substring hit the trigram index cannot rank (1–2 CJK chars) maps to text score 0.5
_WORD = re.compile(r"[^\W_]+")
NEAR_DUPLICATE = 0.9  # token Jaccard at which MMR drops another piece of a picked result's lines
BRIDGE_SHARE, BRIDGE_FLOOR = 0.05, 20  # the second hop follows names at most this share of chunks hold (or 20)
TEXT_DEPTH = 10  # text hits read per candidate slot: beyond that a chunk's BM25 share is ~0 anyway
EVERGREEN = ("MEMORY.md",)  # never older than anything: curated long-term memory
# words that say nothing about what is searched for; dropped from the keyword side of a question
STOP_WORDS = frozenset("""a an the and or but of to in on at for with by from into about as is are was were be
been am i me my we us our you your he him his she her it its they them their this that these those what which who
whom whose when where why how do does did have has had can could will would should shall may might must not no so
than then there here s t d ll re ve m just also any some""".split())


@dataclass(frozen=True)
class Context:
    """A neighbouring chunk shown with a hit (same section, adjacent lines); not part of the hit."""

    start_line: int
    end_line: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"start_line": self.start_line, "end_line": self.end_line, "text": self.text}


@dataclass(frozen=True)
class TimeRef:
    """A time a hit's text names, resolved against the hit's own date ("yesterday" → that day − 1)."""

    text: str
    start: str
    end: str

    def to_json(self) -> dict[str, str]:
        return {"text": self.text, "start": self.start, "end": self.end}


@dataclass(frozen=True)
class SearchHit:
    path: str
    start_line: int
    end_line: int
    score: float  # relevance × recency prior × period factor
    vector_score: float | None  # cosine similarity (None in fts-only mode)
    text_score: float | None  # max(|r|/(1+|r|) of the BM25 rank, keyword cover); 0 when the text side did not find it
    snippet: str
    heading: str = ""
    relevance: float = 0.0  # vw·vector + tw·text, before recency and period
    relative: float = 1.0  # score / the best score of this query (1.0 for the top hit)
    rank: int = 1  # 1-based position in the results
    date: str | None = None  # ISO day the chunk is about (file name, heading or a date in the line)
    times: tuple[TimeRef, ...] = ()
    context: tuple[Context, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.path}:{self.start_line}:{self.end_line}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "rank": self.rank,
            "score": round(self.score, 4),
            "relative": round(self.relative, 4),
            "relevance": round(self.relevance, 4),
            "vector_score": None if self.vector_score is None else round(self.vector_score, 4),
            "text_score": None if self.text_score is None else round(self.text_score, 4),
            "date": self.date,
            "times": [t.to_json() for t in self.times],
            "snippet": self.snippet,
            "context": [c.to_json() for c in self.context],
        }


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str  # hybrid | fts-only | vector-only
    results: tuple[SearchHit, ...]
    recorded: int = 0  # recall events written for this search
    period: Period | None = None  # the time the query names, resolved (None: none)
    recent: bool = False  # the query asks for the latest
    withheld: tuple[Any, ...] = ()  # hits kept out of a prompt (kit.memory.sources.Withheld)

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def to_json(self) -> dict[str, Any]:
        out = {"query": self.query, "mode": self.mode,
               "period": None if self.period is None else self.period.to_json(),
               "recent": self.recent, "results": [r.to_json() for r in self.results]}
        if self.withheld:
            out["withheld"] = [w.to_json() for w in self.withheld]
        return out


# --------------------------------------------------------------------------- formulas


def bm25_to_score(rank: float) -> float:
    """SQLite's bm25() is negative-better: s = |r| / (1 + |r|)."""
    r = abs(rank)
    return r / (1.0 + r)


def normalised_weights(vector_weight: float, text_weight: float) -> tuple[float, float]:
    shares = weight_shares([vector_weight, text_weight])
    return (0.5, 0.5) if shares is None else (shares[0], shares[1])


def combine(vector_score: float, text_score: float, vector_weight: float, text_weight: float) -> float:
    """relevance = vw·vector_score + tw·text_score, the weights normalised to sum to 1."""
    vw, tw = normalised_weights(vector_weight, text_weight)
    return vw * vector_score + tw * text_score


def recency(age_days: float | None, half_life_days: float) -> float:
    """p = 2^(−age / half_life) in [0, 1]; 1 for evergreen text (age None) and for half_life 0."""
    if age_days is None or half_life_days <= 0:
        return 1.0
    return math.exp(-math.log(2) / half_life_days * max(0.0, age_days))


def recency_prior(age_days: float | None, half_life_days: float, weight: float) -> float:
    """The factor on a relevance: 1 − w + w·p. Never below 1 − w, so recency moves a result past
    another only when their relevances are within that share of each other."""
    w = max(0.0, min(1.0, weight))
    return 1.0 - w + w * recency(age_days, half_life_days)


def period_factor(day: date | None, period: Period | None, outside: float) -> float:
    """1 inside the period the query names (or when it names none), `outside` elsewhere."""
    if period is None or (day is not None and day in period):
        return 1.0
    return outside


def normalise(scores: Sequence[float]) -> list[float]:
    """Each score as a share of the best (the best is 1.0; all 0 stay 0)."""
    best = max(scores, default=0.0)
    return [s / best if best > 0 else 0.0 for s in scores]


def tokens(text: str) -> frozenset[str]:
    """Lower-cased word tokens; CJK runs become their characters' bigrams."""
    if text.isascii():  # NFKC leaves ASCII as it is, and it holds no CJK: most notes, in a third of the time
        return frozenset(_WORD.findall(text.lower()))
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
    both = len(a & b)  # |a ∪ b| = |a| + |b| − |a ∩ b|, without building the union (MMR asks ~300 pairs a search)
    return both / (len(a) + len(b) - both)


def mmr(
    scores: Sequence[float],
    token_sets: Sequence[frozenset[str]],
    lam: float,
    limit: int,
    groups: Sequence[object] | None = None,
) -> list[int]:
    """Maximal marginal relevance: indexes in selection order, λ·score − (1−λ)·max Jaccard to picked.

    Give it normalised scores (the best is 1): on raw scores that are all small, the penalty
    outweighs relevance and MMR picks the least similar, not the most relevant. The pick order does
    not depend on `limit`, so a larger limit only adds results at the end.

    With `groups` (each result's path:start:end) and λ < 1, a result whose Jaccard to a picked one
    of the same group is at least NEAR_DUPLICATE is dropped, not just ranked lower: the pieces of a
    long repetitive line show once. Equal notes in different files are still all kept.
    """
    # Lazily: a candidate's value λ·score − (1−λ)·penalty is at most λ·score, so each round looks at
    # candidates in order of score only until that bound falls below the best value found, and
    # brings a candidate's penalty up to date (its similarity to each pick since it was last looked
    # at) only then. The picks, their order and the near-duplicate drops are those of the plain
    # loop over every candidate; a search looks at a few dozen of ~150 instead of all each round.
    # (The loop is written out, not called: it runs a few hundred times a search.)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    penalty = [0.0] * len(scores)
    seen = [0] * len(scores)  # how many of the picks each candidate's penalty accounts for
    out = [False] * len(scores)  # picked or dropped
    sets: list[frozenset[str] | None] = [None] * len(scores)  # token_sets[i], read once
    drops = groups is not None and lam < 1
    picked: list[int] = []
    while len(picked) < limit:
        best, best_value = -1, -math.inf
        for i in order:
            if lam * scores[i] < best_value:  # (at equal bounds a lower index may still win the tie)
                break
            if out[i]:
                continue
            if seen[i] < len(picked):
                mine = sets[i]
                if mine is None:
                    mine = sets[i] = token_sets[i]
                worst = penalty[i]
                for p in picked[seen[i]:]:
                    theirs = sets[p]  # a pick was looked at, so its set is read
                    if not mine and not theirs:
                        similarity = 1.0
                    else:
                        both = len(mine & theirs)  # type: ignore[operator]
                        similarity = both / (len(mine) + len(theirs) - both)  # type: ignore[arg-type]
                    if similarity > worst:
                        worst = similarity
                    if drops and similarity >= NEAR_DUPLICATE and groups[i] == groups[p]:  # type: ignore[index]
                        out[i] = True
                        break
                penalty[i] = worst
                seen[i] = len(picked)
                if out[i]:
                    continue
            value = lam * scores[i] - (1 - lam) * penalty[i]
            if value > best_value or (value == best_value and i < best):
                best, best_value = i, value
        if best < 0:
            break
        if sets[best] is None:
            sets[best] = token_sets[best]
        out[best] = True
        picked.append(best)
    return picked


class _Lazy(Sequence):
    """f(item) for each item, computed when first asked for (MMR reads only the candidates it needs)."""

    def __init__(self, items: Sequence[Any], f: Callable[[Any], Any]) -> None:
        self._items, self._f, self._done = items, f, {}

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i):  # type: ignore[override]
        if i not in self._done:
            self._done[i] = self._f(self._items[i])
        return self._done[i]


def _words(text: str) -> str:
    return " ".join(_WORD.findall((text if text.isascii() else unicodedata.normalize("NFKC", text)).lower()))


def has_phrase(text: str, query: str) -> bool:
    """True when `text` holds the query's words (two or more) in a row: an exact match."""
    phrase = _words(query)
    return " " in phrase and f" {phrase} " in f" {_words(text)} "


WORD_COVER = 0.8  # share of a question's content words a chunk must hold to count as a keyword match


def holds_query_words(text: str, query: str) -> bool:
    """True when `text` holds at least WORD_COVER of the query's content words, two or more (all of
    two to four words, all but one of five to nine): a keyword match however long the text around
    it, where a long chunk's cosine and BM25 are diluted (a retired fact among an archive's lines)."""
    words, _ = query_terms(query)
    if len(words) < 2:
        return False
    held = set(_words(text).split())
    return sum(w in held for w in words) >= math.ceil(WORD_COVER * len(words))


def _split_script(word: str) -> list[str]:
    """Split a token into CJK and non-CJK runs."""
    if word.isascii():
        return [word] if word else []
    runs: list[str] = []
    is_cjk = _CJK.compiled.match
    for char in word:
        cjk = bool(is_cjk(char))
        if runs and bool(is_cjk(runs[-1][-1])) == cjk:
            runs[-1] += char
        else:
            runs.append(char)
    return runs


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def query_terms(query: str) -> tuple[list[str], list[str]]:
    """(non-CJK word terms, CJK runs) of a query, in order, without duplicates; stop words are
    dropped from a question that has other words ("which gym am I in" → gym)."""
    words, cjk = _query_terms(query)
    return list(words), list(cjk)


@lru_cache(maxsize=64)  # the keep rules ask it of one query for every weak keyword hit
def _query_terms(query: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    words: list[str] = []
    cjk: list[str] = []
    for token in _WORD.findall(unicodedata.normalize("NFKC", query).lower()):
        for run in _split_script(token):
            target = cjk if has_cjk(run) else words
            if run not in target:
                target.append(run)
    content = [w for w in words if w not in STOP_WORDS]
    return tuple(content if content else words), tuple(cjk)


def idf(chunks: int, holding: int) -> float:
    """BM25's inverse document frequency as Lucene computes it: ln(1 + (N − n + 0.5) / (n + 0.5)).
    It never reaches 0, where FTS5's ln((N − n + 0.5) / (n + 0.5)) is clamped to ~0 for a word half
    the chunks hold: in a workspace of one or two notes, every word."""
    return math.log(1.0 + (chunks - holding + 0.5) / (holding + 0.5))


def keyword_cover(index: MemoryIndex, terms: Sequence[str], chunk_ids: Iterable[int], *,
                  trigram: bool = False, holding: Sequence[np.ndarray] | None = None) -> dict[int, float]:
    """Chunk id → the IDF-weighted share of `terms` it holds, Σ idf(held) / Σ idf(all), in [0, 1],
    for chunks an OR of the terms found: 1 for a chunk holding every word of the question however small the index.
    A word no chunk holds still weighs in the sum (a question about something never written is not
    fully met). `holding`: each term's chunk ids (ascending), when already known."""
    wanted = np.fromiter(chunk_ids, dtype=np.int64)
    return dict(zip(wanted.tolist(), _cover(index, terms, wanted, trigram, holding).tolist(), strict=True))


def _cover(index: MemoryIndex, terms: Sequence[str], wanted: np.ndarray, trigram: bool,
           holding: Sequence[np.ndarray] | None) -> np.ndarray:
    if len(terms) == 1:  # every chunk an OR of one term finds holds it: no need to look it up
        return np.ones(len(wanted))
    chunks = max(1, index.chunk_count())
    held = np.zeros(len(wanted))
    total = 0.0
    for i, term in enumerate(terms):
        ids = holding[i] if holding is not None else index.postings(_quote(term), trigram=trigram)
        weight = idf(chunks, len(ids))
        held += weight * _holds(ids, wanted)
        total += weight
    return held / total


def _find(ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, found) of each wanted id in ascending `ids`, by binary search: ids[rows[k]] ==
    wanted[k] where found[k] (rows are clamped into range for the others)."""
    if not len(ids):
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    rows = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    return rows, ids[rows] == wanted


def _holds(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """np.isin(wanted, ids) for ascending `ids` (isin sorts both, for every term)."""
    return _find(ids, wanted)[1]


BM25_K1, BM25_B = 1.2, 0.75  # FTS5's bm25() constants


def bm25_ranks(index: MemoryIndex, terms: Sequence[str], limit: int, *,
               trigram: bool = False) -> tuple[list[tuple[int, float]], list[np.ndarray]] | None:
    """What `index.text_search(" OR ".join(terms), limit)` returns, (chunk id, bm25 rank) best first
    (ties: lower id), computed with FTS5's bm25() formula from FTS5's own statistics — and each
    term's chunk ids. FTS5 ranks every row the OR matches before it cuts to `limit`; this ranks
    them in numpy:

        rank = −Σ_t idf(t) · f·(k1 + 1) / (f + k1·(1 − b + b·|D| / avgdl))
        idf(t) = ln((N − n + 0.5) / (n + 0.5)), 1e-6 when that is ≤ 0

    f: occurrences of t in the row, |D|: the row's tokens, N: rows, n: rows holding t. None when a
    term is not exactly one of the index's tokens (FTS5 would match it as a phrase) or the
    statistics disagree (a sync between two reads): the caller asks FTS5."""
    tokens_of = [index.fts_tokens(term, trigram=trigram) for term in terms]
    if any(len(t) != 1 for t in tokens_of):
        return None
    ids, lengths = index.row_lengths(trigram=trigram)
    n_rows = float(len(ids))
    avgdl = float(lengths.sum()) / n_rows if n_rows else 0.0
    score = np.zeros(len(ids))
    matched = np.zeros(len(ids), dtype=bool)
    holding = []
    for (token,) in tokens_of:
        docs, f = index.token_counts(token, trigram=trigram)
        holding.append(docs)
        if not len(docs):
            continue
        rows = np.searchsorted(ids, docs)
        if rows[-1] >= len(ids) or (ids[rows] != docs).any():
            return None
        n = float(len(docs))
        weight = math.log((n_rows - n + 0.5) / (n + 0.5))
        if weight <= 0.0:
            weight = 1e-6
        f = f.astype(np.float64)
        score[rows] += weight * ((f * (BM25_K1 + 1.0)) / (f + BM25_K1 * (1 - BM25_B + BM25_B * lengths[rows] / avgdl)))
        matched[rows] = True
    found = np.flatnonzero(matched)
    rank = -1.0 * score[found]
    order = np.argsort(rank, kind="stable")[:limit]  # ties: lower id first (`found` ascends)
    return list(zip(ids[found][order].tolist(), rank[order].tolist(), strict=True)), holding


def _scored(index: MemoryIndex, terms: list[str], limit: int, *, trigram: bool = False) -> dict[int, float]:
    """The chunks an OR of `terms` finds (bm25 order, `limit` of them) → text score, best first."""
    ranked = bm25_ranks(index, terms, limit, trigram=trigram)
    hits, holding = ranked if ranked is not None else (
        index.text_search(" OR ".join(map(_quote, terms)), limit, trigram=trigram), None)
    if not hits:
        return {}
    ids = np.fromiter((i for i, _ in hits), dtype=np.int64, count=len(hits))
    rank = np.abs(np.fromiter((r for _, r in hits), dtype=np.float64, count=len(hits)))
    # max(bm25_to_score(rank), min(1, cover)) for every hit at once
    scores = np.maximum(rank / (1.0 + rank), np.minimum(1.0, _cover(index, terms, ids, trigram, holding)))
    order = np.argsort(-scores, kind="stable")  # stable: bm25 order among equals
    return dict(zip(ids[order].tolist(), scores[order].tolist(), strict=True))


def symbol_query(query: str) -> str:
    """A query of no word that names something (emoji, arrows, currency: "☀️", "→", "€"), as the text
    to find; "" for ASCII punctuation alone ("-", "?", "|" are in every list and table)."""
    text = " ".join(query.split())
    return text if any(not ch.isascii() for ch in text) else ""


def text_candidates(index: MemoryIndex, query: str, limit: int) -> dict[int, float]:
    """Chunk id → text score, best first: the query's words joined with OR (a chunk holding all of
    them ranks above one holding some, since bm25() sums over the words it holds); CJK through the
    trigram table. The score is the larger of |r|/(1+|r|) of the BM25 rank r and the IDF-weighted
    share of the words the chunk holds (keyword_cover), so an exact word match still scores in an
    index of one note, where bm25() is ~0 for every word. When the words find nothing: their
    substrings (trigrams of words of 3+ chars), and for 1–2 CJK characters a plain substring scan,
    scored flat (0.5). A query of no word at all (emoji, symbols: "☀️", "→") is such a scan too."""
    words, cjk = query_terms(query)
    if not words and not cjk:
        symbols = symbol_query(query)
        return dict.fromkeys(index.substring_search(symbols, limit), bm25_to_score(LIKE_RANK)) if symbols else {}
    if not cjk:
        hits = _scored(index, words, limit)
        if hits:
            return hits
        # substrings ("deploy" in "redeployed", "v2" in "api/v2"): trigram index, terms of 3+ chars
        long_words = [w for w in words if len(w) >= 3]
        return _scored(index, long_words, limit, trigram=True) if long_words else {}
    grams: list[str] = []
    for run in cjk:
        grams.extend(run[i : i + 3] for i in range(len(run) - 2))
    grams.extend(w for w in words if len(w) >= 3)
    grams = list(dict.fromkeys(grams))
    if grams:
        hits = _scored(index, grams, limit, trigram=True)
        if hits:
            return hits
    short = [run for run in cjk if len(run) < 3]
    found: dict[int, float] = {}
    for run in short:  # too short for trigrams: a plain substring scan, scored flat
        for chunk_id in index.substring_search(run, limit):
            found.setdefault(chunk_id, bm25_to_score(LIKE_RANK))
    return found


# --------------------------------------------------------------------------- stages


@dataclass(frozen=True)
class Vectors:
    """The query's cosine to every embedded chunk (ids sorted ascending, as MemoryIndex.vectors)."""

    ids: np.ndarray
    cosine: np.ndarray
    matrix: np.ndarray | None = None

    def similarity(self, chunk_ids: Sequence[int]) -> np.ndarray | None:
        """Pairwise cosine of these chunks (None when one has no vector)."""
        if self.matrix is None or not len(chunk_ids):
            return None
        rows, has = _find(self.ids, np.asarray(chunk_ids, dtype=np.int64))
        if not has.all():
            return None
        m = self.matrix[rows]
        # Memory.search holds OpenBLAS to one thread (kit.memory.blas): on all of them, waking the
        # threads cost 50–150 ms a search on a busy machine; numpy's einsum, without BLAS, 3–15 ms
        return m @ m.T

    def of_many(self, chunk_ids: Sequence[int]) -> dict[int, float]:
        """Chunk id → cosine for those of `chunk_ids` that have a vector, in their order."""
        wanted = np.asarray(chunk_ids, dtype=np.int64)
        rows, has = _find(self.ids, wanted)
        return dict(zip(wanted[has].tolist(), self.cosine[rows[has]].tolist(), strict=True))

    def of(self, chunk_id: int) -> float | None:
        row = int(np.searchsorted(self.ids, chunk_id))
        if row < len(self.ids) and int(self.ids[row]) == chunk_id:
            return float(self.cosine[row])
        return None

    def top(self, k: int, rows: np.ndarray | None = None) -> dict[int, float]:
        """The k best (chunk id → cosine), over all chunks or the given matrix rows."""
        pool = np.arange(len(self.ids)) if rows is None else rows
        if not len(pool):
            return {}
        take = min(k, len(pool))
        part = self.cosine[pool]
        best = np.argpartition(-part, take - 1)[:take] if take < len(pool) else np.arange(len(pool))
        return {int(self.ids[pool[i]]): float(part[i]) for i in best}


@dataclass(frozen=True)
class Candidate:
    row: ChunkRow
    vector_score: float | None
    text_score: float
    text_hit: bool
    relevance: float

    @cached_property
    def day(self) -> date | None:
        return date.fromisoformat(self.row.day) if self.row.day else None


@dataclass(frozen=True)
class Ranked:
    candidate: Candidate
    score: float  # relevance × recency prior × period factor
    relative: float = 0.0  # score / best score


@dataclass(frozen=True)
class Plan:
    """What to search for: the query's words without its time words, the period it names (an
    anchor's event already dated), and whether it asks for the latest."""

    text: str
    period: Period | None
    recent: bool


def plan_query(query: str, when: QueryTime, anchor_day: date | None) -> Plan:
    period = when.period
    if when.anchor is not None and anchor_day is not None:
        period = when.anchor.around(anchor_day)
    # a query that is nothing but time words ("last week") still searches with all it has
    text = when.rest if _words(when.rest) else query
    return Plan(text, period, when.recent)


def gather(index: MemoryIndex, text: str, pool: int, vectors: Vectors | None,
           period: Period | None) -> tuple[dict[int, float], dict[int, float]]:
    """(chunk id → cosine, chunk id → text score) of the candidates: the top `pool` of each side,
    and of each side inside the period, so a dated note weakly worded still reaches the ranking.
    Every candidate gets both scores (a text score from the first TEXT_DEPTH × pool text hits)."""
    ranked = text_candidates(index, text, pool * TEXT_DEPTH)  # one query: best text score first
    in_period = set(index.ids_between(period.start.isoformat(), period.end.isoformat())) if period else set()
    chosen = list(ranked)[:pool] + [i for i in list(ranked)[pool:] if i in in_period][:pool]
    sims: dict[int, float] = {}
    if vectors is not None and len(vectors.ids):
        sims = vectors.top(pool)
        if in_period:
            wanted = np.asarray(sorted(in_period), dtype=np.int64)
            rows = np.searchsorted(vectors.ids, wanted)
            inside = rows < len(vectors.ids)
            rows, wanted = rows[inside], wanted[inside]
            sims.update(vectors.top(pool, rows[vectors.ids[rows] == wanted]))
        sims.update(vectors.of_many([i for i in chosen if i not in sims]))  # text-side candidates' cosine too
    ranks = {i: ranked[i] for i in chosen}
    ranks.update((i, ranked[i]) for i in sims if i in ranked)  # vector-side candidates their text score
    return sims, ranks


def score_candidates(rows: dict[int, ChunkRow], sims: dict[int, float], ranks: dict[int, float],
                     weights: tuple[float, float], use_vectors: bool) -> list[Candidate]:
    """relevance = vw·cosine (clamped to [0, 1]) + tw·text score for every gathered chunk."""
    vw, tw = weights
    out = []
    for chunk_id in sims.keys() | ranks.keys():
        row = rows.get(chunk_id)
        if row is None:
            continue
        v = max(0.0, min(1.0, sims.get(chunk_id, 0.0))) if use_vectors else None
        hit = chunk_id in ranks
        t = ranks[chunk_id] if hit else 0.0
        out.append(Candidate(row, v, t, hit, vw * (v or 0.0) + tw * t))
    return out


def best_of(found: Sequence[Candidate]) -> tuple[float, float]:
    """(best relevance, best cosine) of a query's candidates: what the relative keep rules measure by."""
    return (max((c.relevance for c in found), default=0.0),
            max((c.vector_score or 0.0 for c in found), default=0.0))


def is_relevant(c: Candidate, settings: SearchSettings, text_weight: float, use_vectors: bool, query: str,
                period: Period | None, best: tuple[float, float]) -> bool:
    """The keep rules, on relevance (recency never decides what is relevant) measured against the
    query's best candidate (`best`: its best relevance and best cosine, best_of), so what is kept
    does not depend on the scale of the scores: relevance ≥ min_score × the best relevance, or the
    query's best cosine (its best semantic match) — both only when that best cosine reaches
    min_vector_score; below it nothing here is semantically relevant at all and only keyword rules
    keep. Keyword rules: a keyword hit with relevance ≥ text_weight (what holding every word scores
    without any cosine), the query's words as a phrase, or 80 % of its content words
    (holds_query_words); without a vector side every keyword hit. Inside a period the query names,
    the date is evidence too: every candidate gathered there is kept."""
    if period is not None and c.day is not None and c.day in period:
        return True
    best_relevance, best_cosine = best
    if use_vectors and best_cosine >= settings.min_vector_score:
        if c.relevance >= settings.min_score * best_relevance:
            return True
        if c.vector_score is not None and c.vector_score >= best_cosine:
            return True
    if not c.text_hit:
        return False
    return (not use_vectors or c.relevance >= text_weight
            or has_phrase(c.row.text, query) or holds_query_words(c.row.text, query)
            or bool(symbol_query(query)) and not any(query_terms(query)))  # its text hit holds the symbols verbatim


def jaccard_matrix(sets: Sequence[frozenset[str]]) -> np.ndarray:
    """[i, j] = jaccard(sets[i], sets[j]) for every pair at once (1 for two empty sets)."""
    vocabulary: dict[str, int] = {}
    rows, cols = [], []
    for i, words in enumerate(sets):
        for word in words:
            rows.append(i)
            cols.append(vocabulary.setdefault(word, len(vocabulary)))
    held = np.zeros((len(sets), len(vocabulary)), dtype=np.float64)
    held[rows, cols] = 1.0
    both = held @ held.T
    size = held.sum(axis=1)
    union = size[:, None] + size[None, :] - both
    return np.divide(both, union, out=np.ones_like(both), where=union > 0)


def same_topic_pairs(kept: Sequence[Candidate], similarity: np.ndarray | None, same_topic: float) -> np.ndarray:
    """[i, j]: the two candidates are about one thing — cosine ≥ `same_topic`, or token Jaccard ≥
    same_topic / 2 (CJK as character bigrams) without vectors and for any pair where either text
    is CJK. The embedding model reads Chinese poorly: unrelated Chinese lines ("晚上早早睡了。",
    "钢琴课改到周日上午十点了。") score cosine 0.6–0.9 to each other, so their cosine says nothing
    about a topic; the words two lines share do. Pairs of Latin-script text keep the cosine."""
    n = len(kept)
    cjk = np.array([not c.row.text.isascii() and has_cjk(c.row.text) for c in kept], dtype=bool)
    if similarity is not None and not cjk.any():
        return similarity >= same_topic
    lexical = jaccard_matrix([tokens(c.row.text) for c in kept]).reshape(n, n) >= same_topic / 2
    if similarity is None:
        return lexical
    either = cjk[:, None] | cjk[None, :]
    return np.where(either, lexical, similarity >= same_topic)


def topic_ages(kept: Sequence[Candidate], similarity: np.ndarray | None, same_topic: float) -> list[float | None]:
    """For each candidate, the days until the newest later candidate on the same topic
    (same_topic_pairs): 0 when nothing later says more about it, None for evergreen and undated
    text. Only what supersedes a note ages it, so an old fact nobody restated keeps its whole score,
    and shifting every note by a year changes nothing. A later line on the topic that says the value
    changed ("the standup moved to 10:15", `changes.states_change`) supersedes it outright: its age
    is infinite, whatever the days between (three days made "is at 9:30" lose 0.7 % of its score)."""
    dated = [c.day is not None and c.row.path not in EVERGREEN for c in kept]
    day = np.array([c.day.toordinal() if ok else 0 for c, ok in zip(kept, dated, strict=True)],  # type: ignore[union-attr]
                   dtype=np.int64)
    close = same_topic_pairs(kept, similarity, same_topic)
    # [i, j]: j is a later word on i's topic (evergreen and undated text has day 0: never later)
    later = close & (day[None, :] > day[:, None])
    newest = np.where(later, day[None, :], day[:, None]).max(axis=1, initial=0)
    says_change = np.zeros(len(kept), dtype=bool)
    for j in np.flatnonzero(later.any(axis=0)):  # only a line that is later than another is asked
        says_change[j] = states_change(kept[j].row.text)
    overtaken = (later & says_change[None, :]).any(axis=1)
    return [None if not is_dated else math.inf if gone else float(n - d)
            for n, d, is_dated, gone in zip(newest, day, dated, overtaken, strict=True)]


def rank_candidates(kept: Sequence[Candidate], plan: Plan, settings: SearchSettings,
                    similarity: np.ndarray | None = None) -> list[Ranked]:
    """score = relevance × (1 − w + w·2^(−age/half_life)) × period factor, then normalised.

    Age is the days until a later note on the same topic (topic_ages): the older of two notes about
    one thing gives way to the newer, a lone old fact does not, however old. MEMORY.md and undated
    files are evergreen. A period with nothing relevant in it narrows nothing ("is today a deploy
    day?" still finds the rule)."""
    days = [c.day for c in kept if c.day is not None]
    period = plan.period if plan.period is not None and any(day in plan.period for day in days) else None
    weight = settings.recency_query_weight if plan.recent else settings.recency_weight
    ages = topic_ages(kept, similarity, settings.same_topic)
    scores = [c.relevance * recency_prior(age, settings.half_life_days, weight)
              * period_factor(c.day, period, settings.outside_period) for c, age in zip(kept, ages, strict=True)]
    ranked = [Ranked(c, s, n) for c, s, n in zip(kept, scores, normalise(scores), strict=True)]
    if period is not None and settings.outside_period <= 0:  # outside_period 0: the period is a filter
        ranked = [r for r in ranked if r.candidate.day is not None and r.candidate.day in period]
    return ranked


def select(ranked: Sequence[Ranked], settings: SearchSettings, limit: int) -> list[Ranked]:
    """Threshold on the normalised score, then MMR on it (ties: path, line)."""
    pool = sorted((r for r in ranked if r.relative >= settings.min_relative),
                  key=lambda r: (-r.score, r.candidate.row.path, r.candidate.row.start_line, r.candidate.row.id))
    order = mmr([r.relative for r in pool], _Lazy(pool, lambda r: tokens(r.candidate.row.text)), settings.mmr_lambda,
                limit, groups=[(r.candidate.row.path, r.candidate.row.start_line, r.candidate.row.end_line)
                               for r in pool])
    return [pool[i] for i in order]


def note_times(text: str, day: date | None) -> tuple[TimeRef, ...]:
    """The times a chunk names, resolved against its own date; ISO dates are left out (already plain)."""
    if day is None:
        return ()
    return tuple(TimeRef(t.text, t.period.start.isoformat(), t.period.end.isoformat())
                 for t in find_times(text, day) if t.period is not None and not re.fullmatch(r"[\d-]+", t.text.strip()))


def neighbours(index: MemoryIndex, hit: Ranked, picked: set[int], budget: int, relevance: Callable[[ChunkRow], float],
               share: float) -> tuple[Context, ...]:
    """Chunks right before and after the hit in the same section that answer with it: relevant too
    (at least `share` of the hit's relevance) or about the same names ("Dr. Aydın"), within
    `budget` characters. The hit's lines do not change."""
    row = hit.candidate.row
    if budget <= 0 or share <= 0:
        return ()
    names = set(_names(row.text))
    near = [r for r in index.neighbours(row.path, row.start_line - 2, row.end_line + 2)
            if r.id != row.id and r.id not in picked and r.heading == row.heading
            and (r.end_line < row.start_line or r.start_line > row.end_line)]
    out: list[Context] = []
    for r in sorted(near, key=lambda r: abs(r.start_line - row.start_line)):
        text = strip_kit_comments(r.text)
        related = relevance(r) >= share * hit.candidate.relevance or bool(names & set(_names(r.text)))
        if not related or len(text) > budget:
            continue
        out.append(Context(r.start_line, r.end_line, text))
        budget -= len(text)
    return tuple(sorted(out, key=lambda c: c.start_line))


CALENDAR_WORDS = frozenset(m.lower() for m in calendar.month_name if m) | frozenset(WEEKDAYS)
_NAME = re.compile(r"(?<![\w'’])[A-ZÀ-ÖØ-Þ][\w'’-]*[\w]")


def _names(text: str) -> list[str]:
    """Capitalised words that are no stop words, lower-cased: the people, places and things a note
    names. Month and weekday names are capitalised too but name no one: as bridges they link a note
    to every other Thursday (and their FTS queries were the slowest of a search)."""
    found = (re.sub(r"['’]s$", "", n).lower() for n in _NAME.findall(strip_kit_comments(text)))
    return [w for w in dict.fromkeys(found)
            if w not in STOP_WORDS and len(w) >= 3 and w not in CALENDAR_WORDS]


def bridge_terms(text: str, query: str) -> list[str]:
    """What links the best hit to notes the query's words do not reach: its names (capitalised
    words) and, in CJK text, its character trigrams, less what the query already says."""
    asked_words, asked_cjk = query_terms(query)
    asked = set(asked_words) | {run[i : i + 3] for run in asked_cjk for i in range(len(run) - 2)}
    words = [w for w in _names(text) if w not in asked]
    _, cjk = query_terms(strip_kit_comments(text))
    grams = [run[i : i + 3] for run in cjk for i in range(len(run) - 2)]
    return words + [g for g in dict.fromkeys(grams) if g not in asked]


def second_hop(index: MemoryIndex, best: Candidate, query: str, pool: int, vectors: Vectors | None,
               weights: tuple[float, float], hop: float, seen: set[int]) -> list[Candidate]:
    """Multi-hop questions ("who recommended the place where we had our anniversary dinner?") are
    answered by two notes, and only one shares the question's words; the other shares a name with
    it. Notes holding the best hit's names, scored hop × (vw·cosine to the query + tw·text score
    of the names), join the candidates. Names held by more than BRIDGE_SHARE of the chunks (and
    more than BRIDGE_FLOOR) are no bridges."""
    terms = bridge_terms(best.row.text, query)
    if hop <= 0 or not terms:
        return []
    cjk = any(has_cjk(t) for t in terms)
    # a name that many chunks hold ("Alice" in a tenth of the notes) links the hit to everything:
    # no bridge, and ranking all its rows was the costliest query of a search (counting them is not)
    most = max(BRIDGE_FLOOR, BRIDGE_SHARE * index.chunk_count())
    terms = [t for t in terms if index.match_count(_quote(t), trigram=cjk) <= most]
    if not terms:
        return []
    found = {i: bm25_to_score(r) for i, r in index.text_search(" OR ".join(map(_quote, terms)), pool, trigram=cjk)}
    new = [i for i in found if i not in seen]
    rows = index.chunk_rows(new)
    vw, tw = weights
    out = []
    for chunk_id in new:
        row = rows.get(chunk_id)
        if row is None:
            continue
        v = max(0.0, min(1.0, vectors.of(chunk_id) or 0.0)) if vectors is not None else None
        t = found[chunk_id]
        out.append(Candidate(row, v, t, True, hop * (vw * (v or 0.0) + tw * t)))
    return out


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
    """Run the hybrid search. `vectors` is (chunk ids, matrix) and `encode_query` embeds a text;
    without them the search is fts-only; without FTS5 it is vector-only."""
    query = query.strip()
    limit = max(1, int(limit or settings.max_results))
    use_vectors = vectors is not None and encode_query is not None
    mode = "hybrid" if use_vectors and index.fts5 else ("fts-only" if not use_vectors else "vector-only")
    if not query:
        return SearchResult(query, mode, ())
    pool = max(settings.candidates, limit * settings.candidate_multiplier)
    weights = normalised_weights(settings.vector_weight, settings.text_weight) if use_vectors else (0.0, 1.0)

    def embed(text: str) -> Vectors | None:
        if not use_vectors:
            return None
        ids, matrix = vectors  # type: ignore[misc]
        if not len(ids):
            return Vectors(ids, np.zeros(0, dtype=np.float32))
        q = np.asarray(encode_query(text), dtype=np.float32).reshape(-1)  # type: ignore[misc]
        # a plain view of the (memory-mapped) matrix: np.memmap's Python-level __getitem__ and
        # result wrapping cost ~0.6 ms a search in the product and in every cosine looked up
        if isinstance(matrix, np.memmap):
            matrix = matrix.view(np.ndarray)
        return Vectors(ids, matrix @ q, matrix)

    def relevant(text: str, period: Period | None) -> tuple[list[Candidate], Vectors | None, dict[int, float],
                                                            tuple[float, float]]:
        vecs = embed(text)
        sims, ranks = gather(index, text, pool, vecs, period)
        rows = index.chunk_rows(sims.keys() | ranks.keys())
        found = score_candidates(rows, sims, ranks, weights, use_vectors)
        best = best_of(found)
        return [c for c in found if is_relevant(c, settings, weights[1], use_vectors, text, period, best)], vecs, ranks, best

    when = query_time(query, today)
    anchor_day = None
    if when.anchor is not None:
        anchor_day = event_day(relevant(when.anchor.event, None)[0])
    plan = plan_query(query, when, anchor_day)
    kept, vecs, ranks, best_found = relevant(plan.text, plan.period)
    if not kept:
        return SearchResult(query, mode, (), period=plan.period, recent=plan.recent)
    def similarity(found: Sequence[Candidate]) -> np.ndarray | None:
        return vecs.similarity([c.row.id for c in found]) if vecs is not None else None

    ranked = rank_candidates(kept, plan, settings, similarity(kept))
    best = max(ranked, key=lambda r: (r.score, -r.candidate.row.id)).candidate
    hop = second_hop(index, best, plan.text, pool, vecs, weights, settings.second_hop,
                     {c.row.id for c in kept})
    hop = [c for c in hop if is_relevant(c, settings, weights[1], use_vectors, plan.text, plan.period, best_found)]
    if hop:
        kept = [*kept, *hop]
        ranked = rank_candidates(kept, plan, settings, similarity(kept))
    chosen = select(ranked, settings, limit)

    def relevance_of(row: ChunkRow) -> float:
        cos = (vecs.of(row.id) or 0.0) if vecs is not None else 0.0
        text = ranks.get(row.id, 0.0)
        return weights[0] * max(0.0, cos) + weights[1] * text

    picked = {r.candidate.row.id for r in chosen}
    terms = [t for part in query_terms(plan.text) for t in part]
    hits = []
    for rank, r in enumerate(chosen, 1):
        c = r.candidate
        shown, first, last = shown_part(c.row, terms, settings.snippet_chars)
        snippet = strip_kit_comments(shown)[: settings.snippet_chars]
        hits.append(SearchHit(
            path=c.row.path, start_line=first, end_line=last, score=r.score,
            vector_score=c.vector_score, text_score=c.text_score, snippet=snippet, heading=c.row.heading,
            relevance=c.relevance, relative=r.score / chosen[0].score if chosen[0].score > 0 else 0.0, rank=rank,
            date=c.row.day, times=note_times(c.row.text, c.day),
            context=neighbours(index, r, picked, settings.snippet_chars - len(snippet), relevance_of,
                               settings.context_share),
        ))
    return SearchResult(query, mode, tuple(hits), period=plan.period, recent=plan.recent)


def shown_part(row: ChunkRow, terms: Sequence[str], width: int) -> tuple[str, int, int]:
    """What a hit shows of its chunk, as (text, first line, last line): the whole chunk when it fits
    in `width` characters; else the whole lines around the line holding the most query terms, as
    many as fit. A row of a long table or code block matched far below its first 700 characters,
    and the start shown instead did not hold the match (the model got that text, and the recall
    log logged it). No line holding a term (a meaning-only hit): the chunk's start, as before."""
    text = row.text
    if len(text) <= width:
        return text, row.start_line, row.end_line
    lines = text.split("\n")
    folded = [unicodedata.normalize("NFKC", line).lower() for line in lines]  # as `query_terms` folds the query
    held = [sum(1 for t in terms if t in line) for line in folded]
    best = max(range(len(lines)), key=lambda i: (held[i], -i))
    if not held[best] or row.start_line + len(lines) - 1 != row.end_line:
        return text[:width], row.start_line, row.end_line
    lo = hi = best
    size = len(lines[best])
    grew = True
    while grew:  # a line below, then one above, while they fit
        grew = False
        if hi + 1 < len(lines) and size + 1 + len(lines[hi + 1]) <= width:
            hi += 1
            size += 1 + len(lines[hi])
            grew = True
        if lo > 0 and size + 1 + len(lines[lo - 1]) <= width:
            lo -= 1
            size += 1 + len(lines[lo])
            grew = True
    return "\n".join(lines[lo : hi + 1])[:width], row.start_line + lo, row.start_line + hi


def event_day(found: Sequence[Candidate]) -> date | None:
    """The day an event happened, from the notes that best match its words: the date the best one
    names ("the wedding is on 20 September"), else that note's own date."""
    dated = sorted((c for c in found if c.day is not None), key=lambda c: (-c.relevance, c.row.id))
    if not dated:
        return None
    best = dated[0]
    named = [t.period for t in find_times(best.row.text, best.day) if t.period is not None]  # type: ignore[arg-type]
    if named and named[0].start == named[0].end:
        return named[0].start
    return best.day

