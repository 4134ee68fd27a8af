"""A search's matrix products run on one OpenBLAS thread, and the thread count comes back after."""

from __future__ import annotations

import numpy as np
import pytest

from kit.memory.blas import OneBlasThread

threadpoolctl = pytest.importorskip("threadpoolctl")


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def two_threads():
    """OpenBLAS set to 2 threads for the test (whatever the machine has), the count restored after."""
    if not blas_threads():
        pytest.skip("numpy has no BLAS threadpoolctl can see")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        yield


def test_one_thread_inside_restored_after_nested_too(two_threads):
    blas = OneBlasThread()
    before = blas_threads()
    assert before and all(n == 2 for n in before)
    with blas.one_thread():
        assert all(n == 1 for n in blas_threads())
        with OneBlasThread().one_thread():  # another owner (another workspace) nested inside
            assert all(n == 1 for n in blas_threads())
        assert all(n == 1 for n in blas_threads())  # the inner exit restores nothing: the outer still runs
    assert blas_threads() == before


def test_memory_search_multiplies_on_one_thread(workspace, real_embedder, monkeypatch, two_threads):
    from kit.memory.service import Memory

    (workspace.root / "memory" / "2026-05-01.md").write_text("# 2026-05-01\n\n- The cabin wifi is fjord-2291\n",
                                                             encoding="utf-8")
    mem = Memory(workspace, embedder=real_embedder)
    counts: list[list[int]] = []
    real_matmul = np.ndarray.__matmul__

    class Spy(np.ndarray):
        def __matmul__(self, other):
            counts.append(blas_threads())
            return real_matmul(self, other)

    mem.sync()
    ids, matrix = mem.vector_set(mem.index(), real_embedder.model_id)
    monkeypatch.setattr(mem, "vector_set", lambda idx, model: (ids, matrix.view(Spy)))
    assert mem.search("cabin wifi password").results[0].snippet == "- The cabin wifi is fjord-2291"
    assert counts and all(n == [1] * len(n) for n in counts)
    assert all(n == 2 for n in blas_threads())
