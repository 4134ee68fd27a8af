"""The Memory facade: one per workspace object; what the CLI, the agent tools and dreaming call.

    mem = ws.memory                                  # kit.memory.service.memory_for(ws) below the facade
    mem.write("Deploys need the VPN", topic="ops")   # today's daily note, after the threat scan
    mem.sync()                                       # incremental; sync(rebuild=True) from scratch
    mem.search("how do I deploy", record=True, source="tool")
    mem.get("memory/2026-05-07.md", 12, 3)

SQLite connections belong to the thread that opened them (threading.local); the facade itself is
shared. A search first brings the index up to date (once per process, then only the files Kit
wrote or the watcher reported), so results never lag the files by more than the debounce window.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from kit import clock
from kit.core import WorkspaceCore
from kit.documents import rel_posix
from kit.errors import NotFoundError, PathEscapeError
from kit.fsutil import read_text
from kit.memory import sources
from kit.memory.blas import OneBlasThread
from kit.memory.daily import WriteResult, append_note
from kit.memory.embeddings import (
    Embedder,
    Embedders,
    EmbeddingError,
    EmbeddingSettings,
    embedding_settings,
    model_problem,
)
from kit.memory.index import (
    SCHEMA_VERSION,
    CachedVectorReader,
    MemoryIndex,
    SkippedFile,
    SyncResult,
    fts5_available,
    indexable_files,
    is_indexable,
    stale_files,
    stored_schema,
    sync_index,
    unindexable,
)
from kit.memory.notes import impossible_date
from kit.paths import CONFIG_FILE
from kit.problems import Problem
from kit.progress import ProgressCallback, Step, report
from kit.state import PerThread
from kit.wording import plural

if TYPE_CHECKING:
    from kit.memory.search import SearchResult

_QUERY_CACHE_SIZE = 256
_UNSET = object()
log = logging.getLogger("kit.memory")


@dataclasses.dataclass(frozen=True)
class EmbeddingChange:
    """A kit.yaml edit of `memory.embedding` seen by a running Memory: the old embedder was dropped
    for one made from `after`; `reindex` when the vectors' identity (`model_id`) changed."""

    before: EmbeddingSettings
    after: EmbeddingSettings
    old_model: str | None  # None: fts-only before (no backend could embed, or the model failed)
    new_model: str | None  # None: fts-only now (`problem` says why)
    problem: str | None = None

    @property
    def reindex(self) -> bool:
        return self.new_model is not None and self.new_model != self.old_model

    def describe(self) -> str:
        edits = ", ".join(f"{f.name} {getattr(self.before, f.name)} → {getattr(self.after, f.name)}"
                          for f in dataclasses.fields(self.after)
                          if getattr(self.before, f.name) != getattr(self.after, f.name))
        if self.new_model is None:
            then = f"search runs fts-only ({self.problem})" if self.problem else "search runs fts-only"
        elif self.reindex:
            then = f"vectors are now {self.new_model}: every note is embedded again (cached vectors are reused)"
        else:
            then = f"the vectors stay {self.new_model} (nothing to re-index)"
        return f"{CONFIG_FILE}: memory.embedding changed ({edits}): the old embedder is dropped; {then}"


