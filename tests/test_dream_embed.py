"""The dream's vector cache: encoding ahead (Deep's look-ahead) gives the vectors of encode's own calls."""

from __future__ import annotations

import threading
import zlib

import numpy as np

from kit.dreaming.embed import CachedEmbedder


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
