"""The dreaming schedule: cron syntax via croniter, evaluated in `dreaming.timezone`."""

from __future__ import annotations

from datetime import datetime, tzinfo

from kit import clock
from kit.errors import ConfigError
from kit.paths import CONFIG_FILE


def zone(name: str | None) -> tzinfo:
    """The named zone; without a name, the clock's own zone (local time, or KIT_NOW's offset)."""
    if not name:
        return clock.now().tzinfo  # type: ignore[return-value]
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"dreaming.timezone: unknown time zone {name!r}", path=CONFIG_FILE) from exc


def validate(schedule: str) -> None:
    from croniter import croniter

    if not croniter.is_valid(schedule):
        raise ConfigError(f"dreaming.schedule: {schedule!r} is not a valid cron expression", path=CONFIG_FILE)


def next_run(schedule: str, tz_name: str | None, after: datetime) -> datetime:
    """The first time strictly after `after` that `schedule` fires, in the schedule's zone."""
    from croniter import croniter

    validate(schedule)
    local = after.astimezone(zone(tz_name))
    return croniter(schedule, local).get_next(datetime)


class Scheduler:
    """When the next scheduled dream is due. `kit serve` asks it every few seconds.

    It re-reads the schedule from the (hot-reloaded) config each time, so editing kit.yaml takes
    effect without a restart.
    """

    def __init__(self) -> None:
        self.key: tuple[str, str | None] | None = None
        self.next: datetime | None = None

    def due(self, schedule: str, tz_name: str | None, now: datetime) -> bool:
        key = (schedule, tz_name)
        if key != self.key or self.next is None:
            self.key = key
            self.next = next_run(schedule, tz_name, now)
            return False
        if now >= self.next:
            self.next = next_run(schedule, tz_name, now)
            return True
        return False
