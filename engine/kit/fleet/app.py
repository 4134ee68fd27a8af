"""The Celery app: Kit's tasks and the delivery settings that make them safe to run at least once.

Imported only by the fleet (it imports Celery). `make_app(settings)` builds a fresh app; workers,
beat and the controller each build one from the same settings.

- `task_acks_late` + `task_reject_on_worker_lost`: a message is acknowledged when its task has
  finished, so a task whose worker dies is delivered again (Redis hands an unacknowledged message
  to another worker after `fleet.visibility_timeout_s`).
- `worker_prefetch_multiplier=1`: a worker reserves only what it runs; a long dream never holds
  other workspaces' tasks hostage.
- soft time limit `fleet.task_time_limit_s` (the dream rolls back and fails), hard limit 30 s later.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery, Task
from celery.exceptions import Ignore

from kit.fleet.jobs import AlreadyRunning, Outcome, Runtime, WorkspaceFailed
from kit.fleet.settings import FleetSettings
from kit.fleet.status import StatusStore

log = logging.getLogger("kit.fleet")

TASKS = {"dream": "kit.fleet.dream", "index": "kit.fleet.index", "heartbeat": "kit.fleet.heartbeat"}
PING = "kit.fleet.ping"


def transport_options(settings: FleetSettings) -> dict[str, Any]:
    vt = settings.visibility_timeout_s
    # sweep for abandoned messages often enough that a dead worker's task comes back soon after vt;
    # a worker that dies while it holds the sweep's mutex blocks every sweep until the mutex
    # expires (kombu's default: 300 s), so it expires with the visibility timeout at most
    return {"visibility_timeout": vt, "unacked_restore_interval": max(1, min(60, int(vt // 20) or 1)),
            "unacked_restore_throttle": 1, "unacked_mutex_expire": int(max(5, min(300, vt)))}


def make_app(settings: FleetSettings) -> Celery:
    app = Celery("kit", broker=settings.broker, backend=settings.backend, set_as_current=False)
    app.kit_settings = settings  # read by the beat scheduler (kit.fleet.beat)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_track_started=True,
        task_default_queue=settings.queue,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=7 * 24 * 3600,
        result_extended=True,
        broker_transport_options=transport_options(settings),
        broker_connection_retry_on_startup=True,
        # on broker loss running tasks finish; their messages come back after the visibility
        # timeout and are recognised as done (the workspace keeps the ids of finished tasks)
        worker_cancel_long_running_tasks_on_connection_loss=False,
        task_soft_time_limit=settings.task_time_limit_s,
        task_time_limit=settings.task_time_limit_s + 30,
        timezone="UTC",
        enable_utc=True,
        worker_hijack_root_logger=True,
        beat_scheduler="kit.fleet.beat:FleetScheduler",
    )

    class KitTask(Task):
        """Holds this worker process's Runtime and status store (created in the process that runs
        tasks, after the pool forked, and kept for every task it runs)."""

        _runtime: Runtime | None = None
        _store: StatusStore | None = None

        @property
        def runtime(self) -> Runtime:
            if self._runtime is None or self._runtime.pid != os.getpid():
                type(self)._runtime = Runtime(worker=f"{self.request.hostname or 'worker'}:{os.getpid()}",
                                              stale_after=settings.task_time_limit_s + 60)
                type(self)._store = None
            return self._runtime  # type: ignore[return-value]

        @property
        def store(self) -> StatusStore:
            if self._store is None:
                type(self)._store = StatusStore.from_url(settings.backend)
            return self._store  # type: ignore[return-value]

    def execute(task: KitTask, kind: str, path: str, phase: str = "all") -> dict[str, Any]:
        runtime, task_id = task.runtime, task.request.id

        def on_start() -> None:
            _quietly(task.store.running, kind, path, task_id, runtime.worker)

        try:
            outcome = runtime.run(kind, path, task_id=task_id, phase=phase, on_start=on_start)
        except AlreadyRunning:
            log.info("%s %s: task %s is already running elsewhere; this delivery does nothing", kind, path, task_id)
            raise Ignore() from None
        if not outcome.duplicate:
            _quietly(task.store.finished, outcome)
        _log(outcome)
        if outcome.state == "failed":
            raise WorkspaceFailed(outcome.error or "failed", outcome.to_json())
        return outcome.to_json()

    @app.task(name=TASKS["dream"], bind=True, base=KitTask)
    def dream(self, path: str, phase: str = "all") -> dict[str, Any]:
        """Dream one workspace (`kit dream --phase PHASE`)."""
        return execute(self, "dream", path, phase)

    @app.task(name=TASKS["index"], bind=True, base=KitTask)
    def index(self, path: str) -> dict[str, Any]:
        """Bring one workspace's memory index up to date (`kit memory index`)."""
        return execute(self, "index", path)

    @app.task(name=TASKS["heartbeat"], bind=True, base=KitTask)
    def heartbeat(self, path: str) -> dict[str, Any]:
        """One heartbeat run (skipped while HEARTBEAT.md has no tasks)."""
        return execute(self, "heartbeat", path)

    @app.task(name=PING, bind=True)
    def ping(self) -> dict[str, Any]:
        """A no-op: measures the broker round trip and shows a worker is consuming."""
        return {"worker": self.request.hostname, "pid": os.getpid()}

    return app


def _quietly(fn, *args: Any) -> None:
    """Status records are a view; failing to write one must not fail the workspace's task."""
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001
        log.warning("fleet status not recorded: %s", exc)


def _log(outcome: Outcome) -> None:
    extra = " (a second delivery of a finished task; not run again)" if outcome.duplicate else ""
    line = f"{outcome.kind} {outcome.path}: {outcome.state} in {outcome.duration_s:.2f} s"
    detail = outcome.error if outcome.state in ("failed", "busy") else outcome.summary
    (log.warning if outcome.state == "failed" else log.info)("%s%s%s", line, f" — {detail}" if detail else "", extra)
