"""The cyclic garbage collector paused for a burst of allocation that makes no cycles.

A dream builds hundreds of thousands of small objects (events, folds, the checkpoint's JSON)
that live until it ends and form no reference cycles; the collector walked them again and again
as they grew — a full collection and a dozen younger ones, 60–90 ms of a next night's 1 s
dream — and freed nothing. Paused, they are looked at once, by the next collection after it.

Reference counting still frees everything as usual; only cycles wait, and only for the pause.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector is as it was after it. With two
    blocks on two threads the first to end turns it back on (the other loses only speed), and a
    collector someone else disabled stays disabled."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
