"""The collector is paused for a dream's burst of allocation, and left as it was after it."""

from __future__ import annotations

import gc

import pytest

from kit.dreaming import runner
from kit.gcpause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on():
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_restored_after_even_on_error():
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_someone_disabled_stays_disabled():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


@pytest.mark.parametrize("dry_run", [True, False], ids=["preview", "applied"])
def test_a_dream_runs_its_phases_with_the_collector_paused(workspace, monkeypatch, dry_run):
    from test_dream_cli import seed

    monkeypatch.setenv("KIT_NOW", seed(workspace))
    seen = []
    real_light = runner.run_light

    def light(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_light(*args, **kwargs)

    monkeypatch.setattr(runner, "run_light", light)
    result = runner.run_dream(workspace, dry_run=dry_run)
    assert seen == [False] and gc.isenabled()
    assert (workspace.root / "MEMORY.md").read_text().count("kit:promoted") == (0 if dry_run else len(result.promoted))
    assert dry_run or result.promoted
