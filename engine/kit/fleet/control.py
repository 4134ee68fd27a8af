"""The fleet controller: the public face of kit.fleet (what `kit fleet …` calls)."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kit.errors import KitError
from kit.fleet.jobs import KINDS, Outcome, WorkspaceFailed
from kit.fleet.registry import Member, Registry, normalise
from kit.fleet.settings import FleetSettings, load_settings, redact

Progress = Callable[[int, int, Outcome], None]  # (done, total, the outcome that just arrived)


class FleetError(KitError):
    """The broker or result backend cannot be reached, or a fleet command cannot run."""


@dataclass(frozen=True)
class Batch:
    """Tasks just sent: one per workspace."""

    kind: str
    tasks: tuple[tuple[str, str, str], ...]  # (path, task id, queue)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "tasks": [{"path": p, "task_id": t, "queue": q} for p, t, q in self.tasks]}


@dataclass(frozen=True)
class Waited:
    outcomes: tuple[Outcome, ...]
    pending: tuple[str, ...]  # paths whose task had not finished when the wait ended

    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "skipped": 0, "busy": 0, "failed": 0}
        for o in self.outcomes:
            out[o.state] = out.get(o.state, 0) + 1
        if self.pending:
            out["pending"] = len(self.pending)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts(), "outcomes": [o.to_json() for o in self.outcomes],
                "pending": list(self.pending)}


@dataclass(frozen=True)
class StatusRow:
    path: str
    kind: str | None  # None: a registered workspace with no run recorded yet
    state: str  # never | queued | running | done
    result: str | None = None  # ok | skipped | busy | failed (the last finished run)
    finished_at: str | None = None
    duration_s: float | None = None
    summary: str | None = None
    error: str | None = None
    failures: int = 0
    last_ok_at: str | None = None
    queued_at: str | None = None
    started_at: str | None = None
    worker: str | None = None
    registered: bool = True

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Fleet:
    """Many workspaces on Celery: the registry, dispatch, waiting, status, worker and beat."""

    def __init__(self, settings: FleetSettings):
        self.settings = settings
        self.registry = Registry(settings.registry)
        self._app = None
        self._store = None

    @classmethod
    def open(cls, *, broker: str | None = None, backend: str | None = None, registry: str | None = None,
             environ: Mapping[str, str] | None = None) -> Fleet:
        """Settings from the config (user kit.yaml, `KIT_FLEET__*`), overridden by these flags."""
        flags = {"fleet.broker": broker, "fleet.backend": backend, "fleet.registry": registry}
        return cls(load_settings(flags, environ=environ))

    # ------------------------------------------------------------------ parts (lazy: Celery, Redis)

    @property
    def app(self):
        if self._app is None:
            _need_extra()
            from kit.fleet.app import make_app

            self._app = make_app(self.settings)
        return self._app

    @property
    def store(self):
        if self._store is None:
            _need_extra()
            from kit.fleet.status import StatusStore

            self._store = StatusStore.from_url(self.settings.backend)
        return self._store

    def _check_broker(self) -> None:
        try:
            with self.app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=5)
        except Exception as exc:  # kombu's OperationalError and the socket errors under it
            raise FleetError(f"cannot reach the broker at {redact(self.settings.broker)}: {_reason(exc)} "
                             "(start Redis, or set fleet.broker / KIT_FLEET__BROKER)") from None

    def _backend_call(self, fn, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            if exc.__class__.__module__.startswith(("redis", "kombu")):
                raise FleetError(f"cannot reach the result backend at {redact(self.settings.backend)}: "
                                 f"{_reason(exc)}") from None
            raise

    # ------------------------------------------------------------------ members

    def members(self, paths: Iterable[str] | None = None) -> list[Member]:
        """The registry's workspaces, or just `paths` (registered or not; a registered one keeps
        its queue)."""
        members = self.registry.members()
        if paths is None:
            return members
        by_path = {m.path: m for m in members}
        out = []
        for raw in paths:
            path = normalise(raw)
            out.append(by_path.get(path) or Member(path, None, path, None))
        return out

    # ------------------------------------------------------------------ dispatch / wait

    def dispatch(self, kind: str, *, phase: str = "all", paths: Iterable[str] | None = None) -> Batch:
        """Send one task per workspace (to its entry's queue, else fleet.queue)."""
        if kind not in KINDS:
            raise FleetError(f"unknown fleet task {kind!r}; use {', '.join(KINDS)}")
        if kind == "dream":
            from kit.dreaming.runner import normalise_phases

            normalise_phases(phase)  # a bad phase is refused here, not on every worker
        members = self.members(paths)
        if not members:
            raise FleetError(f"no workspaces to {kind}: the registry {self.registry.path} is empty "
                             "(add some with `kit fleet add PATH…`)")
        self._check_broker()
        from kit.fleet.app import TASKS

        args_for = (lambda p: [p, phase]) if kind == "dream" else (lambda p: [p])
        # each record says `queued` before its task is sent: a worker may run a task and record it
        # `running` or `done` before the loop ends, and a later `queued` would hide that run
        planned = [(m.path, str(uuid.uuid4()), m.queue or self.settings.queue) for m in members]
        before = self._backend_call(self.store.queued, kind, [(p, t) for p, t, _ in planned])
        sent: list[tuple[str, str, str]] = []
        try:
            with self.app.producer_or_acquire() as producer:
                for path, task_id, queue in planned:
                    self.app.send_task(TASKS[kind], args=args_for(path), queue=queue, producer=producer,
                                       task_id=task_id)
                    sent.append((path, task_id, queue))
        except BaseException:
            # what was never sent is not queued: those records go back to what they said
            with contextlib.suppress(Exception):
                self.store.restore(kind, {p: before[p] for p, _, _ in planned[len(sent):]})
            raise
        return Batch(kind, tuple(sent))

    def wait(self, batch: Batch, *, progress: Progress | None = None, timeout: float | None = None) -> Waited:
        """Block until every task of `batch` has finished (or `timeout` seconds pass)."""
        from celery.exceptions import TimeoutError as CeleryTimeout
        from celery.result import AsyncResult, ResultSet

        by_id = {t: p for p, t, _ in batch.tasks}
        results = ResultSet([AsyncResult(t, app=self.app) for t in by_id])
        got: dict[str, Outcome] = {}
        total = len(by_id)

        def arrived(task_id: str, value: Any) -> None:
            outcome = _to_outcome(batch.kind, by_id.get(task_id, "?"), task_id, value)
            got[task_id] = outcome
            if progress is not None:
                progress(len(got), total, outcome)

        try:
            self._backend_call(lambda: results.join_native(timeout=timeout, propagate=False, callback=arrived,
                                                           interval=0.2))
        except CeleryTimeout:
            pass
        order = [t for _, t, _ in batch.tasks]
        return Waited(tuple(got[t] for t in order if t in got),
                      tuple(by_id[t] for t in order if t not in got))

    # ------------------------------------------------------------------ status

    def status(self, kinds: Iterable[str] = KINDS) -> list[StatusRow]:
        """Every registered workspace with its last run per kind (one row per kind it has run;
        a workspace with no run yet is one `never` row), then runs of unregistered paths."""
        kinds = [k for k in kinds if k in KINDS]
        records = {k: self._backend_call(self.store.records, k) for k in kinds}
        rows: list[StatusRow] = []
        members = [m.path for m in self.registry.members()]
        registered = set(members)
        for path in members:
            mine = [(k, records[k][path]) for k in kinds if path in records[k]]
            if not mine:
                rows.append(StatusRow(path, None, "never"))
            rows += [_row(k, r, True) for k, r in mine]
        extra = sorted({p for k in kinds for p in records[k]} - registered)
        for path in extra:
            rows += [_row(k, records[k][path], False) for k in kinds if path in records[k]]
        return rows

    def workers(self, timeout: float = 1.0) -> list[str]:
        """Names of the workers that answer a ping within `timeout` seconds."""
        self._check_broker()
        replies = self.app.control.ping(timeout=timeout) or []
        return sorted(name for reply in replies for name in reply)

    def ping(self, timeout: float = 30.0) -> float:
        """Seconds for one no-op task to go through the broker, a worker and the result backend."""
        from kit.fleet.app import PING

        self._check_broker()
        t0 = time.perf_counter()
        self.app.send_task(PING).get(timeout=timeout)
        return time.perf_counter() - t0

    # ------------------------------------------------------------------ processes

    def run_worker(self, *, concurrency: int | None = None, queues: Iterable[str] | None = None,
                   pool: str | None = None, hostname: str | None = None, loglevel: str = "info") -> None:
        """Run a Celery worker for Kit's tasks in this process until it is stopped."""
        argv = ["worker", f"--loglevel={loglevel}", f"--hostname={hostname or f'kit.{os.getpid()}@%h'}",
                f"--queues={','.join(queues or [self.settings.queue])}"]
        if concurrency:
            argv.append(f"--concurrency={concurrency}")
        if pool:
            argv.append(f"--pool={pool}")
        self.app.worker_main(argv)

    def run_beat(self, *, loglevel: str = "info", schedule_file: str | None = None) -> None:
        """Run Celery beat with one entry per workspace's dreaming.schedule (kit.fleet.beat)."""
        from kit.paths import fleet_data_dir

        target = schedule_file or str(fleet_data_dir() / "beat-schedule")
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        self.app.start(["beat", f"--loglevel={loglevel}", f"--schedule={target}",
                        "--scheduler=kit.fleet.beat:FleetScheduler"])


def _need_extra() -> None:
    import importlib.util

    missing = [m for m in ("celery", "redis") if importlib.util.find_spec(m) is None]
    if missing:
        raise FleetError(f"the fleet needs {' and '.join(missing)}: pip install 'kit-agent[fleet]'")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    return text.splitlines()[0]


def _to_outcome(kind: str, path: str, task_id: str, value: Any) -> Outcome:
    if isinstance(value, dict):
        return Outcome.from_json(value)
    if isinstance(value, WorkspaceFailed) and value.outcome is not None:
        return value.outcome
    # the task died in a way that left no outcome (hard time limit, an unknown task …)
    message = f"{value.__class__.__name__}: {value}" if isinstance(value, BaseException) else str(value)
    return Outcome(kind=kind, path=path, task_id=task_id, state="failed", exit_code=1, started_at="",
                   finished_at="", duration_s=0.0, worker="", error=message)


def _row(kind: str, r: dict[str, Any], registered: bool) -> StatusRow:
    return StatusRow(path=r.get("path", "?"), kind=kind, state=r.get("state", "?"), result=r.get("result"),
                     finished_at=r.get("finished_at"), duration_s=r.get("duration_s"), summary=r.get("summary"),
                     error=r.get("error"), failures=int(r.get("failures") or 0), last_ok_at=r.get("last_ok_at"),
                     queued_at=r.get("queued_at"), started_at=r.get("started_at"), worker=r.get("worker"),
                     registered=registered)
