from __future__ import annotations

from datetime import date

import pytest

from kit import clock
from kit.errors import KitError


def test_kit_now_freezes_the_clock(kit_now):
    kit_now("2026-05-07T09:30:00+02:00")
    assert clock.now().isoformat() == "2026-05-07T09:30:00+02:00"
    assert clock.today() == date(2026, 5, 7)
    assert clock.timestamp() == clock.now().timestamp()
    kit_now("2026-05-07T23:00:00Z")
    assert clock.now().utcoffset().total_seconds() == 0


def test_naive_kit_now_is_local(kit_now):
    kit_now("2026-01-02 03:04:05")
    moment = clock.now()
    assert moment.tzinfo is not None and (moment.hour, moment.minute) == (3, 4)


def test_bad_kit_now_is_a_clear_error(kit_now):
    kit_now("yesterday")
    with pytest.raises(KitError, match="KIT_NOW='yesterday' is not an ISO 8601"):
        clock.now()


def test_real_clock_is_aware():
    assert clock.now().tzinfo is not None
