"""The one clock. Everything that cares about time reads it here.

`KIT_NOW` (ISO 8601) freezes the clock for tests and demos. A naive value is taken as local time.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, date, datetime

from kit.errors import KitError


def _parse(value: str) -> datetime:
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise KitError(f"KIT_NOW={value!r} is not an ISO 8601 date or time") from exc
    if moment.tzinfo is None:
        moment = moment.astimezone()  # naive → the system's local zone
    return moment


def now() -> datetime:
    """The current time, timezone-aware; `KIT_NOW` overrides it."""
    frozen = os.environ.get("KIT_NOW")
    if frozen:
        return _parse(frozen)
    return datetime.now(UTC).astimezone()


def today() -> date:
    """Today's date in local time (or in KIT_NOW's own offset)."""
    return now().date()


def timestamp() -> float:
    """Seconds since the epoch, honouring `KIT_NOW`."""
    if os.environ.get("KIT_NOW"):
        return now().timestamp()
    return time.time()


def git_dates() -> dict[str, str]:
    """GIT_AUTHOR_DATE and GIT_COMMITTER_DATE for a commit Kit makes: this clock (KIT_NOW: a demo, a
    test, a replayed night), as the files it commits are dated, unless the environment sets them."""
    when = now().isoformat(timespec="seconds")
    return {name: os.environ.get(name, when) for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")}
