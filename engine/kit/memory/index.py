"""`.kit/index.db`: files, chunks, FTS5 (unicode61 and trigram) and float32 embeddings.

Everything here is derived from the Markdown files: deleting index.db loses nothing but time, and
the embedding cache (keyed by model and chunk hash) makes even a rebuild cheap.

Crash safety: embeddings are computed before any chunk row changes and go to the cache in their own
transactions; then each file's new chunks replace its old ones in ONE transaction. A sync killed at
any moment leaves every file either fully old or fully new, and the next sync finishes the job.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kit import clock
from kit.errors import BusyError, DocumentError, PathEscapeError, StateError
from kit.fsutil import (
    is_symlink_loop,
    is_within,
    os_problem,
    read_text,
    safe_join,
    sha1_hex,
    special_kind,
)
from kit.ignore import is_ignored
from kit.memory import vector_file
from kit.memory.chunker import CHUNKER_VERSION, Chunk, chunk_markdown
from kit.problems import Problem, located
from kit.state import can_write_beside, connect, connect_read_only, transaction, unusable

# 2: chunks_fts stems words (porter); 3: chunks.day (the date a chunk is about, for dated search).
# An index of another version is rebuilt on open.
SCHEMA_VERSION = 3
ENCODE_BATCH = 256  # texts per encode call during sync: big enough to keep the model busy

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL, chunker TEXT NOT NULL, indexed_at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL, "
    "start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL, "
    "hash TEXT NOT NULL, model TEXT, embedding BLOB, day TEXT)",
    "CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path)",
    "CREATE INDEX IF NOT EXISTS chunks_day ON chunks(day)",
    "CREATE TABLE IF NOT EXISTS embedding_cache (model TEXT NOT NULL, hash TEXT NOT NULL, "
    "dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID",
    # files the last sync looked at and skipped (not UTF-8, too large, a FIFO …), with the stat it saw:
    # while a file's stat still matches, it is "skipped", not "stale" (another sync cannot help)
    "CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "mtime_ns INTEGER NOT NULL, line INTEGER, reason TEXT NOT NULL)",
    # vectors of recent search queries, so a cold process searching again loads no model
    "CREATE TABLE IF NOT EXISTS query_vectors (model TEXT NOT NULL, hash TEXT NOT NULL, "
    "vector BLOB NOT NULL, added REAL NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID",
)
QUERY_VECTORS_KEPT = 1000  # the most recent distinct queries per index
FTS_SCHEMA = (
    # porter over unicode61: "deploy" finds "Deploys" and "deployed"; the trigram table keeps CJK and substrings
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_tri USING fts5(text, tokenize='trigram')",
)
# what a schema change throws away: everything but the embedding cache (keyed by content, still valid)
DERIVED_TABLES = ("chunks_fts", "chunks_tri", "chunks", "files", "skipped")


MAX_INDEX_LINES = 20_000  # per memory file: a daily note is a few hundred lines, MEMORY.md fewer


def _varint(blob: bytes) -> int:
    """The first SQLite varint of `blob` (big-endian groups of 7 bits, the high bit says more follow)."""
    value = 0
    for byte in blob[:8]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return (value << 8) | blob[8]


@functools.lru_cache(maxsize=1)
def fts5_available() -> bool:
    """True when this SQLite has FTS5 with the trigram tokenizer (3.34+)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def _cached_vectors(conn: sqlite3.Connection, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
    """hash -> vector bytes of the embedding cache rows of `model` among `hashes` (500 a query)."""
    wanted = list(dict.fromkeys(hashes))
    out: dict[str, bytes] = {}
    for start in range(0, len(wanted), 500):
        part = wanted[start : start + 500]
        marks = ",".join("?" * len(part))
        for r in conn.execute(f"SELECT hash, vector FROM embedding_cache WHERE model = ? AND hash IN ({marks})",
                              [model, *part]):
            out[r[0]] = r[1]
    return out


class CachedVectorReader:
    """text → vector from the embedding cache of an index.db that may not exist, read without
    writing: no file, table or schema row is created (opening a MemoryIndex writes its schema), and
    a missing, unreadable or older index reads as empty — a reader that must not write (a dry-run
    dream) asks this. A text is found when the index embedded exactly it (a chunk's `embed_text`).

    One connection, opened at the first ask (while the file exists) and kept until `close()`: a
    dream asks about a hundred times, and a connection each was a tenth of its Deep phase. Each
    query is its own read (autocommit), so nothing is held between asks and an indexer writing
    meanwhile is never blocked. An ordinary connection, not `mode=ro`: SQLite removes the -wal and
    -shm files it opened when the last read-write connection closes, and a read-only one leaves
    them behind. The thread that first asks owns it (sqlite3's rule)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None

    def __call__(self, model: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        by_hash = {sha1_hex(t): t for t in texts}
        if not by_hash:
            return {}
        if self._conn is None:
            if not self.path.is_file():
                return {}
            try:
                self._conn = sqlite3.connect(str(self.path), timeout=10.0)
            except sqlite3.Error:
                return {}
        try:
            found = _cached_vectors(self._conn, model, by_hash)
        except sqlite3.ProgrammingError:  # a closed connection, another thread's: Kit's mistake, not the file's
            raise
        except sqlite3.Error:  # no embedding_cache table (not an index Kit wrote), or a damaged file
            return {}
        return {by_hash[h]: np.frombuffer(blob, dtype=np.float32) for h, blob in found.items()}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def stored_schema(path: str | os.PathLike) -> str | None:
    """The schema version an existing index.db was built with, read without writing (for doctor)."""
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        return str(row[0]) if row else None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


# --------------------------------------------------------------------------- what is indexed


def _ignored_name(rel: str) -> bool:
    """Kit's ignore list, and any hidden file or folder."""
    return is_ignored(rel) or any(p.startswith(".") for p in rel.split("/"))


def _extra_prefixes(extra_paths: Sequence[str]) -> list[str]:
    return [str(p).strip().strip("/") for p in extra_paths if str(p).strip().strip("/")]


def is_indexable(rel: str, extra_paths: Sequence[str] = ()) -> bool:
    """MEMORY.md, memory/**/*.md except memory/dreaming/, and Markdown under memory.extra_paths."""
    if not rel.endswith(".md") or _ignored_name(rel):
        return False
    if rel == "MEMORY.md":
        return True
    if rel.startswith("memory/"):
        return not rel.startswith("memory/dreaming/")
    return any(rel == p or rel.startswith(p + "/") for p in _extra_prefixes(extra_paths))


def indexable_files(root: Path, extra_paths: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(indexable relative paths on disk, sorted; problems with extra paths)."""
    found: set[str] = set()
    problems: list[str] = []
    if os.path.lexists(root / "MEMORY.md") and not (root / "MEMORY.md").is_dir():
        found.add("MEMORY.md")  # a FIFO or a broken link too: sync reports it instead of skipping it silently
    tops = ["memory"]
    for extra in _extra_prefixes(extra_paths):
        try:
            safe_join(root, extra)
        except PathEscapeError as exc:
            problems.append(f"memory.extra_paths: {exc}")
            continue
        tops.append(extra)
    for top in tops:
        base = root / top
        if base.is_file():
            if is_indexable(top, extra_paths) and is_within(root, base):
                found.add(top)
            continue
        if not base.is_dir():
            if top != "memory":
                problems.append(f"memory.extra_paths: {top} does not exist")
            continue
        for folder, dirs, files in os.walk(base):
            rel_dir = Path(folder).relative_to(root).as_posix()
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and f"{rel_dir}/{d}" != "memory/dreaming")
            for name in files:
                rel = f"{rel_dir}/{name}"
                if is_indexable(rel, extra_paths) and (is_within(root, root / rel) or is_symlink_loop(root / rel)):
                    found.add(rel)  # a loop is reported by sync, not skipped silently
    return sorted(found), problems


def stat_key(path: Path) -> tuple[int, int] | None:
    """(size, mtime_ns) of a file, or of the link itself when it leads nowhere (a loop, a missing
    target); None when neither exists. What a skip record is compared with."""
    for how in (os.stat, os.lstat):
        try:
            st = how(path)
        except (OSError, ValueError):
            continue
        return st.st_size, st.st_mtime_ns
    return None


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class SkippedFile:
    """An indexable file the indexer would not index as it is (not UTF-8, binary, too large, too
    many lines, a FIFO, a symlink loop or to a missing file). The file is never changed; an earlier
    indexed version of it (`kept`) stays searchable."""

    path: str
    reason: str  # why, without the path: "not valid UTF-8 (byte 19)"
    line: int | None = None  # where, when known (the line of the first bad byte)
    kept: bool = False  # an earlier version of the file is indexed and stays searchable
    # (size, mtime_ns) the indexer saw: while the file still has them, it stays skipped, not stale
    stat: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return located(self.path, self.line, self.reason)

    @property
    def message(self) -> str:
        """The reason and what the index holds of the file, without the file's name."""
        if "not indexed" in self.reason or "stays searchable" in self.reason:  # it says so already
            return self.reason
        return f"{self.reason}; {'the last indexed version stays searchable' if self.kept else 'not indexed'}"

    def describe(self) -> str:
        """One line: the file (and line), the reason, and what the index holds of it."""
        return located(self.path, self.line, self.message)

    def problem(self) -> Problem:
        """As doctor reports it: a warning at the file (and line)."""
        return Problem(area="memory", severity="warning", path=self.path, line=self.line, message=self.message)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason, "kept": self.kept,
                "message": self.describe()}


@dataclass(frozen=True)
class SyncResult:
    files: int  # indexable files seen
    added: tuple[str, ...]
    updated: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    chunks: int  # chunk rows written
    embedded: int  # texts sent to the model
    cached: int  # chunk vectors taken from the embedding cache
    errors: tuple[str, ...] = ()  # every problem, one line each: the skipped files' and the rest
    mode: str = "hybrid"
    seconds: float = 0.0
    # files seen but not indexed as they are; files == added + updated + unchanged + skipped
    skipped: tuple[SkippedFile, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    @property
    def problems(self) -> tuple[str, ...]:
        """The errors that are not one skipped file's (a bad memory.extra_paths entry …)."""
        lines = {s.describe() for s in self.skipped}
        return tuple(e for e in self.errors if e not in lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "added": list(self.added),
            "updated": list(self.updated),
            "removed": list(self.removed),
            "unchanged": self.unchanged,
            "skipped": [s.to_json() for s in self.skipped],
            "chunks": self.chunks,
            "embedded": self.embedded,
            "cached": self.cached,
            "errors": list(self.errors),
            "mode": self.mode,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class ChunkRow:
    id: int
    path: str
    start_line: int
    end_line: int
    heading: str
    text: str
    day: str | None = None  # ISO date the chunk is about (chunker.chunk_day)


@dataclass
class _Pending:
    rel: str
    size: int
    mtime_ns: int
    hash: str
    chunks: list[Chunk] = field(default_factory=list)
    new: bool = False


# --------------------------------------------------------------------------- the index


POSTINGS_KEPT = 256  # words whose occurrences a connection keeps (~16 KB a word at 10k chunks)


class MemoryIndex:
    """One connection to index.db. Open one per thread; never share across threads."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._temp: set[str] = set()  # FTS5 tables whose temp vocab/tokenizer tables exist
        self._tokens: dict[tuple[str, str], tuple[str, ...]] = {}  # (table, text) → fts_tokens
        self._lengths: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}  # table → (generation, ids, lengths)
        self._postings: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}  # token_counts, this generation
        self._postings_generation = -1
        # a folder Kit cannot write (a read-only mount): the index is searched as it is, never synced
        self.read_only = self.path.is_file() and not can_write_beside(self.path)
        if self.read_only:
            self.conn = connect_read_only(self.path)
            self.fts5 = fts5_available()
            self.rebuilt_from = None
            try:
                built = self.meta("schema")
            except sqlite3.Error:  # not an index Kit wrote
                built = None
            if built != str(SCHEMA_VERSION):  # another Kit's tables: not searchable, and not rebuildable here
                self.conn.close()
                raise StateError(f"was built by another Kit (schema {built}, now {SCHEMA_VERSION}) and its folder "
                                 "is read-only, so it cannot be rebuilt here", path=str(self.path))
            return
        try:
            self.conn = self._open()
        except sqlite3.OperationalError as exc:
            # locked, cannot be opened: the file may be fine, and another process may be using it;
            # never thrown away for it (a 10 s lock wait deleted the index another sync was writing)
            error = unusable(exc, self.path)
            if error is not None:
                raise error from exc
            if "locked" in str(exc) or "busy" in str(exc):
                raise BusyError("is being written by another process (a sync or a dream); try again",
                                path=str(self.path)) from exc
            raise
        except sqlite3.DatabaseError:
            # derived data: a corrupt index is thrown away and rebuilt from the files
            self._remove_files()
            self.conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = connect(self.path)
        self.fts5 = fts5_available()
        self.rebuilt_from: str | None = None  # the old schema version when open() dropped the index
        with transaction(conn):
            conn.execute(SCHEMA[0])
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is not None and row[0] != str(SCHEMA_VERSION):
                # built by another Kit: drop the derived tables; the next sync re-chunks every file
                # (vectors come from the embedding cache, so nothing is embedded again)
                self.rebuilt_from = str(row[0])
                for table in DERIVED_TABLES:
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                conn.execute("DELETE FROM meta WHERE key = 'last_sync'")
                conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
            for statement in SCHEMA:
                conn.execute(statement)
            if self.fts5:
                for statement in FTS_SCHEMA:
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('generation', '0')")
            # names this index (with the generation: which vector file belongs to it)
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('id', ?)", (uuid.uuid4().hex,))
        return conn

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)

    def close(self) -> None:
        self.conn.close()

    # ----------------------------------------------------------------- reads

    def generation(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def file_rows(self) -> dict[str, tuple[int, int, str, str]]:
        rows = self.conn.execute("SELECT path, size, mtime_ns, hash, chunker FROM files")
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def counts(self) -> dict[str, int]:
        files = self.conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        chunks, embedded = self.conn.execute(
            "SELECT COUNT(*), COUNT(embedding) FROM chunks"
        ).fetchone()
        cache = self.conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0]
        return {"files": files, "chunks": chunks, "embedded_chunks": embedded, "cache_entries": cache}

    def vectors(self, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, float32 matrix) of every chunk embedded with `model`."""
        rows = self.conn.execute(
            "SELECT id, embedding FROM chunks WHERE embedding IS NOT NULL AND model = ? ORDER BY id", (model,)
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        return ids, matrix

    def vector_key(self, model: str) -> vector_file.VectorKey:
        return vector_file.VectorKey(self.meta("id") or "", self.generation(), model)

    def mapped_vectors(self, model: str, *, write: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """`vectors(model)`, memory-mapped from the vector file beside index.db when it matches this
        index's generation; else read from SQLite and (with `write`) saved there for the next process."""
        key = self.vector_key(model)
        path = self.path.with_name(vector_file.FILE_NAME)
        found = vector_file.read(path, key)
        if found is not None:
            return found
        ids, matrix = self.vectors(model)
        if write:
            with contextlib.suppress(OSError):  # derived data: a read-only .kit/ only costs speed
                vector_file.write(path, key, ids, matrix)
        return ids, matrix

    def query_vector(self, model: str, text: str) -> np.ndarray | None:
        row = self.conn.execute("SELECT vector FROM query_vectors WHERE model = ? AND hash = ?",
                                (model, sha1_hex(text))).fetchone()
        return None if row is None else np.frombuffer(row[0], dtype=np.float32).copy()

    def store_query_vector(self, model: str, text: str, vector: np.ndarray) -> None:
        with transaction(self.conn):
            self.conn.execute(
                "INSERT OR REPLACE INTO query_vectors(model, hash, vector, added) VALUES (?,?,?,?)",
                (model, sha1_hex(text), np.asarray(vector, dtype=np.float32).tobytes(), clock.timestamp()),
            )
            self.conn.execute(
                "DELETE FROM query_vectors WHERE (model, hash) NOT IN "
                "(SELECT model, hash FROM query_vectors ORDER BY added DESC, hash LIMIT ?)",
                (QUERY_VECTORS_KEPT,),
            )

    def chunk_rows(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        wanted = list(dict.fromkeys(int(i) for i in ids))
        out: dict[int, ChunkRow] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            for r in self.conn.execute(
                f"SELECT id, path, start_line, end_line, heading, text, day FROM chunks WHERE id IN ({marks})", part
            ):
                out[r[0]] = ChunkRow(*r)
        return out

    def ids_between(self, first: str, last: str) -> list[int]:
        """Ids of the chunks whose day is in [first, last] (ISO dates), ascending."""
        rows = self.conn.execute("SELECT id FROM chunks WHERE day BETWEEN ? AND ? ORDER BY id", (first, last))
        return [int(r[0]) for r in rows]

    def neighbours(self, path: str, first_line: int, last_line: int) -> list[ChunkRow]:
        """The chunks of `path` that overlap lines [first_line, last_line], in line order."""
        rows = self.conn.execute(
            "SELECT id, path, start_line, end_line, heading, text, day FROM chunks "
            "WHERE path = ? AND end_line >= ? AND start_line <= ? ORDER BY start_line, id",
            (path, first_line, last_line),
        )
        return [ChunkRow(*r) for r in rows]

    def text_search(self, match: str, limit: int, *, trigram: bool = False) -> list[tuple[int, float]]:
        """(chunk id, bm25 rank) best first; bm25 is negative, more negative is better."""
        if not self.fts5:
            return []
        table = "chunks_tri" if trigram else "chunks_fts"
        try:
            rows = self.conn.execute(
                f"SELECT rowid, bm25({table}) AS rank FROM {table} WHERE {table} MATCH ? ORDER BY rank, rowid LIMIT ?",
                (match, limit),
            ).fetchall()
        except sqlite3.OperationalError:
            return []  # a query FTS5 cannot parse finds nothing rather than failing the search
        return [(int(r[0]), float(r[1])) for r in rows]

    def postings(self, term: str, *, trigram: bool = False) -> np.ndarray:
        """Ids of the chunks holding `term` (one FTS5 term, stemmed like the index), ascending. No
        bm25() is computed and the ids come back as one string: a fraction of a ranked query's cost."""
        if not self.fts5:
            return np.zeros(0, dtype=np.int64)
        table = "chunks_tri" if trigram else "chunks_fts"
        try:
            row = self.conn.execute(f"SELECT group_concat(rowid, ' ') FROM {table} WHERE {table} MATCH ?",
                                    (term,)).fetchone()
        except sqlite3.OperationalError:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.array(row[0].split(), dtype=np.int64)) if row and row[0] else np.zeros(0, dtype=np.int64)

    def match_count(self, term: str, *, trigram: bool = False) -> int:
        """How many chunks hold `term` (counted inside FTS5: no row reaches Python)."""
        if not self.fts5:
            return 0
        table = "chunks_tri" if trigram else "chunks_fts"
        try:
            return int(self.conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (term,)).fetchone()[0])
        except sqlite3.OperationalError:
            return 0

    # ----------------------------------------------------------------- FTS5's own statistics
    # FTS5 computes bm25() for every row an OR query matches before ORDER BY … LIMIT cuts: an OR of
    # words each a tenth of the chunks hold ranks ~3,000 rows (5–8 ms at 10k chunks). The numbers
    # bm25() uses are cheaper read from FTS5's own tables: a token's rows from an fts5vocab
    # 'instance' table (one row per occurrence), each row's length from the docsize table (read once
    # per generation), the token of a query word from a temp table with the same tokenizer.

    def _temp_tables(self, table: str) -> None:
        if table in self._temp:
            return
        tokenizer = "trigram" if table == "chunks_tri" else "porter unicode61 remove_diacritics 2"
        for statement in (
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances USING fts5vocab(main, {table}, instance)",
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_tokenizer USING fts5(text, tokenize='{tokenizer}')",
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_tokens USING fts5vocab(temp, {table}_tokenizer, instance)",
        ):
            self.conn.execute(statement)
        self._temp.add(table)

    def fts_tokens(self, text: str, *, trigram: bool = False) -> tuple[str, ...]:
        """The tokens the index makes of `text`, in order (stemmed like chunks_fts, or trigrams)."""
        table = "chunks_tri" if trigram else "chunks_fts"
        key = (table, text)
        if key not in self._tokens:
            self._temp_tables(table)
            self.conn.execute(f"INSERT INTO temp.{table}_tokenizer(rowid, text) VALUES (1, ?)", (text,))
            try:
                found = tuple(r[0] for r in self.conn.execute(f"SELECT term FROM temp.{table}_tokens ORDER BY offset"))
            finally:
                self.conn.execute(f"DELETE FROM temp.{table}_tokenizer")
            if len(self._tokens) >= 4096:
                self._tokens.clear()
            self._tokens[key] = found
        return self._tokens[key]

    def token_counts(self, token: str, *, trigram: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(row ids ascending, occurrences of `token` in each): the rows holding that FTS5 token
        and its count in each, as bm25() reads them. Read-only arrays."""
        table = "chunks_tri" if trigram else "chunks_fts"
        # Kept until the index changes (its generation): reading a word's occurrences from FTS5
        # (decoding its doclist) was the costliest step of a warm search, 0.1–0.6 ms a word at 10k
        # chunks, and the searches of one session share words. The generation is read first, so
        # rows kept under it are never older than it.
        generation = self.generation()
        if generation != self._postings_generation:
            self._postings.clear()
            self._postings_generation = generation
        key = (table, token)
        found = self._postings.get(key)
        if found is None:
            self._temp_tables(table)
            row = self.conn.execute(f"SELECT group_concat(doc, ' ') FROM temp.{table}_instances WHERE term = ?",
                                    (token,)).fetchone()
            docs = np.fromstring(row[0], dtype=np.int64, sep=" ") if row and row[0] else np.zeros(0, dtype=np.int64)
            found = np.unique(docs, return_counts=True)  # one row per occurrence → (rows, counts)
            for part in found:
                part.flags.writeable = False  # shared by the searches that ask for it
            if len(self._postings) >= POSTINGS_KEPT:
                self._postings.clear()
            self._postings[key] = found
        return found

    def row_lengths(self, *, trigram: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(row ids ascending, tokens in each row) of the FTS5 table, as bm25() reads them; kept
        until the index generation changes."""
        table = "chunks_tri" if trigram else "chunks_fts"
        generation = self.generation()
        cached = self._lengths.get(table)
        if cached is not None and cached[0] == generation:
            return cached[1], cached[2]
        cur = self.conn.cursor()
        cur.row_factory = None
        rows = cur.execute(f"SELECT id, sz FROM {table}_docsize ORDER BY id").fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        lengths = np.fromiter((b[0] if b[0] < 0x80 else _varint(b) for _, b in rows), dtype=np.float64,
                              count=len(rows))
        self._lengths[table] = (generation, ids, lengths)
        return ids, lengths

    def chunk_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def substring_search(self, needle: str, limit: int) -> list[int]:
        """Chunks containing `needle` (for 1–2 character CJK queries the trigram index cannot match)."""
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.conn.execute(
            "SELECT id FROM chunks WHERE text LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?", (f"%{escaped}%", limit)
        ).fetchall()
        return [int(r[0]) for r in rows]

    # ----------------------------------------------------------------- writes

    def _bump(self) -> None:
        self.conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")

    def clear(self) -> None:
        """Forget every file and chunk (the embedding cache stays: it is keyed by content)."""
        with transaction(self.conn):
            self.conn.execute("DELETE FROM chunks")
            self.conn.execute("DELETE FROM files")
            self.conn.execute("DELETE FROM skipped")
            if self.fts5:
                self.conn.execute("DELETE FROM chunks_fts")
                self.conn.execute("DELETE FROM chunks_tri")
            self._bump()

    def _delete_chunks(self, rel: str) -> None:
        if self.fts5:
            ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE path = ?", (rel,))]
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                self.conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", part)
                self.conn.execute(f"DELETE FROM chunks_tri WHERE rowid IN ({marks})", part)
        self.conn.execute("DELETE FROM chunks WHERE path = ?", (rel,))

    def remove_file(self, rel: str) -> None:
        with transaction(self.conn):
            self._delete_chunks(rel)
            self.conn.execute("DELETE FROM files WHERE path = ?", (rel,))
            self._bump()

    def touch_file(self, rel: str, size: int, mtime_ns: int) -> None:
        with transaction(self.conn):
            self.conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime_ns, rel))

    def replace_file(self, item: _Pending, chunker: str, model: str | None, vectors: dict[str, bytes]) -> int:
        """Swap a file's chunks for new ones in one transaction; returns the chunk count."""
        with transaction(self.conn):
            self._delete_chunks(item.rel)
            for chunk in item.chunks:
                blob = vectors.get(chunk.hash)
                cur = self.conn.execute(
                    "INSERT INTO chunks(path, start_line, end_line, heading, text, hash, model, embedding, day) "
                    "VALUES (?,?,?,?,?,?,?,?,?)",
                    (item.rel, chunk.start_line, chunk.end_line, chunk.heading, chunk.text, chunk.hash,
                     model if blob is not None else None, blob, chunk.day),
                )
                if self.fts5:
                    searchable = chunk.embed_text
                    self.conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (cur.lastrowid, searchable))
                    self.conn.execute("INSERT INTO chunks_tri(rowid, text) VALUES (?, ?)", (cur.lastrowid, searchable))
            self.conn.execute(
                "INSERT INTO files(path, size, mtime_ns, hash, chunker, indexed_at) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(path) DO UPDATE SET size=excluded.size, mtime_ns=excluded.mtime_ns, "
                "hash=excluded.hash, chunker=excluded.chunker, indexed_at=excluded.indexed_at",
                (item.rel, item.size, item.mtime_ns, item.hash, chunker, clock.timestamp()),
            )
            self._bump()
        return len(item.chunks)

    def cached_vectors(self, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
        return _cached_vectors(self.conn, model, hashes)

    def skipped_rows(self) -> dict[str, tuple[int, int, int | None, str]]:
        """path -> (size, mtime_ns, line, reason) of the files the last sync skipped."""
        rows = self.conn.execute("SELECT path, size, mtime_ns, line, reason FROM skipped")
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def record_skipped(self, skipped: Sequence[SkippedFile], paths: Iterable[str] | None = None) -> None:
        """Replace the skip records of `paths` (None: all of them) with `skipped` (those with a stat)."""
        with transaction(self.conn):
            if paths is None:
                self.conn.execute("DELETE FROM skipped")
            else:
                self.conn.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in paths])
            self.conn.executemany(
                "INSERT OR REPLACE INTO skipped(path, size, mtime_ns, line, reason) VALUES (?,?,?,?,?)",
                [(s.path, s.stat[0], s.stat[1], s.line, s.reason) for s in skipped if s.stat is not None],
            )

    def store_vectors(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with transaction(self.conn):
            self.conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache(model, hash, dim, vector) VALUES (?,?,?,?)",
                [(model, h, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
            )

    def set_meta(self, key: str, value: str) -> None:
        with transaction(self.conn):
            self.conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )


# --------------------------------------------------------------------------- sync
# plan (what changed: stat, then hash), then per window of files: chunk, embed what the cache lacks,
# apply (each file's chunks replaced in one transaction). The model encodes window k on a worker
# thread while this thread chunks window k+1 and writes window k-1, so reading, hashing, SQLite and
# FTS writes run in the shadow of embedding. Memory stays bounded: one window's texts and vectors.

WINDOW_TEXTS = 512  # texts to embed per window (and per encode call)
WINDOW_FILES = 64  # files per window when their chunks come from the cache


def chunker_signature(tokens: int, overlap: int) -> str:
    return f"v{CHUNKER_VERSION}:{tokens}:{overlap}"


Progress = Callable[[int, int], None]  # (files indexed so far, files to index)


@dataclass(frozen=True)
class SyncPlan:
    """What a sync will do, decided from stat, content hashes and the index (nothing written yet)."""

    seen: int  # indexable files seen: len(index) + unchanged + len(skipped)
    index: tuple[str, ...]  # files to (re)chunk and write, in path order
    new: frozenset[str]  # those of them not indexed before
    touch: tuple[tuple[str, int, int], ...]  # (path, size, mtime_ns): same content, new stat
    remove: tuple[str, ...]  # indexed, but gone (or no longer indexable)
    unchanged: int
    errors: tuple[str, ...]  # every problem, one line each (the skipped files' too)
    skipped: tuple[SkippedFile, ...] = ()  # files seen that cannot be indexed as they are
    checked: tuple[str, ...] = ()  # every path the plan looked at (whose skip records it decides)


def plan_sync(
    index: MemoryIndex,
    root: Path,
    *,
    paths: Iterable[str] | None = None,
    extra_paths: Sequence[str] = (),
    chunker: str,
    model: str | None,
) -> SyncPlan:
    """Which files to index, touch or remove. Reads the files whose stat changed to compare hashes."""
    known = index.file_rows()
    errors: list[str] = []
    skipped: list[SkippedFile] = []

    def skip(rel: str, reason: str, line: int | None = None) -> None:
        item = SkippedFile(rel, reason, line, kept=rel in known, stat=stat_key(root / rel))
        skipped.append(item)
        errors.append(item.describe())

    if paths is None:
        on_disk, problems = indexable_files(root, extra_paths)
        errors.extend(problems)
        wanted = set(on_disk)
        targets = sorted(wanted | set(known))
    else:
        paths = list(paths)
        wanted = {p for p in paths if is_indexable(p, extra_paths)}
        # a path no longer indexable (extra_paths changed, file hidden) leaves the index
        targets = sorted(wanted | {p for p in paths if p in known})
    stale_model: set[str] = set()
    if model is not None:
        stale_model = {
            r[0]
            for r in index.conn.execute(
                "SELECT DISTINCT path FROM chunks WHERE embedding IS NULL OR model IS NOT ?", (model,)
            )
        }
    to_index: list[str] = []
    touch: list[tuple[str, int, int]] = []
    remove: list[str] = []
    unchanged = 0
    for rel in targets:
        full = root / rel
        try:
            if rel not in wanted:
                raise FileNotFoundError(rel)
            st = full.stat()
            kind = special_kind(st.st_mode)
            if kind and kind != "a directory":  # never opened: a FIFO would block, a device never ends
                skip(rel, f"is {kind}, expected a regular file; not indexed")
                continue
            if not full.is_file() or not is_within(root, full):
                raise FileNotFoundError(rel)
        except RuntimeError:  # Python 3.11 reports a symlink loop met by resolve() this way
            skip(rel, os_problem(OSError(errno.ELOOP, "loop")))
            continue
        except (FileNotFoundError, NotADirectoryError) as exc:
            if rel in wanted and isinstance(exc, FileNotFoundError) and os.path.islink(full):
                skip(rel, os_problem(exc, full))  # a symlink to a missing file: named, not dropped silently
                continue
            if rel in known:
                remove.append(rel)
            continue
        except OSError as exc:  # a symlink loop, a name too long …: named, and the last good version kept
            skip(rel, os_problem(exc, full))
            continue
        row = known.get(rel)
        fresh = row is not None and row[3] == chunker and rel not in stale_model
        if fresh and row[0] == st.st_size and row[1] == st.st_mtime_ns:
            unchanged += 1
            continue
        if fresh:
            try:
                same = sha1_hex(read_text(full, display=rel)) == row[2]
            except DocumentError as exc:
                skip(rel, exc.message, exc.line)  # the last good version stays indexed
                continue
            if same:
                touch.append((rel, st.st_size, st.st_mtime_ns))
                unchanged += 1
                continue
        to_index.append(rel)
    return SyncPlan(len(to_index) + unchanged + len(skipped), tuple(to_index),
                    frozenset(r for r in to_index if r not in known), tuple(touch), tuple(remove), unchanged,
                    tuple(errors), tuple(skipped), tuple(targets))


def _check_lines(text: str, rel: str) -> str:
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines > MAX_INDEX_LINES:  # a note of 150,000 bullets would take minutes to chunk
        raise DocumentError(f"{lines:,} lines, over the {MAX_INDEX_LINES:,}-line limit for one memory "
                            "file; split it (the last indexed version stays searchable)", path=rel)
    return text


def unindexable(root: Path, rel: str) -> Exception | None:
    """Why a sync would skip this file as it is now (what `_read_pending` checks), or None. Reads it."""
    try:
        _check_lines(read_text(root / rel, display=rel), rel)
    except (DocumentError, OSError, RuntimeError) as exc:
        return exc
    return None


def _read_pending(root: Path, rel: str, tokens: int, overlap: int, new: bool) -> _Pending:
    """A file to write, read and chunked now (its stat and hash are those of what was read)."""
    full = root / rel
    st = full.stat()
    text = _check_lines(read_text(full, display=rel), rel)
    item = _Pending(rel, st.st_size, st.st_mtime_ns, sha1_hex(text), new=new)
    item.chunks = chunk_markdown(rel, text, tokens=tokens, overlap=overlap)
    return item


class WindowVectors:
    """Embed missing: the vectors of one window's chunks — from the embedding cache at once, from the
    model for the rest (`encode` may hand the work to a worker thread and return a future).

    A text already being embedded for the window before (`previous`) is not sent twice: its vector
    is taken from that window when this one finishes."""

    def __init__(self, index: MemoryIndex, model: str, items: Sequence[_Pending],
                 encode: Callable[[list[str]], Any], previous: WindowVectors | None = None):
        self.index, self.model = index, model
        texts = {c.hash: c.embed_text for item in items for c in item.chunks}
        self.vectors = index.cached_vectors(model, texts)
        self.cached = sum(1 for item in items for c in item.chunks if c.hash in self.vectors)
        in_flight = previous.missing if previous is not None and not previous.done else set()
        self.borrowed = {h for h in texts if h not in self.vectors and h in in_flight}
        self.previous = previous if self.borrowed else None
        self.missing = {h for h in texts if h not in self.vectors and h not in self.borrowed}
        self._order = sorted(self.missing)
        self._job = encode([texts[h] for h in self._order]) if self._order else None
        self.done = False

    @property
    def embedded(self) -> int:
        return len(self.missing)

    def finish(self) -> dict[str, bytes]:
        """Wait for the model, store the new vectors in the cache; returns every vector by hash."""
        if not self.done:
            if self._job is not None:
                matrix = self._job.result() if hasattr(self._job, "result") else self._job
                self.index.store_vectors(self.model, list(zip(self._order, matrix, strict=True)))
                for h, vec in zip(self._order, matrix, strict=True):
                    self.vectors[h] = np.asarray(vec, dtype=np.float32).tobytes()
                self._job = None
            if self.previous is not None:
                earlier = self.previous.finish()
                self.vectors.update((h, earlier[h]) for h in self.borrowed)
                self.previous = None  # keep no chain of windows alive
            self.done = True
        return self.vectors


def _windows(root: Path, plan: SyncPlan, tokens: int, overlap: int, skipped: list[SkippedFile]):
    """Files of the plan read and chunked, grouped so each group has about WINDOW_TEXTS chunks.
    A file that cannot be indexed goes to `skipped` (the last good version stays indexed)."""
    window: list[_Pending] = []
    size = 0
    for rel in plan.index:
        seen = stat_key(root / rel)  # before reading: a change made while reading is not taken as skipped
        try:
            item = _read_pending(root, rel, tokens, overlap, rel in plan.new)
        except DocumentError as exc:
            skipped.append(SkippedFile(rel, exc.message, exc.line, kept=rel not in plan.new, stat=seen))
            continue
        except (FileNotFoundError, NotADirectoryError):
            # deleted since the plan: the next sync removes it
            skipped.append(SkippedFile(rel, "deleted while being indexed", kept=rel not in plan.new))
            continue
        window.append(item)
        size += len(item.chunks)
        if size >= WINDOW_TEXTS or len(window) >= WINDOW_FILES:
            yield window
            window, size = [], 0
    if window:
        yield window


def sync_index(
    index: MemoryIndex,
    root: Path,
    *,
    paths: Iterable[str] | None = None,
    extra_paths: Sequence[str] = (),
    tokens: int = 400,
    overlap: int = 80,
    embedder: Any = None,
    rebuild: bool = False,
    progress: Progress | None = None,
) -> SyncResult:
    """Bring the index up to date with the files (all of them, or just `paths`)."""
    started = time.perf_counter()
    chunker = chunker_signature(tokens, overlap)
    model = embedder.model_id if embedder is not None else None
    if rebuild:
        index.clear()
    plan = plan_sync(index, root, paths=paths, extra_paths=extra_paths, chunker=chunker, model=model)
    for rel in plan.remove:
        index.remove_file(rel)
    for rel, size, mtime_ns in plan.touch:
        index.touch_file(rel, size, mtime_ns)
    skipped = list(plan.skipped)
    written = embedded = cached = done = 0
    added: list[str] = []
    updated: list[str] = []

    def apply(window: list[_Pending], job: WindowVectors | None) -> None:
        nonlocal written, done
        vectors = job.finish() if job is not None else {}
        for item in window:
            written += index.replace_file(item, chunker, model, vectors)
            (added if item.new else updated).append(item.rel)
        done += len(window)
        if progress:
            progress(done, len(plan.index))

    if plan.index:
        with contextlib.ExitStack() as stack:
            submit: Callable[[list[str]], Any] | None = None
            if model is not None:
                from concurrent.futures import ThreadPoolExecutor

                worker = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="kit-embed"))

                def submit(texts: list[str]) -> Any:
                    return worker.submit(embedder.encode, texts)

            waiting: tuple[list[_Pending], WindowVectors | None] | None = None
            for window in _windows(root, plan, tokens, overlap, skipped):
                job = None
                if submit is not None:
                    job = WindowVectors(index, model, window, submit, waiting[1] if waiting else None)
                    embedded, cached = embedded + job.embedded, cached + job.cached
                if waiting is not None:
                    apply(*waiting)  # the previous window is written while the model encodes this one
                waiting = (window, job)
            if waiting is not None:
                apply(*waiting)
    # a full sync decides every skip record; one of `paths`, those of the paths it looked at
    index.record_skipped(skipped, None if paths is None else plan.checked)
    index.set_meta("last_sync", f"{clock.timestamp():.3f}")
    errors = [*plan.errors, *(s.describe() for s in skipped[len(plan.skipped):])]
    return SyncResult(
        files=plan.seen,
        added=tuple(added),
        updated=tuple(updated),
        removed=plan.remove,
        unchanged=plan.unchanged,
        chunks=written,
        embedded=embedded,
        cached=cached,
        errors=tuple(errors),
        mode="hybrid" if model else "fts-only",
        seconds=time.perf_counter() - started,
        skipped=tuple(skipped),
    )


def stale_files(index: MemoryIndex, root: Path, extra_paths: Sequence[str] = ()) -> dict[str, list]:
    """Freshness by stat alone: files new, changed or deleted since the last sync (path lists), and
    the files it skipped that are still as it saw them ("skipped": SkippedFile list) — those are not
    stale: another sync would skip them again."""
    known = index.file_rows()
    skips = index.skipped_rows()
    on_disk, _ = indexable_files(root, extra_paths)
    new, changed, skipped = [], [], []
    for rel in on_disk:
        key = stat_key(root / rel)
        record = skips.get(rel)
        if record is not None and key is not None and key == (record[0], record[1]):
            skipped.append(SkippedFile(rel, record[3], record[2], kept=rel in known, stat=key))
            continue
        row = known.get(rel)
        if row is None:
            new.append(rel)
            continue
        if key is None:  # deleted just now
            continue
        if (row[0], row[1]) != key:
            changed.append(rel)
    deleted = sorted(set(known) - set(on_disk))
    return {"new": new, "changed": changed, "deleted": deleted, "skipped": skipped}
