"""The dream's vector cache: encoding ahead (Deep's look-ahead) gives the vectors of encode's own calls."""

from __future__ import annotations

import threading
import zlib

import numpy as np

from kit.dreaming.embed import CachedEmbedder
from kit.fsutil import sha1_hex


class BatchSensitive:
    """Like ONNX with padding: a text's vector depends on the other texts of its call."""

    backend = "onnx"
    model_id = "batch-sensitive"
    dim = 3

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self._lock = threading.Lock()

    def encode(self, texts):
        with self._lock:
            self.calls.append(tuple(texts))
        batch = sum(zlib.crc32(t.encode()) for t in texts) % 997
        return np.array([[zlib.crc32(t.encode()) % 101, len(texts), batch] for t in texts], dtype="float32")


CALLS = [["a", "b"], ["b", "c", "d"], ["e"], ["c", "f"]]


def test_encoding_ahead_gives_the_vectors_of_encodes_own_calls():
    plain = CachedEmbedder(BatchSensitive())
    plain.encode(["warm"])
    want = [plain.encode(c) for c in CALLS]

    ahead = CachedEmbedder(BatchSensitive())
    with ahead.prefetching():
        ahead.encode(["warm"])  # the model has encoded once on this thread
        for guess in (CALLS[0], CALLS[1], ["e", "y"], CALLS[3]):  # the third guess is wrong
            ahead.prefetch(guess)
        got = [ahead.encode(c) for c in CALLS]
    assert all(np.array_equal(w, g) for w, g in zip(want, got, strict=True))
    # the same model calls (the wrong guess aside), never one merged call; its vectors are not kept
    assert sorted(ahead.inner.calls) == sorted([*plain.inner.calls, ("e", "y")])
    assert "y" not in ahead._vecs


def test_encoding_ahead_only_for_a_backend_that_runs_concurrently():
    class Plain(BatchSensitive):
        backend = "numpy"

    cached = CachedEmbedder(Plain())
    with cached.prefetching():
        cached.encode(["warm"])
        cached.prefetch(["a"])  # numpy may not run two calls at once: nothing starts ahead
    cached.encode(["a"])
    assert cached.inner.calls == [("warm",), ("a",)]


def test_a_dream_asks_the_db_once_per_text_and_stores_at_its_end(workspace):
    """Vectors a night needs are looked up once (a text the db lacks is not asked again when its
    model call is made), and what the dream stores — new vectors, the day on those it read — is
    written by finish(), at its end: the next dream reads them back, and a dry run writes nothing."""
    from kit.dreaming import store as dream_store

    db = workspace.open_state()
    dream_store.ensure_schema(db)
    asked: list[str] = []
    db.conn.set_trace_callback(lambda sql: asked.append(sql) if "FROM dream_vectors" in sql else None)

    first = CachedEmbedder(BatchSensitive(), db, store=True, day="2026-05-01")
    with first.prefetching():
        first.encode(["warm"])
        first.prefetch(["a", "b"])
        vectors = first.encode(["a", "b"])
    assert len([q for q in asked if "hash IN" in q]) == 2  # warm; a and b in one before the model call; not again
    assert db.execute("SELECT COUNT(*) FROM dream_vectors").fetchone()[0] == 0  # nothing stored before the end
    first.finish()
    assert [tuple(r) for r in db.execute("SELECT hash, day FROM dream_vectors ORDER BY hash")] == sorted(
        [(h, "2026-05-01") for h in {sha1_hex(t) for t in ("warm", "a", "b")}])

    db.execute("UPDATE dream_vectors SET day = '2026-04-01'")
    dry = CachedEmbedder(BatchSensitive(), db, store=False, day="2026-05-02")
    assert np.array_equal(dry.encode(["a", "b"]), vectors) and dry.inner.calls == []  # read back, not encoded
    dry.finish()
    assert {r[0] for r in db.execute("SELECT day FROM dream_vectors")} == {"2026-04-01"}  # a dry run writes nothing

    night = CachedEmbedder(BatchSensitive(), db, store=True, day="2026-05-02")
    night.encode(["a"])
    night.finish()  # the day on the vector read; those unused since 2026-04-18 pruned
    assert [tuple(r) for r in db.execute("SELECT hash, day FROM dream_vectors")] == [(sha1_hex("a"), "2026-05-02")]
    db.close()


def test_the_memory_index_is_asked_after_the_db_and_before_the_model(workspace):
    """`indexed` (the memory index's embedding cache) serves what dream_vectors lacks, each text asked
    once; the model gets only what neither has — prefetch included, which starts no call for them."""
    from kit.dreaming import store as dream_store

    db = workspace.open_state()
    dream_store.ensure_schema(db)
    own = CachedEmbedder(BatchSensitive(), db, store=True, day="2026-05-01")
    kept = own.encode(["a"])[0]
    own.finish()  # "a" is in dream_vectors
    elsewhere = {t: np.full(3, float(i), dtype="float32") for i, t in enumerate(["a", "b", "c"])}
    asked: list[list[str]] = []

    def indexed(model_id: str, texts: list[str]) -> dict:
        assert model_id == "batch-sensitive"
        asked.append(list(texts))
        return {t: elsewhere[t] for t in texts if t in elsewhere}

    night = CachedEmbedder(BatchSensitive(), db, store=True, day="2026-05-02", indexed=indexed)
    with night.prefetching():
        night.encode(["warm"])
        night.prefetch(["a", "b", "d"])  # only "d" needs the model
        got = night.encode(["a", "b", "c", "d"])
    assert np.array_equal(got[0], kept)  # the dream's own vector first
    assert np.array_equal(got[1], elsewhere["b"]) and np.array_equal(got[2], elsewhere["c"])
    assert night.inner.calls == [("warm",), ("d",)]
    assert asked == [["warm"], ["b", "d"], ["c"]]  # "d" is not asked again, nor "a" (the db has it)
    night.finish()
    stored = {r[0] for r in db.execute("SELECT hash FROM dream_vectors")}
    assert stored == {sha1_hex(t) for t in ("a", "warm", "d")}  # the index's vectors stay the index's
    db.close()