class Memory:
    """Daily notes, the index and search for one workspace."""

    def __init__(self, ws: WorkspaceCore, *, embedder: Embedder | None | object = _UNSET):
        self.ws = ws
        self.index_path = ws.kit_dir / "index.db"
        self._index = PerThread(lambda: MemoryIndex(self.index_path))
        self._lock = threading.RLock()
        self._sync_lock = threading.Lock()
        self._embedder = embedder
        # the settings Memory made its embedder from (None: given by the caller, so kept as is) and
        # the config object they were read from: a reloaded kit.yaml is a new object (follow_config)
        self._made_for: EmbeddingSettings | None = None
        self._made_model: str | None = None
        self._config_seen: Any = None
        self._blas = OneBlasThread()  # a search's small matrix products run on one BLAS thread
        self._vectors: tuple[int, str, np.ndarray, np.ndarray] | None = None
        self._queries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._synced = False
        # paths written since they were last indexed -> the write's sequence number: a sync clears
        # only the marks it saw, so a write that lands while another thread syncs is not lost
        self._dirty: dict[str, int] = {}
        self._marks = 0
        self.embedding_error: str | None = None  # why the model failed (search then runs fts-only)

    # ------------------------------------------------------------------ parts

    @property
    def embedder(self) -> Embedder | None:
        """The embedder (its model loads on first encode), or None in fts-only mode. One made from
        the config follows `memory.embedding` edits of a reloaded kit.yaml (see follow_config)."""
        if self._embedder is _UNSET:
            with self._lock:
                if self._embedder is _UNSET:
                    self._make_embedder()
        elif self._made_for is not None and self.ws.config is not self._config_seen:
            self.follow_config()
        return self._embedder  # type: ignore[return-value]

    def _make_embedder(self) -> None:
        config = self.ws.config
        owner = getattr(self.ws, "embedders", None)  # shared per process when the caller gave one
        self._embedder = embedder = (owner if owner is not None else Embedders()).get(config)
        self._made_for, self._config_seen = embedding_settings(config), config
        self._made_model = embedder.model_id if embedder is not None else None
        # why no backend can embed (None: one can; a load failure is recorded when it happens)
        self.embedding_error = model_problem(config) if embedder is None else None

    def follow_config(self) -> EmbeddingChange | None:
        """After a kit.yaml reload (`kit watch`, `kit mcp serve`, `kit serve`): when the
        `memory.embedding` settings the embedder was made from changed, drop it and make the new
        one (its model loads on first encode). A new `model_id` marks the index for a full sync, so
        every chunk is embedded with the new model (the embedding cache serves what it already
        has). Says so in one line (the `kit.memory` logger and .kit/logs/memory.log)."""
        with self._lock:
            config = self.ws.config
            if self._made_for is None or config is self._config_seen:
                return None
            before, after = self._made_for, embedding_settings(config)
            self._config_seen = config
            if after == before:
                return None
            old_model = self._made_model if self._embedder is not None else None
            self._vectors = None
            self._queries.clear()
            self._make_embedder()
            change = EmbeddingChange(before, after, old_model, self._made_model, self.embedding_error)
            if change.reindex:
                self._synced = False  # the next search (or the auto-indexer) syncs every file
        line = change.describe()
        log.warning("%s", line)
        _log(self.ws, line)
        return change

    def use_embedder(self, embedder: Embedder | None) -> None:
        """Swap the embedder (tests, alternative backends); cached query vectors are dropped. The
        embedder given is kept across kit.yaml edits."""
        with self._lock:
            self._embedder = embedder
            self._made_for = None
            self._vectors = None
            self._queries.clear()

    @property
    def fts5(self) -> bool:
        return fts5_available()

    @property
    def mode(self) -> str:
        if self.embedder is None:
            return "fts-only"
        return "hybrid" if self.fts5 else "vector-only"

    @property
    def extra_paths(self) -> list[str]:
        return list(self.ws.config.memory.extra_paths)

    def index(self) -> MemoryIndex:
        """This thread's connection to index.db (opened lazily, never shared across threads)."""
        return self._index.get()

    def cached_vectors(self, model_id: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The vectors the index's embedding cache holds for `texts` under `model_id`: a text is
        found when the index embedded exactly it (a chunk's `embed_text` is the key: a note's bullet
        under its date heading alone is its own text). Read without writing, so a dry run may ask;
        no index reads as none. For many asks, `vector_reader()` keeps one connection."""
        reader = self.vector_reader()
        try:
            return reader(model_id, texts)
        finally:
            reader.close()

    def vector_reader(self) -> CachedVectorReader:
        """`cached_vectors` for many asks, over one connection until its `close()`."""
        return CachedVectorReader(self.index_path)

    def close(self) -> None:
        """Close this thread's index connection."""
        self._index.close()

    def auto_index(self, *, initial_sync: bool = True, require_index: bool = False) -> AutoIndexer:
        """Re-index changed memory files in the background (see `start_auto_index`); call the
        result to stop."""
        return start_auto_index(self.ws, initial_sync=initial_sync, require_index=require_index)

    def is_indexable(self, rel: str) -> bool:
        return is_indexable(rel, self.extra_paths)

    # ------------------------------------------------------------------ write / get

    def write(self, text: str, topic: str | None = None) -> WriteResult:
        """Append to today's daily note (threat-scanned); the next search sees it."""
        result = append_note(self.ws, text, topic)
        with self._lock:
            self._marks += 1
            self._dirty[result.path] = self._marks
        return result

    def get(self, path: str, start: int = 1, lines: int | None = None, *, record: bool = False,
            screen: bool = False) -> str:
        """Lines [start, start+lines) of a memory file (MEMORY.md, memory/**, extra paths); with
        `record`, a read of a daily note's lines goes to the recall log as a use (recall credit).
        `screen` (the memory_get tool): a line the threat scan flags, or a model's answer in an old
        session archive, is replaced by a `[line N withheld by Kit: …]` marker, and such a read is not recorded."""
        rel = str(path).strip().removeprefix("./")
        if not (self.is_indexable(rel) or (rel.startswith("memory/") and rel.endswith(".md"))):
            raise PathEscapeError(f"{rel} is not a memory file (MEMORY.md, memory/**/*.md or memory.extra_paths)")
        target = self.ws.path(rel)
        real = rel_posix(self.ws.root, target.resolve())
        if real != rel and not (self.is_indexable(real) or (real.startswith("memory/") and real.endswith(".md"))):
            # memory/link.md -> ../.kit/x.md: what it leads to must be a memory file too
            raise PathEscapeError(f"{rel} leads to {real} (a symlink), which is not a memory file")
        if not target.is_file():
            raise NotFoundError(f"{rel} does not exist")
        text = read_text(target, display=rel)  # DocumentError names the file when it is binary or huge
        all_lines = text.split("\n")
        if all_lines and all_lines[-1] == "":
            all_lines.pop()
        first = max(1, int(start or 1))
        stop = len(all_lines) if lines is None else first - 1 + max(0, int(lines))
        chosen = all_lines[first - 1 : stop]
        withheld = False
        if screen:
            for i, line in enumerate(chosen):
                why = sources.withhold_reason(rel, line)
                if why is not None:
                    chosen[i] = f"[line {first + i} withheld by Kit: {why[1]}]"
                    withheld = True
        if record and chosen and not withheld:  # a read that hit withheld text earns no recall credit
            from kit.memory.recall import record_use

            with self.ws.open_state() as db:
                record_use(db, rel, first, min(stop, len(all_lines)), "read")
        return "\n".join(chosen)

    # ------------------------------------------------------------------ sync

    def sync(self, paths: Iterable[str] | None = None, *, rebuild: bool = False,
             progress: ProgressCallback | None = None) -> SyncResult:
        """Bring the index up to date (all files, or just `paths`); `rebuild` starts from scratch.
        `progress` receives `kit.progress.Step("embedding", done, total)` as chunks are embedded."""
        if self.index().read_only:
            from kit.errors import StateError

            raise StateError("cannot be updated: its folder is read-only (searching what it holds still works)",
                             path=str(self.index_path))
        chunk = self.ws.config.memory.chunk
        paths_list = None if paths is None else sorted(set(paths))
        options = dict(
            paths=paths_list,
            extra_paths=self.extra_paths,
            tokens=chunk.tokens,
            overlap=chunk.overlap,
            rebuild=rebuild,
        )
        step = None if progress is None else (lambda done, total: report(progress, Step("embedding", done, total)))
        with self._lock:
            seen = dict(self._dirty)  # written before this sync reads the files
        with self._sync_lock:
            try:
                result = sync_index(self.index(), self.ws.root, embedder=self.embedder, progress=step, **options)
            except EmbeddingError as exc:
                # the model cannot load: index text-only rather than not at all, and say so
                self._embedding_failed(exc)
                result = sync_index(self.index(), self.ws.root, embedder=None, progress=step, **options)
        with self._lock:
            if paths_list is None:
                self._synced = True
            done = seen if paths_list is None else {p: seen[p] for p in paths_list if p in seen}
            for path, mark in done.items():
                if self._dirty.get(path) == mark:  # not written again meanwhile
                    del self._dirty[path]
        return result

    def _embedding_failed(self, exc: Exception) -> None:
        self.embedding_error = str(exc)
        _log(self.ws, f"embeddings disabled for this process: {exc}")
        with self._lock:  # fts-only until kit.yaml's memory.embedding changes (follow_config)
            self._embedder = None
            self._vectors = None
            self._queries.clear()

    @property
    def read_only(self) -> bool:
        """index.db is in a folder Kit cannot write (a read-only mount): searched as it is, never synced."""
        return self.index().read_only

    def _refresh(self) -> None:
        self.embedder  # noqa: B018 - follows a memory.embedding edit first: a new model means a full sync
        if self.index().read_only:
            return  # a read-only folder: searched as it is (`kit memory status` says what is stale)
        if not self._synced:
            self.sync()
        elif self._dirty:
            self.sync(list(self._dirty))

    # ------------------------------------------------------------------ search

    def vector_set(self, idx: MemoryIndex, model: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, embedding matrix) for `model`, cached until the index generation changes;
        a new process maps it from the vector file beside index.db rather than reading SQLite."""
        generation = idx.generation()
        with self._lock:
            cached = self._vectors
            if cached and cached[0] == generation and cached[1] == model:
                return cached[2], cached[3]
        ids, matrix = idx.mapped_vectors(model, write=not (self.ws.is_read_only or idx.read_only))
        with self._lock:
            self._vectors = (generation, model, ids, matrix)
        return ids, matrix

    def encode_query(self, query: str) -> np.ndarray:
        """The query's vector: from this process's LRU, else from the index's query-vector table (a
        query searched before loads no model), else from the model (and kept in both)."""
        embedder = self.embedder
        assert embedder is not None
        key = (embedder.model_id, query)
        with self._lock:
            hit = self._queries.get(key)
            if hit is not None:
                self._queries.move_to_end(key)
                return hit
        idx = self.index()
        vector = idx.query_vector(embedder.model_id, query)
        if vector is None:
            vector = np.asarray(embedder.encode([query]), dtype=np.float32)[0]
            if not (self.ws.is_read_only or idx.read_only):
                idx.store_query_vector(embedder.model_id, query, vector)
        with self._lock:
            self._queries[key] = vector
            while len(self._queries) > _QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        record: bool = False,
        source: str = "cli",
        refresh: bool = True,
        screen: bool = False,
    ) -> SearchResult:
        """Hybrid search; with `record`, daily-note hits go to the recall log as `source`.

        Session-archive hits rank below a MEMORY.md or note hit saying the same thing. `screen`
        (for text bound to a prompt: the memory_search tool, active recall) withholds the hits the
        threat scan flags and models' answers kept by old session archives; they are listed in
        `result.withheld` and never recorded as recalls."""
        # imported here: the date parser and the ranking are a fifth of Memory's imports, and a
        # dream (which syncs and reads vectors) never searches
        from kit.memory.search import hybrid_search

        if refresh:
            self._refresh()
        idx = self.index()
        settings = self.ws.config.memory.search
        embedder = self.embedder
        vectors = self.vector_set(idx, embedder.model_id) if embedder is not None else None
        try:
            with self._blas.one_thread():
                result = hybrid_search(
                    idx, query, settings, today=clock.today(), limit=limit, vectors=vectors,
                    encode_query=self.encode_query if embedder is not None else None,
                )
        except EmbeddingError as exc:
            self._embedding_failed(exc)
            result = hybrid_search(idx, query, settings, today=clock.today(), limit=limit)
        result = dataclasses.replace(result, results=tuple(sources.by_source(result.results)))
        if screen:
            result = sources.screen(result)
        if record:  # an empty search too: the agent searched again, so what active recall showed did not answer
            from kit.memory.recall import record_hits

            with self.ws.open_state() as db:
                written = record_hits(db, query, result.results, source)
            result = dataclasses.replace(result, recorded=written)
        return result

    # ------------------------------------------------------------------ status

    def status(self) -> MemoryStatus:
        """Files, chunks, embedded chunks, model, mode, freshness and recall counts."""
        from kit.memory.recall import counts

        existed = self.index_path.exists()
        idx = self.index()
        numbers = idx.counts()
        stale = stale_files(idx, self.ws.root, self.extra_paths)
        last = idx.meta("last_sync")
        embedder = self.embedder
        with self.ws.open_state() as db:
            recall = counts(db)
        return MemoryStatus(
            index_path=str(self.index_path),
            index_existed=existed,
            files=numbers["files"],
            chunks=numbers["chunks"],
            embedded_chunks=numbers["embedded_chunks"],
            embedding_cache=numbers["cache_entries"],
            model=embedder.model_id if embedder is not None else None,
            backend=getattr(embedder, "backend", None) if embedder is not None else None,
            mode=self.mode,
            embedding_error=self.embedding_error,
            fts5=idx.fts5,
            stale_paths=StalePaths(tuple(stale["new"]), tuple(stale["changed"]), tuple(stale["deleted"])),
            last_sync=_iso(float(last)) if last else None,
            recall=RecallCounts(recall["events"], recall["keys"], recall["days"], dict(recall["by_source"])),
            skipped=tuple(stale["skipped"]),
        )


@dataclasses.dataclass(frozen=True)
class StalePaths:
    new: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]

    @property
    def any(self) -> bool:
        return bool(self.new or self.changed or self.deleted)

    def counts(self) -> dict[str, int]:
        return {"new": len(self.new), "changed": len(self.changed), "deleted": len(self.deleted)}

    def to_json(self) -> dict[str, list[str]]:
        return {"new": list(self.new), "changed": list(self.changed), "deleted": list(self.deleted)}


@dataclasses.dataclass(frozen=True)
class RecallCounts:
    events: int
    keys: int
    days: int
    by_source: dict[str, int]


@dataclasses.dataclass(frozen=True)
class MemoryStatus:
    """`Memory.status()`: what `kit memory status` shows; `to_json()` is its --json document."""

    index_path: str
    index_existed: bool
    files: int
    chunks: int
    embedded_chunks: int
    embedding_cache: int
    model: str | None
    backend: str | None  # onnx | numpy | torch, None in fts-only mode
    mode: str
    embedding_error: str | None
    fts5: bool
    stale_paths: StalePaths
    last_sync: str | None
    recall: RecallCounts
    # files the last sync skipped (not UTF-8, too large …) that are still as it saw them: not stale,
    # since another sync would skip them again; an earlier version of one may stay indexed (`kept`)
    skipped: tuple[SkippedFile, ...] = ()

    @property
    def fresh(self) -> bool:
        return not self.stale_paths.any

    def to_json(self) -> dict[str, Any]:
        return {
            "index_path": self.index_path,
            "index_existed": self.index_existed,
            "files": self.files,
            "chunks": self.chunks,
            "embedded_chunks": self.embedded_chunks,
            "embedding_cache": self.embedding_cache,
            "model": self.model,
            "backend": self.backend,
            "mode": self.mode,
            "embedding_error": self.embedding_error,
            "fts5": self.fts5,
            "fresh": self.fresh,
            "stale": self.stale_paths.counts(),
            "stale_paths": self.stale_paths.to_json(),
            "skipped": [s.to_json() for s in self.skipped],
            "last_sync": self.last_sync,
            "recall_events": self.recall.events,
            "recall": {"keys": self.recall.keys, "days": self.recall.days, "by_source": dict(self.recall.by_source)},
        }


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- per workspace

def memory_for(ws: WorkspaceCore) -> Memory:
    """The Memory of this workspace object (one per object, created on first use; `ws.memory`)."""
    return ws.owned("memory", lambda: Memory(ws))


# --------------------------------------------------------------------------- auto index


class AutoIndexer:
    """Re-indexes changed memory files on a worker thread that owns its own SQLite connection.

    Calling the object unsubscribes and stops the worker. `wait_idle()` blocks until everything
    reported so far is indexed (for tests and for `kit run` before a search).
    """

    def __init__(self, ws: WorkspaceCore, memory: Memory, *, initial_sync: bool = True, require_index: bool = False):
        self.ws = ws
        self.memory = memory
        self.require_index = require_index
        self.last_error: str | None = None
        self.syncs = 0
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._full = initial_sync
        self._busy = initial_sync
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="kit-memory-index", daemon=True)
        self._unsubscribe = ws.subscribe(self._on_reload)
        self._thread.start()

    def _on_reload(self, result, snapshot) -> None:
        paths = [p for p in result.changed if self.memory.is_indexable(p)]
        change = self.memory.follow_config() if CONFIG_FILE in result.changed else None
        full = change is not None and change.reindex
        if not (paths or full) or (self.require_index and not self.memory.index_path.exists()):
            return
        with self._cond:
            self._pending.update(paths)
            self._full = self._full or full
            self._busy = True
            self._cond.notify_all()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._stopped and not self._pending and not self._full:
                        self._busy = False
                        self._cond.notify_all()
                        self._cond.wait()
                    if self._stopped:
                        return
                    full, paths = self._full, sorted(self._pending)
                    self._full, self._pending = False, set()
                try:
                    self.memory.sync(None if full else paths)
                except Exception as exc:  # the watcher must outlive a bad note or a locked database
                    self.last_error = f"{exc.__class__.__name__}: {exc}"
                    _log(self.ws, f"auto-index of {'all files' if full else ', '.join(paths)} failed: {self.last_error}")
                with self._cond:
                    self.syncs += 1  # attempted syncs, successful or not (see last_error)
                    self._cond.notify_all()
        finally:
            self.memory.close()
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def wait_until_synced(self, count: int, timeout: float = 30.0) -> bool:
        """Block until at least `count` syncs have finished since start (tests, `kit run`)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.syncs < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(remaining)
        return True

    def wait_idle(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._busy or self._pending or self._full:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(remaining)
        return True

    def __call__(self) -> None:
        with contextlib.suppress(ValueError):
            self._unsubscribe()
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        # a daemon thread; a sync cut short at exit is rolled back (one transaction per file)
        self._thread.join(timeout=10)


def start_auto_index(ws: WorkspaceCore, *, initial_sync: bool = True, require_index: bool = False) -> AutoIndexer:
    """Subscribe to ws reloads and re-index changed memory files; returns the unsubscribe function.

    `initial_sync` first catches up with everything changed while nobody watched. With
    `require_index`, nothing happens until an index exists (`kit watch` keeps an index fresh but
    never builds one, so watching a workspace never loads the model by surprise).
    """
    initial = initial_sync and (not require_index or (ws.kit_dir / "index.db").exists())
    return AutoIndexer(ws, memory_for(ws), initial_sync=initial, require_index=require_index)


def _log(ws: WorkspaceCore, message: str) -> None:
    with contextlib.suppress(OSError):
        folder = ws.kit_dir / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "memory.log", "a", encoding="utf-8") as handle:
            handle.write(f"{clock.now().isoformat(timespec='seconds')} {message}\n")


