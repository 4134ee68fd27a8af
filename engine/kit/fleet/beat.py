"""`kit fleet beat`: Celery beat with one schedule entry per workspace.

Each workspace with `dreaming.enabled` gets an entry `dream <path>` firing on its own
`dreaming.schedule` in its own `dreaming.timezone` (evaluated by kit.dreaming.schedule.next_run,
the function `kit serve` uses, so both agree on every fire time, DST included). With
`fleet.heartbeat_schedule` set, every workspace also gets `heartbeat <path>` (in beat's local time).
The registry and the workspaces' kit.yaml files are re-read every `fleet.beat_refresh_s` (a kit.yaml
is parsed again only when it changed). Last run times persist in the schedule file, so a beat that
was down at 03:00 runs a missed dream once when it comes back, not once per missed night.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from celery.beat import PersistentScheduler
from celery.schedules import BaseSchedule, schedstate

from kit.errors import ConfigError
from kit.fleet.registry import Registry
from kit.fleet.settings import FleetSettings
from kit.paths import CONFIG_FILE

log = logging.getLogger("kit.fleet.beat")


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class zoned_cron(BaseSchedule):  # noqa: N801 - named like Celery's own schedules (crontab, solar)
    """A cron expression evaluated in a named time zone (None: the machine's local time)."""

    def __init__(self, expr: str, tz_name: str | None = None, nowfun=None, app=None):
        from kit.dreaming.schedule import validate

        validate(expr)
        self.expr = expr
        self.tz_name = tz_name
        super().__init__(nowfun=nowfun, app=app)

    def now(self) -> datetime:
        return _aware((self.nowfun or (lambda: datetime.now(UTC)))())

    def next_after(self, moment: datetime) -> datetime:
        from kit.dreaming.schedule import next_run

        return next_run(self.expr, self.tz_name, _aware(moment))

    def remaining_estimate(self, last_run_at: datetime) -> timedelta:
        return self.next_after(last_run_at) - self.now()

    def is_due(self, last_run_at: datetime) -> schedstate:
        now = self.now()
        due = self.next_after(last_run_at)
        if due <= now:
            return schedstate(True, max(1.0, (self.next_after(now) - now).total_seconds()))
        return schedstate(False, max(0.5, (due - now).total_seconds()))

    def __reduce__(self):
        return self.__class__, (self.expr, self.tz_name)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, zoned_cron) and (self.expr, self.tz_name) == (other.expr, other.tz_name)

    def __hash__(self) -> int:
        return hash((self.expr, self.tz_name))

    def __repr__(self) -> str:
        return f"<zoned_cron {self.expr!r} {self.tz_name or 'local time'}>"


class EntryPlanner:
    """The schedule entries for a registry; caches each workspace's settings by kit.yaml stat."""

    def __init__(self, settings: FleetSettings):
        self.settings = settings
        self.registry = Registry(settings.registry)
        self._cache: dict[str, tuple[tuple[int, int], tuple[bool, str, str | None] | None]] = {}
        self.problems: dict[str, str] = {}

    def _dreaming(self, path: str) -> tuple[bool, str, str | None] | None:
        from kit.config import load_config

        cfg_file = os.path.join(path, CONFIG_FILE)
        try:
            st = os.stat(cfg_file)
        except OSError:
            self.problems[path] = f"{CONFIG_FILE} is missing"
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        hit = self._cache.get(path)
        if hit and hit[0] == stamp:
            return hit[1]
        try:
            cfg = load_config(path)
            self.problems.pop(path, None)
        except ConfigError as exc:
            cfg = getattr(exc, "partial", None)  # every valid value still applies, as in a workspace
            self.problems[path] = str(exc)
            if cfg is None:
                self._cache[path] = (stamp, None)
                return None
        value = (cfg.dreaming.enabled, cfg.dreaming.schedule, cfg.dreaming.timezone)
        self._cache[path] = (stamp, value)
        return value

    def entries(self) -> dict[str, dict[str, Any]]:
        from kit.fleet.app import TASKS

        out: dict[str, dict[str, Any]] = {}
        try:
            members = self.registry.members()
        except ConfigError as exc:
            log.error("fleet registry: %s (the schedule keeps its previous entries)", exc)
            raise
        for m in members:
            queue = m.queue or self.settings.queue
            dreaming = self._dreaming(m.path)
            if dreaming and dreaming[0]:
                out[f"dream {m.path}"] = {"task": TASKS["dream"], "schedule": zoned_cron(dreaming[1], dreaming[2]),
                                          "args": (m.path, "all"), "options": {"queue": queue}}
            if self.settings.heartbeat_schedule:
                out[f"heartbeat {m.path}"] = {"task": TASKS["heartbeat"],
                                              "schedule": zoned_cron(self.settings.heartbeat_schedule),
                                              "args": (m.path,), "options": {"queue": queue}}
        return out


class FleetScheduler(PersistentScheduler):
    """PersistentScheduler whose entries come from the fleet registry (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any):
        app = kwargs.get("app") or (args[0] if args else None)
        settings = getattr(app, "kit_settings", None)
        if settings is None:
            raise ConfigError("kit.fleet.beat.FleetScheduler needs the Kit fleet app (run `kit fleet beat`)")
        self.planner = EntryPlanner(settings)
        self._next_refresh = 0.0
        self._said: dict[str, str] = {}
        super().__init__(*args, **kwargs)

    def _plan(self) -> dict[str, dict[str, Any]] | None:
        try:
            entries = self.planner.entries()
        except ConfigError:
            return None
        for path, problem in self.planner.problems.items():
            if self._said.get(path) != problem:
                log.warning("%s: %s", path, problem)
                self._said[path] = problem
        self._next_refresh = time.monotonic() + self.planner.settings.beat_refresh_s
        return entries

    def setup_schedule(self) -> None:
        # the base merges app.conf.beat_schedule into the persisted entries (keeping their last
        # run times), so hand it ours rather than merging afterwards
        planned = self._plan()
        self.app.conf.beat_schedule = planned or {}
        super().setup_schedule()
        log.info("fleet beat: %d schedule entries from %s", len(self.schedule), self.planner.registry.path)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if time.monotonic() >= self._next_refresh:
            planned = self._plan()
            if planned is not None:
                before = set(self.schedule)
                self.merge_inplace(planned)
                if set(self.schedule) != before:
                    log.info("fleet beat: now %d schedule entries", len(self.schedule))
        return min(super().tick(*args, **kwargs), max(1.0, self._next_refresh - time.monotonic()))
