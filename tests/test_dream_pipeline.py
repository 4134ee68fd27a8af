"""The whole offline pipeline with the real memory package: notes → index → recorded searches → dream."""

from __future__ import annotations

from helpers_dream import days, write_note
from kit.dreaming.runner import run_dream

OAT = "Alice takes her flat white with oat milk, never dairy."
DEPLOY = "Production deploys only on Tuesdays and Thursdays, after the 10:00 standup."
SHELL = "$ kubectl rollout restart deployment/api -n production"
CHATTER = "The printer on floor 3 jammed again."


def test_recorded_searches_become_promotions(workspace, monkeypatch):
    from kit.memory.service import memory_for

    write_note(workspace.root, "2026-05-01", [OAT, CHATTER])
    write_note(workspace.root, "2026-05-02", [DEPLOY, SHELL])
    monkeypatch.setenv("KIT_NOW", "2026-05-02T18:00:00+00:00")
    mem = memory_for(workspace)
    mem.sync()
    asks = [
        ("how does alice take her coffee", "when can we deploy to production", "restart the api in production"),
        ("alice milk preference", "deploy days", "kubectl restart api"),
        ("what should I order for alice", "is today a deploy day", "restart the api in production"),
        ("does alice drink dairy", "production release schedule", "restart api deployment"),
    ]
    for day, queries in zip(days("2026-05-04", 4), asks, strict=True):
        monkeypatch.setenv("KIT_NOW", f"{day}T10:00:00+00:00")
        for q in queries:
            mem.search(q, record=True, source="tool")
    monkeypatch.setenv("KIT_NOW", "2026-05-07T23:00:00+00:00")
    result = run_dream(workspace)
    assert set(result.promoted) == {"memory/2026-05-01.md:3:3", "memory/2026-05-02.md:3:3"}
    memory = (workspace.root / "MEMORY.md").read_text()
    assert f"- {OAT}\n" in memory and f"- {DEPLOY}\n" in memory
    assert "kubectl" not in memory and "printer" not in memory
    shell = next(r for r in result.ranked if "kubectl" in r.cand.snippet)
    assert shell.blocked_by[0] == "not_junk"
    # promoted memories now answer from MEMORY.md, and those hits are not recall events
    hits = mem.search("alice oat milk", record=True, source="tool")
    assert any(h.path == "MEMORY.md" for h in hits.results)
