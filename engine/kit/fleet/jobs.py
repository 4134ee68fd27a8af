"""One fleet job on one workspace, without Celery: what a worker's task calls.

`Runtime.run(kind, path, task_id=…)` opens the workspace with the same library calls the CLI makes
(`ws.dream(…)`, `ws.memory.sync()`, an `Agent` heartbeat turn), so reports, git commits and exit
states are those of a local `kit dream`. Around that call it makes delivery *at least once* safe:

- the workspace's lock for the kind (the dream lock `kit dream` also takes) turns a second
  concurrent task for the same workspace into a no-op reported as `busy` (exit state 3);
- a task that already finished (its id is in `.kit/fleet/done/`) is not run again when the broker
  delivers it a second time: the stored outcome is returned (`duplicate`);
- a dream keeps an undo journal (kit.fleet.journal); a run killed half-way is rolled back by the
  next attempt before it runs, so the rerun leaves the workspace as one clean run would.

The Runtime belongs to one worker process and keeps what is expensive to build (the embedders: the
model loads once per process) across the tasks it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit import clock
from kit.errors import BusyError, KitError
from kit.fsutil import LockFile, atomic_write, pid_alive
from kit.wording import plural

if TYPE_CHECKING:  # pragma: no cover
    from kit.fleet.journal import JournaledWorkspace

KINDS = ("dream", "index", "heartbeat")
JobResult = tuple[str, str, dict[str, Any]]  # (state, one-line summary, the result's JSON)
STATES = ("ok", "skipped", "busy", "failed")
EXIT_CODES = {"ok": 0, "skipped": 0, "busy": 3, "failed": 1}
HEARTBEAT_REQUEST = "heartbeat-request.md.j2"  # the run's message, a template (overridable)
DONE_KEEP = 50  # finished task ids remembered per workspace (for duplicate deliveries)


@dataclass(frozen=True)
class Outcome:
    """What one task did to one workspace. `result` is the library's own JSON (a DreamResult's
    `to_json()` for a dream, exactly what `kit dream --json` prints)."""

    kind: str
    path: str
    task_id: str
    state: str  # ok | skipped | busy | failed
    exit_code: int
    started_at: str
    finished_at: str
    duration_s: float
    worker: str
    summary: str = ""
    error: str | None = None
    result: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    duplicate: bool = False  # a second delivery of a task that had already finished

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known["notes"] = tuple(known.get("notes") or ())
        return cls(**known)


class AlreadyRunning(Exception):  # noqa: N818 - a signal, not an error
    """This very task is running elsewhere (the broker delivered it twice): do nothing."""


@dataclass
class _Markers:
    """`.kit/fleet/running/<kind>.json` (who holds the lock) and `.kit/fleet/done/<task id>.json`."""

    root: Path
    kind: str
    written: bool = field(default=False)

    @property
    def running_path(self) -> Path:
        return self.root / "running" / f"{self.kind}.json"

    def done_path(self, task_id: str) -> Path:
        return self.root / "done" / f"{_safe(task_id)}.json"

    def done(self, task_id: str) -> Outcome | None:
        try:
            return Outcome.from_json(json.loads(self.done_path(task_id).read_text(encoding="utf-8")))
        except (FileNotFoundError, ValueError, TypeError):
            return None

    def running(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.running_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None

    def set_running(self, task_id: str, worker: str) -> None:
        atomic_write(self.running_path, json.dumps({"task_id": task_id, "worker": worker, "host": socket.gethostname(),
                                                    "pid": os.getpid(),
                                                    # wall time: staleness is about real processes
                                                    "started": datetime.now(UTC).isoformat()}))
        self.written = True

    def clear_running(self) -> None:
        if self.written:
            with contextlib.suppress(FileNotFoundError):
                self.running_path.unlink()
            self.written = False

    def save_done(self, outcome: Outcome) -> None:
        atomic_write(self.done_path(outcome.task_id), json.dumps(outcome.to_json()))
        olds = sorted(self.done_path("x").parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in olds[DONE_KEEP:]:
            with contextlib.suppress(FileNotFoundError):
                old.unlink()


def _safe(task_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id) or "_"


class Runtime:
    """One per worker process: runs jobs and keeps the embedders (so the model loads once)."""

    def __init__(self, *, worker: str | None = None, stale_after: float = 1800 + 60):
        self.pid = os.getpid()
        # a running marker older than this is a dead run's (the hard time limit killed it by then)
        self.stale_after = stale_after
        self.worker = worker or f"{socket.gethostname()}:{self.pid}"
        from kit.memory.embeddings import Embedders

        self.embedders = Embedders()  # this process's models: each loads once, on its first encode
        self.jobs = 0

    # ------------------------------------------------------------------ the model, once

    def embedder_for(self, config) -> Any:
        """This process's embedder for the workspace's `memory.embedding` settings (None: fts-only)."""
        return self.embedders.get(config)

    # ------------------------------------------------------------------ one job

    def run(self, kind: str, path: str, *, task_id: str, phase: str = "all",
            on_start: Callable[[], None] | None = None) -> Outcome:
        """Run one job; never raises for a problem of the workspace (that is a `failed` outcome).
        Raises AlreadyRunning when this same task id holds the workspace's lock right now."""
        if kind not in KINDS:
            raise KitError(f"unknown fleet task {kind!r}; use {', '.join(KINDS)}")
        self.jobs += 1
        started = clock.now().isoformat(timespec="seconds")
        t0 = time.monotonic()
        notes: list[str] = []

        def finish(state: str, summary: str = "", error: str | None = None, result: dict | None = None) -> Outcome:
            return Outcome(kind=kind, path=path, task_id=task_id, state=state, exit_code=EXIT_CODES[state],
                           started_at=started, finished_at=clock.now().isoformat(timespec="seconds"),
                           duration_s=round(time.monotonic() - t0, 3), worker=self.worker, summary=summary,
                           error=error, result=result, notes=tuple(notes))

        try:
            from kit.fleet.journal import JournaledWorkspace

            ws = JournaledWorkspace.open(path)
        except KitError as exc:
            return finish("failed", error=str(exc))
        markers = _Markers(ws.kit_dir / "fleet", kind)
        previous = markers.done(task_id)
        if previous is not None:
            return _replace(previous, duplicate=True)
        holder = markers.running()
        if holder and _elsewhere(holder, self.stale_after):
            # the lock file's pid check only knows this machine's processes: a run another machine
            # holds on a shared filesystem is seen by its marker
            if holder.get("task_id") == task_id:
                raise AlreadyRunning(task_id)
            return finish("busy", summary="another machine is running this workspace; nothing done",
                          error=f"another {kind} is running in this workspace on {holder.get('host')} "
                                f"(task {holder.get('task_id')}, since {holder.get('started')})")
        try:
            lock = self._lock(ws, kind)
        except BusyError as exc:
            holder = markers.running()
            if holder and holder.get("task_id") == task_id and not _dead_here(holder):
                raise AlreadyRunning(task_id) from None
            return finish("busy", summary="another run holds this workspace's lock; nothing done", error=str(exc))
        try:
            previous = markers.done(task_id)  # it may have finished between our check and the lock
            if previous is not None:
                return _replace(previous, duplicate=True)
            markers.set_running(task_id, self.worker)
            if on_start is not None:
                on_start()
            ws.memory.use_embedder(self.embedder_for(ws.config))
            try:
                state, summary, result = getattr(self, f"_{kind}")(ws, lock, task_id, phase, notes)
                outcome = finish(state, summary, result=result)
            except KitError as exc:
                outcome = finish("failed", error=str(exc))
            except Exception as exc:  # a bug or an OS failure: still one line, and the next workspace goes on
                outcome = finish("failed", error=f"{exc.__class__.__name__}: {exc}")
            markers.save_done(outcome)
            return outcome
        finally:
            with contextlib.suppress(Exception):
                ws.memory.close()
            markers.clear_running()
            lock.release()

    @staticmethod
    def _lock(ws: JournaledWorkspace, kind: str) -> LockFile:
        if kind == "dream":
            from kit.dreaming.runner import acquire_lock

            return acquire_lock(ws, 0)
        lock = LockFile(ws.kit_dir / "locks" / f"{kind}.lock")
        if not lock.try_acquire():
            info = lock.holder()
            who = f"pid {info[0]}" if info else "another process"
            raise BusyError(f"another {kind} run is using this workspace ({who} holds .kit/locks/{kind}.lock)")
        return lock

    # ------------------------------------------------------------------ the kinds

    def _dream(self, ws: JournaledWorkspace, lock: LockFile, task_id: str, phase: str, notes: list[str]) -> JobResult:
        from kit.fleet.journal import Journal

        journal = Journal(ws, "dream")
        if journal.exists():
            notes.extend(journal.rollback())
        journal.begin(task_id)
        ws.journal = journal
        try:
            result = ws.dream(phases=phase, lock=lock)
        except BaseException:
            # an error (or a soft time limit) half-way: put the workspace back at once
            ws.journal = None
            notes.extend(journal.rollback())
            raise
        ws.journal = None
        journal.discard()
        data = result.to_json()
        parts = [f"promoted {len(result.promoted)}"]
        if result.retired:
            parts.append(f"retired {len(result.retired)}")
        parts.append(f"changed {plural(len(result.changed), 'file')}")
        if result.git and result.git.get("committed"):
            parts.append(f"commit {str(result.git.get('commit'))[:10]}")
        return "ok", ", ".join(parts), data

    def _index(self, ws: JournaledWorkspace, lock: LockFile, task_id: str, phase: str, notes: list[str]) -> JobResult:
        result = ws.memory.sync()
        data = result.to_json()
        summary = (f"{plural(result.files, 'file')}: {len(result.added)} added, {len(result.updated)} updated, "
                   f"{len(result.removed)} removed; {result.embedded} embedded")
        if result.errors:
            notes.extend(result.errors)
        return "ok", summary, data

    def _heartbeat(self, ws: JournaledWorkspace, lock: LockFile, task_id: str, phase: str,
                   notes: list[str]) -> JobResult:
        from kit.agent.loop import Agent
        from kit.templating import templates_for

        request = templates_for(ws).render(HEARTBEAT_REQUEST)
        if request.problem is not None:
            notes.append(f"{request.problem}; using {request.fallback}")
        # nobody can answer an approval prompt on a worker: exec asks are refused
        agent = Agent(ws, kind="heartbeat", interactive=False, approve=lambda _c, _r: False,
                      status=notes.append)
        try:
            turn = agent.turn(request.text)
        finally:
            agent.close()
        data = turn.to_json()
        if not agent.persisted:
            data["session"] = None  # as `kit run --json` reports a run that left no session
        if turn.skip_reason:
            return "skipped", turn.skip_reason, data
        if turn.stopped in ("max_iterations", "repeated_tool_call"):
            raise KitError(f"heartbeat stopped: {turn.stopped}")
        reply = " ".join((turn.reply or "").split())
        return "ok", (reply[:117] + "…") if len(reply) > 118 else reply, data


