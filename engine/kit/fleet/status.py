"""Per-workspace run records, kept in the result backend (Redis) so that every worker, beat and
the controller see the same table: one hash per kind, `kit:fleet:status:<kind>`, path -> JSON.

A record says what is happening now (`state`: queued | running | done) and how the last finished
run went (`result`, `finished_at`, `duration_s`, `summary`, `error`), plus `last_ok_at` and the
number of `failures` in a row, so a workspace that fails every night stands out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kit import clock

KEY = "kit:fleet:status:{kind}"
RESULT_FIELDS = ("result", "exit_code", "finished_at", "duration_s", "summary", "error", "worker")


def _now() -> str:
    return clock.now().isoformat(timespec="seconds")


class StatusStore:
    def __init__(self, client: Any):
        self.client = client  # a redis.Redis

    @classmethod
    def from_url(cls, url: str) -> StatusStore:
        import redis

        return cls(redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30))

    def _get_many(self, kind: str, paths: list[str]) -> list[dict[str, Any]]:
        raw = self.client.hmget(KEY.format(kind=kind), paths) if paths else []
        return [json.loads(r) if r else {} for r in raw]

    def queued(self, kind: str, items: Iterable[tuple[str, str]]) -> dict[str, dict[str, Any]]:
        """(path, task id) pairs about to be sent to the broker; returns the records they replaced
        ({} for a path with none), for `restore` when a task could not be sent."""
        items = list(items)
        if not items:
            return {}
        now = _now()
        olds = self._get_many(kind, [p for p, _ in items])
        records = {}
        for (path, task_id), old in zip(items, olds, strict=True):
            records[path] = json.dumps({**old, "path": path, "kind": kind, "state": "queued", "task_id": task_id,
                                        "queued_at": now})
        self.client.hset(KEY.format(kind=kind), mapping=records)
        return {path: old for (path, _), old in zip(items, olds, strict=True)}

    def restore(self, kind: str, records: dict[str, dict[str, Any]]) -> None:
        """Put back records `queued` replaced (a path that had none has none again)."""
        key = KEY.format(kind=kind)
        if gone := [p for p, r in records.items() if not r]:
            self.client.hdel(key, *gone)
        if kept := {p: json.dumps(r) for p, r in records.items() if r}:
            self.client.hset(key, mapping=kept)

    def running(self, kind: str, path: str, task_id: str, worker: str) -> None:
        old = self._get_many(kind, [path])[0]
        self.client.hset(KEY.format(kind=kind), path, json.dumps({
            **old, "path": path, "kind": kind, "state": "running", "task_id": task_id, "started_at": _now(),
            "worker": worker}))

    def finished(self, outcome: Any) -> None:
        """Record an Outcome. A `busy` outcome does not hide the run that holds the lock: while a
        record says `running`, a busy duplicate leaves it alone."""
        kind, path = outcome.kind, outcome.path
        old = self._get_many(kind, [path])[0]
        if outcome.state == "busy" and old.get("state") == "running":
            return
        record = {**old, "path": path, "kind": kind, "state": "done", "task_id": outcome.task_id,
                  "started_at": outcome.started_at, "result": outcome.state, "exit_code": outcome.exit_code,
                  "finished_at": outcome.finished_at, "duration_s": outcome.duration_s,
                  "summary": outcome.summary, "error": outcome.error, "worker": outcome.worker}
        if outcome.state in ("ok", "skipped"):
            record["last_ok_at"] = outcome.finished_at
            record["failures"] = 0
        elif outcome.state == "failed":
            record["failures"] = int(old.get("failures") or 0) + 1
        self.client.hset(KEY.format(kind=kind), path, json.dumps(record))

    def records(self, kind: str) -> dict[str, dict[str, Any]]:
        raw = self.client.hgetall(KEY.format(kind=kind))
        return {(k.decode() if isinstance(k, bytes) else k): json.loads(v) for k, v in raw.items()}

    def forget(self, kind: str, paths: Iterable[str]) -> int:
        paths = list(paths)
        return int(self.client.hdel(KEY.format(kind=kind), *paths)) if paths else 0
