"""OpenBLAS on one thread while a search multiplies its small matrices.

A search's matrix products are small (the query against 10k chunk vectors, ~150 candidates against
each other), and OpenBLAS runs even these on every core: on a busy machine, waking those threads
costs tens of milliseconds a product where the work itself takes one (measured at load 20: 137 ms
with its threads, 1.8 ms on one). threadpoolctl (the scikit-learn project's library) sets the
thread count for the duration of a `with` block and restores it after.

The thread count is process-wide state of the BLAS library, so the nesting count that decides who
restores it is process-wide too: the first search to enter sets one thread, the last to leave
restores what was there, however many threads search at once.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any


class OneBlasThread:
    """`with blas.one_thread(): ...`; a no-op without threadpoolctl. The controller (it scans the
    loaded libraries: tens of ms) is made on first use and kept by this object."""

    _lock = threading.Lock()
    _depth = 0
    _saved: Any = None

    def __init__(self) -> None:
        self._controller: Any = None
        self._missing = False

    def _blas(self) -> Any:
        if self._controller is None and not self._missing:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:
                self._missing = True
                return None
            self._controller = ThreadpoolController().select(user_api="blas")
        return self._controller

    @contextmanager
    def one_thread(self):
        blas = self._blas()
        if blas is None or not blas.lib_controllers:
            yield
            return
        cls = type(self)
        with cls._lock:
            if cls._depth == 0:
                cls._saved = [(lib, lib.num_threads) for lib in blas.lib_controllers]
                for lib, _ in cls._saved:
                    lib.set_num_threads(1)
            cls._depth += 1
        try:
            yield
        finally:
            with cls._lock:
                cls._depth -= 1
                if cls._depth == 0:
                    for lib, threads in cls._saved:
                        lib.set_num_threads(threads)