def _replace(outcome: Outcome, **changes: Any) -> Outcome:
    return Outcome(**{**outcome.__dict__, **changes})


def _elsewhere(holder: dict[str, Any], stale_after: float) -> bool:
    """A running marker written by another machine, recently enough that its run may be alive."""
    if holder.get("host") == socket.gethostname():
        return False
    try:
        started = datetime.fromisoformat(str(holder.get("started")))
    except ValueError:
        return False
    return abs(time.time() - started.timestamp()) < stale_after


def _dead_here(holder: dict[str, Any]) -> bool:
    """A running marker left by a process of this machine that is gone (it was killed)."""
    if holder.get("host") != socket.gethostname():
        return False
    try:
        return not pid_alive(int(holder.get("pid") or 0))
    except (TypeError, ValueError):
        return True


class WorkspaceFailed(Exception):  # noqa: N818 - the Celery task's failure, named for what happened
    """Raised by a fleet task whose workspace failed, so Celery records FAILURE; args are
    (error line, the Outcome as JSON)."""

    def __init__(self, message: str, outcome: dict[str, Any] | None = None):
        super().__init__(message, outcome or {})

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def outcome(self) -> Outcome | None:
        data = self.args[1] if len(self.args) > 1 else None
        return Outcome.from_json(data) if isinstance(data, dict) and data else None