# --------------------------------------------------------------------------- doctor


def doctor_checks(ws: WorkspaceCore) -> list[Problem]:
    """Degraded modes (no embeddings, no FTS5), the model, and index freshness. Never imports torch."""
    import sqlite3

    findings: list[Problem] = []
    # model_problem knows the backend: under `auto`, numpy alone is enough for hybrid search
    problem = model_problem(ws.config)
    if problem:
        # the advice that fits: a missing package is installed, a model that is not there is fixed
        fix = ("install kit-agent[embeddings] or fix memory.embedding" if "not installed" in problem
               else "fix memory.embedding.model")
        findings.append(Problem(
            area="memory", severity="warning",
            message=f"{problem}; memory search runs in fts-only mode (keywords only) — {fix} for hybrid search",
        ))
    if not fts5_available():
        findings.append(Problem(
            area="memory", severity="warning",
            message=f"this SQLite ({sqlite3.sqlite_version}) has no FTS5 trigram support: memory search runs vector-only",
        ))
    extra = list(ws.config.memory.extra_paths)
    files, problems = indexable_files(ws.root, extra)
    findings.extend(Problem(area="memory", severity="warning", path=CONFIG_FILE, message=p) for p in problems)
    for rel in files:  # a typo in a note's name quietly takes it out of the day-by-day memory
        day = impossible_date(rel)
        if day is not None:
            findings.append(Problem(
                area="memory", severity="warning", path=rel,
                message=f"named like a daily note, but {day} is not a date: it is searched as an undated "
                        "file, and dreaming never promotes from it; rename it to the day it is about"))
    path = ws.kit_dir / "index.db"
    if not path.exists():
        findings.append(Problem(
            area="memory", severity="info",
            message="memory index not built yet: `kit memory index` builds it "
                    "(the first search does too)",
        ))
        return findings
    built_with = stored_schema(path)
    if built_with is not None and built_with != str(SCHEMA_VERSION):
        findings.append(Problem(
            area="memory", severity="info",
            message=f"memory index was built by another Kit (schema {built_with}, "
                    f"now {SCHEMA_VERSION}): the next `kit memory index` or search rebuilds it",
        ))
        return findings
    idx = MemoryIndex(path)
    try:
        stale = stale_files(idx, ws.root, extra)
        numbers = idx.counts()
    finally:
        idx.close()
    # a file sync skipped (a FIFO, a binary file, a loop …) is named here, and is not "stale":
    # `kit memory index` cannot make it fresh, so advising it forever would be wrong
    skipped: list[SkippedFile] = stale.pop("skipped")
    findings += [item.problem() for item in skipped]
    # a new file no sync has looked at yet (or an index from before skips were recorded): read it
    refused = []
    for rel in stale["new"]:
        problem = unindexable(ws.root, rel)
        if problem is not None:
            refused.append(rel)
            findings.append(SkippedFile(rel, getattr(problem, "message", None) or str(problem),
                                        getattr(problem, "line", None)).problem())
    stale["new"] = [rel for rel in stale["new"] if rel not in refused]
    if any(stale.values()):
        severity, message = "warning", (
            f"memory index is stale: {len(stale['new'])} new, {len(stale['changed'])} changed, "
            f"{len(stale['deleted'])} deleted files; run `kit memory index` (kit watch keeps it fresh)")
    else:
        severity, message = "info", (f"memory index fresh: {plural(numbers['files'], 'file')}, {plural(numbers['chunks'], 'chunk')}, "
                                     f"{numbers['embedded_chunks']} embedded")
    if skipped or refused:
        message += f"; {plural(len(skipped) + len(refused), 'file')} skipped (named above)"
    findings.append(Problem(area="memory", severity=severity, message=message))
    return findings

