"""A month of notes and recalls, day by day with KIT_NOW: what dreaming promotes and what it must not."""

from __future__ import annotations

import re

import pytest

from helpers_dream import days, recall, tree, write_note
from kit.dreaming.runner import run_dream

FACTS = {
    "oat": "Alice drinks her flat white with oat milk, never dairy.",
    "deploy": "Production deploys happen on Tuesdays after the 10:00 standup.",
    "dentist": "Alice's dentist is Dr. Okafor at the Harbour Street clinic.",
    "one_query": "The quarterly report template lives in the Finance shared drive.",
    "deleted": "Bob's birthday party is at the climbing gym on the 14th.",
    "shell": "$ kubectl rollout restart deployment/api -n production",
    "noise": "Had a sandwich for lunch and the weather was grey.",
}


@pytest.fixture
def month(workspace, monkeypatch):
    """Notes for May 2026; each fact lives in the note of its day."""
    root = workspace.root
    write_note(root, "2026-05-01", [FACTS["oat"], FACTS["noise"]])
    write_note(root, "2026-05-02", [FACTS["deploy"], FACTS["shell"]])
    write_note(root, "2026-05-03", [FACTS["dentist"], FACTS["one_query"], FACTS["deleted"]])
    monkeypatch.setenv("KIT_NOW", "2026-05-03T12:00:00+00:00")
    return workspace


def _promoted_keys(text: str) -> list[str]:
    return re.findall(r"<!-- kit:promoted key=(\S+)", text)


def test_thirty_days(month, monkeypatch):
    ws = month
    queries = {
        "oat": ["what milk does alice take", "coffee order for alice", "alice dairy", "alice drink preferences"],
        "deploy": ["when do we deploy", "release day", "production deploy schedule"],
        "dentist": ["alice dentist", "who is the dentist", "clinic address"],
        "deleted": ["bob birthday", "where is the party", "bob party gym"],
        "shell": ["restart api", "kubectl restart", "how to restart the api deployment"],
    }
    note_day = {"oat": "2026-05-01", "deploy": "2026-05-02", "dentist": "2026-05-03", "deleted": "2026-05-03",
                "shell": "2026-05-02"}
    promoted_runs: list[list[str]] = []
    gone: set[str] = set()
    for i, day in enumerate(days("2026-05-04", 27)):
        monkeypatch.setenv("KIT_NOW", f"{day}T09:00:00+00:00")
        if i < 12:
            for name, qs in queries.items():
                if name == "deleted" and i > 4:
                    continue  # its line is gone: search no longer finds it
                if i % 2 == 0 or name in ("oat", "shell"):
                    recall(ws, day, FACTS[name], qs[i % len(qs)], score=0.82, note_day=note_day[name],
                           line=5 if name == "deleted" else None)
        if i == 3:
            # one query, one day, many times: not consolidated
            for _ in range(9):
                recall(ws, day, FACTS["one_query"], "quarterly report template", score=0.95,
                       note_day="2026-05-03")
        if i == 4:
            # recalled this morning, then the user deletes the line before tonight's dream
            note = ws.root / "memory" / "2026-05-03.md"
            note.write_text(note.read_text().replace(f"- {FACTS['deleted']}\n", ""), encoding="utf-8")
        monkeypatch.setenv("KIT_NOW", f"{day}T23:00:00+00:00")
        result = run_dream(ws)
        promoted_runs.append(list(result.promoted))
        gone.update(d.ranked.cand.key for d in result.decisions if d.action == "gone")
    memory = (ws.root / "MEMORY.md").read_text()
    keys = _promoted_keys(memory)
    assert sorted(keys) == ["memory/2026-05-01.md:3:3", "memory/2026-05-02.md:3:3", "memory/2026-05-03.md:3:3"]
    assert FACTS["oat"] in memory and FACTS["deploy"] in memory and FACTS["dentist"] in memory
    for name in ("one_query", "deleted", "shell", "noise"):
        assert FACTS[name] not in memory
    # the deleted line passed its gates but was dropped at rehydration
    assert gone == {"memory/2026-05-03.md:5:5"}
    # nothing promoted twice: each key appears in exactly one run's promotions
    flat = [k for run in promoted_runs for k in run]
    assert sorted(flat) == sorted(set(flat)) == sorted(keys)
    # the user's own text is untouched at the top
    from kit.paths import bundled

    assert memory.startswith((bundled("workspace") / "MEMORY.md").read_text().rstrip("\n") + "\n\n## Promoted")
    assert "## Promoted memories" in memory


def test_explain_says_why(month, monkeypatch, cli):
    ws = month
    for day, q in zip(days("2026-05-04", 3), ["milk", "coffee", "dairy"], strict=True):
        recall(ws, day, FACTS["oat"], q, note_day="2026-05-01")
    for _ in range(5):
        recall(ws, "2026-05-06", FACTS["one_query"], "report template", note_day="2026-05-03")
    monkeypatch.setenv("KIT_NOW", "2026-05-06T20:00:00+00:00")
    import json

    res = cli("memory", "explain", "quarterly report template", "--json", "-w", ws.root)
    from kit.dreaming.explain import explain

    data = explain(ws, "quarterly report template").to_json()
    assert data["key"] == "memory/2026-05-03.md:4:4"
    assert set(data["signals"]) == {
        "recall_count", "total_score", "max_score", "unique_queries", "recall_days", "first_day", "last_day",
        "span_days", "days_since_last_recall", "concept_tags", "light_hits", "days_since_light", "rem_hits",
        "days_since_rem"}
    assert data["signals"]["recall_count"] == 5
    assert (data["signals"]["first_day"], data["signals"]["last_day"]) == ("2026-05-06", "2026-05-06")
    assert data["signals"]["unique_queries"] == 1 and data["signals"]["recall_days"] == 1
    assert data["gates"]["min_unique_queries"] == {"passed": False, "value": 1, "threshold": 2}
    assert "min_unique_queries" in data["blocked_by"]
    assert [h["query"] for h in data["history"]] == ["report template"] * 5
    by_key = explain(ws, "memory/2026-05-01.md:3:3").to_json()
    assert by_key["snippet"] == f"- {FACTS['oat']}"
    assert by_key["signals"]["recall_days"] == 3
    assert set(by_key["components"]) == {"relevance", "frequency", "diversity", "recency", "consolidation",
                                         "conceptual"}
    assert res.exit_code == 0
    assert json.loads(res.output) == data


def test_dry_run_writes_nothing(month, monkeypatch):
    ws = month
    for day, q in zip(days("2026-05-04", 4), ["milk", "coffee", "dairy", "drink"], strict=True):
        recall(ws, day, FACTS["oat"], q, note_day="2026-05-01")
    monkeypatch.setenv("KIT_NOW", "2026-05-07T20:00:00+00:00")
    before = tree(ws.root)
    result = run_dream(ws, dry_run=True)
    assert result.applied is False
    assert result.promoted == ("memory/2026-05-01.md:3:3",)
    assert result.changed == ()
    assert tree(ws.root) == before
    assert not (ws.root / ".kit" / "locks").exists()
    # and the real run then does what the dry run said
    assert run_dream(ws).promoted == ("memory/2026-05-01.md:3:3",)
    assert tree(ws.root) != before
