"""The embedding matrix of an index, kept beside it in `.kit/index-vectors.bin` and memory-mapped.

A cold process (`kit memory search`, the first recall of `kit run`) maps the file instead of reading
every vector row out of SQLite and joining the blobs: opening costs a header read, and the pages the
search touches come from the OS page cache. The header names the index (its random id), its
generation and the model, so a file that does not match the index exactly is ignored and rewritten
from SQLite. Derived data like the index: deleting it loses nothing.

Layout: 8 magic bytes, a little-endian u32 header length, the JSON header, zero padding to a
64-byte boundary, then `rows` int64 chunk ids and `rows × dim` float32 vectors.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"KITVEC1\n"
FILE_NAME = "index-vectors.bin"
INDEX_NAME = "index.db"  # the index the file belongs to, beside it
_ALIGN = 64


@dataclass(frozen=True)
class VectorKey:
    index_id: str
    generation: int
    model: str


def _header(key: VectorKey, rows: int, dim: int) -> bytes:
    body = json.dumps({"index": key.index_id, "generation": key.generation, "model": key.model,
                       "rows": rows, "dim": dim}, sort_keys=True).encode()
    start = len(MAGIC) + 4 + len(body)
    padding = (-start) % _ALIGN
    return MAGIC + struct.pack("<I", len(body) + padding) + body + b" " * padding


def read(path: Path, key: VectorKey) -> tuple[np.ndarray, np.ndarray] | None:
    """(ids, matrix) memory-mapped from `path` when it was written for exactly `key`, else None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(MAGIC) + 4)
            if len(head) < len(MAGIC) + 4 or not head.startswith(MAGIC):
                return None
            (length,) = struct.unpack("<I", head[len(MAGIC):])
            meta = json.loads(handle.read(length))
    except (OSError, ValueError, struct.error):
        return None
    if (meta.get("index"), meta.get("generation"), meta.get("model")) != (key.index_id, key.generation, key.model):
        return None
    rows, dim = int(meta["rows"]), int(meta["dim"])
    offset = len(MAGIC) + 4 + length
    if rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    try:
        if os.path.getsize(path) != offset + rows * 8 + rows * dim * 4:
            return None  # torn or truncated: rebuild
        ids = np.memmap(path, dtype=np.int64, mode="r", offset=offset, shape=(rows,))
        matrix = np.memmap(path, dtype=np.float32, mode="r", offset=offset + rows * 8, shape=(rows, dim))
    except (OSError, ValueError):
        return None
    return ids, matrix


def write(path: Path, key: VectorKey, ids: np.ndarray, matrix: np.ndarray) -> None:
    """Write (ids, matrix) for `key` atomically (temp file + rename: a reader maps old or new)."""
    rows = int(ids.shape[0])
    dim = int(matrix.shape[1]) if matrix.ndim == 2 and rows else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes it 0600; it gets the index's own mode (0644 under the usual umask), as
        # every other file in .kit/ has
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(os.stat(path.parent / INDEX_NAME).st_mode))
        with os.fdopen(fd, "wb") as handle:
            handle.write(_header(key, rows, dim))
            handle.write(np.ascontiguousarray(ids, dtype="<i8").tobytes())
            handle.write(np.ascontiguousarray(matrix, dtype="<f4").tobytes())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
