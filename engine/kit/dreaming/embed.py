"""Embeddings for REM themes and semantic dedupe, on top of the memory package's Embedder.

The embedder itself is `kit.memory.service.memory_for(ws).embedder` (see `runner._embedder`), so a
dream inside `kit serve` shares the model search already loaded. This module adds what only
dreaming needs: similarity with a lexical fallback, and a per-dream (and persisted) vector cache.
Without any embedder, dreaming uses token Jaccard similarity and says so in its result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any


def similarity_matrix(embedder: Any | None, left: Sequence[str], right: Sequence[str]):
    """Cosine similarities (len(left) × len(right)); token Jaccard when there is no embedder."""
    import numpy as np

    if not left or not right:
        return np.zeros((len(left), len(right)), dtype="float32")
    if embedder is None:
        from kit.dreaming.tags import jaccard, tokens

        lt = [tokens(t) for t in left]
        rt = [tokens(t) for t in right]
        return np.array([[jaccard(a, b) for b in rt] for a in lt], dtype="float32")
    vecs = embedder.encode(list(left) + list(right))
    a, b = vecs[: len(left)], vecs[len(left) :]
    return a @ b.T


class CachedEmbedder:
    """Wraps an Embedder for one dream: each distinct text is encoded once across REM and Deep.

    With a state db, vectors also persist in `dream_vectors` (keyed by model and text hash), so the
    next night only embeds candidates it has not seen; `store=False` (dry runs) reads but never writes.
    `indexed(model_id, texts)` gives the vectors embedded elsewhere — the memory index's cache
    (`Memory.cached_vectors`): a recalled note line is a chunk the index embedded already, the same
    text with the same model — asked for what the db lacks, before the model is.
    What a dream stores — new vectors, and the day on those it used — is written at its end, by
    `finish()`, in one transaction (a night asks for vectors a hundred times; a dream that fails
    first keeps none of it, and the next one embeds those texts again).
    """

    KEEP_DAYS = 14  # vectors unused for this long are pruned: the table holds the working set only

    def __init__(self, inner: Any, db: Any = None, *, store: bool = False, day: str = "",
                 indexed: Callable[[str, list[str]], Mapping[str, Any]] | None = None):
        self.inner = inner
        self._indexed = indexed
        self._not_indexed: set[str] = set()  # texts the index was asked for and has no vector of
        self.day = day
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._vecs: dict[str, Any] = {}
        self._db = db
        self._store = store
        self._pool: Any = None  # helper threads while `prefetching`
        self._ahead: dict[tuple[str, ...], Any] = {}  # the texts of one model call → its vectors (a Future)
        self._warm = False  # the model encoded once on the calling thread (so it is loaded)
        self._table = False  # dream_vectors exists (it is never dropped while a dream runs)
        self._absent: set[str] = set()  # texts the db was asked for and has no vector of
        self._used: set[str] = set()  # hashes of the stored vectors read, their day to mark
        self._fresh: dict[str, Any] = {}  # hash → vector, to store

    def _load(self, texts: list[str]) -> None:
        import numpy as np

        rows = self._rows([t for t in texts if t not in self._absent], "vec")
        for text, (_, blob) in rows:
            vec = np.frombuffer(blob, dtype="float32")
            if vec.shape == (self.dim,):
                self._vecs[text] = vec
        if self._store:
            self._used.update(h for _, (h, _) in rows)
        self._load_indexed(texts)

    def _load_indexed(self, texts: Sequence[str]) -> None:
        """The vectors the memory index has of `texts` not known yet (each text asked once)."""
        if self._indexed is None:
            return
        ask = [t for t in dict.fromkeys(texts) if t not in self._vecs and t not in self._not_indexed]
        if not ask:
            return
        found = self._indexed(self.model_id, ask)
        for text in ask:
            vec = found.get(text)
            if vec is not None and vec.shape == (self.dim,):
                self._vecs[text] = vec
            else:
                self._not_indexed.add(text)

    def _rows(self, texts: list[str], column: str | None) -> list[tuple[str, tuple]]:
        """(text, (hash[, column])) for each of `texts` with a row in `dream_vectors` (500 a query)."""
        from kit.fsutil import sha1_hex

        if not texts or self._db is None:
            return []
        if not self._table:
            self._table = _has_table(self._db, "dream_vectors")
            if not self._table:
                return []
        by_hash = {sha1_hex(t): t for t in texts}
        keys = list(by_hash)
        what = "hash" if column is None else f"hash, {column}"
        out = []
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            out += [(by_hash[r[0]], tuple(r)) for r in self._db.execute(
                f"SELECT {what} FROM dream_vectors WHERE model = ? AND hash IN ({marks})", [self.model_id, *chunk])]
        found = {text for text, _ in out}
        self._absent.update(t for t in by_hash.values() if t not in found)
        return out

    def _save(self, pairs: list[tuple[str, Any]]) -> None:
        from kit.fsutil import sha1_hex

        if self._db is not None and self._store:
            self._fresh.update((sha1_hex(t), v) for t, v in pairs)

    def finish(self) -> None:
        """The dream's end: store the new vectors, mark the day on those read, and drop those unused
        for KEEP_DAYS — one transaction."""
        from datetime import date, timedelta

        if self._db is None or not self._store:
            return
        fresh, used = self._fresh, self._used - set(self._fresh)
        self._fresh, self._used = {}, set()
        if not fresh and not used and not self.day:
            return
        with self._db.transaction():
            if used:
                self._db.conn.executemany("UPDATE dream_vectors SET day = ? WHERE model = ? AND hash = ?",
                                          [(self.day, self.model_id, h) for h in used])
            if fresh:
                self._db.conn.executemany(
                    "INSERT OR REPLACE INTO dream_vectors(model, hash, vec, day) VALUES (?,?,?,?)",
                    [(self.model_id, h, v.astype("float32").tobytes(), self.day) for h, v in fresh.items()])
            if self.day:
                cutoff = (date.fromisoformat(self.day) - timedelta(days=self.KEEP_DAYS)).isoformat()
                self._db.execute("DELETE FROM dream_vectors WHERE day < ?", (cutoff,))

    def encode(self, texts: Sequence[str]):
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if t not in self._vecs))
        if missing:
            self._load(missing)
            missing = [t for t in missing if t not in self._vecs]
        if missing:
            ahead = self._ahead.pop(tuple(missing), None)
            vecs = ahead.result() if ahead is not None else self.inner.encode(missing)
            self._warm = True
            fresh = list(zip(missing, vecs, strict=True))
            self._vecs.update(fresh)
            self._save(fresh)
        if not texts:
            return np.zeros((0, self.dim), dtype="float32")
        return np.stack([self._vecs[t] for t in texts]).astype("float32", copy=False)

    # ------------------------------------------------------------------ encoding ahead

    @contextmanager
    def prefetching(self, workers: int = 2) -> Iterator[None]:
        """Within the block, `prefetch` starts model calls on `workers` helper threads. Only for
        the ONNX backend (one session serves concurrent runs; OnnxEmbedder runs its own batches
        side by side) once the model has encoded on this thread; otherwise `prefetch` does nothing.
        Calls no `encode` took are dropped at the end, their vectors never stored."""
        if self._pool is not None or getattr(self.inner, "backend", "") != "onnx":
            yield
            return
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="kit-dream-embed")
        try:
            yield
        finally:
            pool, self._pool = self._pool, None
            for ahead in self._ahead.values():
                ahead.cancel()
            pool.shutdown(wait=True)
            self._ahead.clear()

    def prefetch(self, texts: Sequence[str]) -> None:
        """Start the model call a later `encode(texts)` will make — on the texts it will not find in
        memory, in the db or in a call started before — so that it waits less or not at all. The
        vectors are exactly encode's own: one model call on the same texts in the same order (a
        batch's padding changes the floats: several calls are never merged into one), and only an
        `encode` missing exactly those texts takes them, so a wrong guess costs time, never a value."""
        if self._pool is None or not self._warm:
            return
        pending = {t for key in self._ahead for t in key}
        missing = [t for t in dict.fromkeys(texts) if t not in self._vecs and t not in pending]
        stored = self._stored(missing)  # read by the encode that needs them (which marks them used)
        self._load_indexed([t for t in missing if t not in stored])  # the db first, as encode asks
        missing = [t for t in missing if t not in stored and t not in self._vecs]
        if missing and tuple(missing) not in self._ahead:
            self._ahead[tuple(missing)] = self._pool.submit(self.inner.encode, missing)

    def _stored(self, texts: list[str]) -> set[str]:
        """Which of `texts` have a vector in the db (read only: `_load` marks them used when an
        encode reads them)."""
        return {text for text, _ in self._rows(texts, None)}


def _has_table(db: Any, name: str) -> bool:
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone()
    return row is not None
