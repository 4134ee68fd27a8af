"""`kit fleet beat`: one schedule entry per workspace, each in its own time zone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytest.importorskip("celery")

from kit.fleet.beat import EntryPlanner, zoned_cron  # noqa: E402
from kit.fleet.settings import load_settings  # noqa: E402
from kit.init import init_workspace  # noqa: E402


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_a_schedule_fires_at_its_local_time_in_its_own_zone():
    now = at("2026-01-15T01:59:00+00:00")
    berlin = zoned_cron("0 3 * * *", "Europe/Berlin", nowfun=lambda: now)  # 03:00 CET = 02:00 UTC
    due, wait = berlin.is_due(at("2026-01-14T02:00:00+00:00"))
    assert not due and wait == 60.0
    later = zoned_cron("0 3 * * *", "Europe/Berlin", nowfun=lambda: at("2026-01-15T02:00:30+00:00"))
    due, wait = later.is_due(at("2026-01-14T02:00:00+00:00"))
    assert due and wait == pytest.approx(24 * 3600 - 30)
    summer = zoned_cron("0 3 * * *", "Europe/Berlin", nowfun=lambda: at("2026-07-15T01:00:30+00:00"))
    assert summer.is_due(at("2026-07-14T01:00:00+00:00"))[0]  # 03:00 CEST = 01:00 UTC
    tokyo = zoned_cron("0 3 * * *", "Asia/Tokyo", nowfun=lambda: now)
    assert tokyo.next_after(now) == at("2026-01-15T18:00:00+00:00")


def test_a_missed_night_runs_once_when_beat_comes_back():
    back = at("2026-01-18T09:00:00+00:00")  # beat was down for three nights
    s = zoned_cron("0 3 * * *", "UTC", nowfun=lambda: back)
    due, wait = s.is_due(at("2026-01-15T03:00:00+00:00"))
    assert due and wait == 18 * 3600  # once now, then the next 03:00


def test_schedules_survive_pickling_for_the_beat_state_file():
    import pickle

    s = zoned_cron("*/5 * * * *", "America/New_York")
    assert pickle.loads(pickle.dumps(s)) == s


def test_entries_one_per_enabled_workspace_with_its_queue(tmp_path, monkeypatch):
    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    for p in (a, b, c):
        init_workspace(p)
    (a / "kit.yaml").write_text('dreaming:\n  enabled: true\n  schedule: "30 2 * * *"\n  timezone: Asia/Tokyo\n')
    (b / "kit.yaml").write_text("dreaming:\n  enabled: false\n")
    (c / "kit.yaml").write_text("dreaming:\n  enabled: true\nmemory:\n  serch: {}\n")  # a typo elsewhere
    monkeypatch.setenv("KIT_FLEET__REGISTRY", str(tmp_path / "fleet.yaml"))
    settings = load_settings()
    planner = EntryPlanner(settings)
    planner.registry.add([str(a), str(b)])
    planner.registry.add([str(c)], queue="shard-c")
    entries = planner.entries()
    assert sorted(entries) == [f"dream {a}", f"dream {c}"]
    assert entries[f"dream {a}"]["schedule"] == zoned_cron("30 2 * * *", "Asia/Tokyo")
    assert entries[f"dream {a}"]["args"] == (str(a), "all") and entries[f"dream {a}"]["task"] == "kit.fleet.dream"
    assert entries[f"dream {c}"]["options"] == {"queue": "shard-c"}  # the valid settings still apply
    assert "unknown key 'memory.serch'" in planner.problems[str(c)]
    monkeypatch.setenv("KIT_FLEET__HEARTBEAT_SCHEDULE", "*/30 * * * *")
    with_hb = EntryPlanner(load_settings()).entries()
    assert sorted(k for k in with_hb if k.startswith("heartbeat ")) == [f"heartbeat {p}" for p in (a, b, c)]
