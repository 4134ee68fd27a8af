"""The recall log: only daily-note hits, one event per hit with every column filled."""

from __future__ import annotations

import hashlib
import json

import pytest

from helpers_memory import undated_filler, write
from kit import clock
from kit.memory.recall import (
    claim_hash,
    ensure_schema,
    events,
    normalise_claim,
    query_hash,
    record_hits,
)
from kit.memory.service import Memory

NOW = "2026-05-07T09:00:00+00:00"


def test_normalise_claim_and_hashes():
    assert normalise_claim("- **Zebra**   crossing\n  on Elm St <!-- kit:promoted key=a:1:2 claim=x -->") == (
        "**zebra** crossing on elm st"
    )
    assert normalise_claim("12. Ｆｏｏ  BAR") == "foo bar"
    assert normalise_claim("* [x] done item") == "done item"
    assert claim_hash("- Foo  bar") == hashlib.sha1(b"foo bar").hexdigest()[:12]
    assert claim_hash("- Foo bar") == claim_hash("* foo BAR ")
    assert query_hash("Zebra Crossing") == hashlib.sha1(b"zebra crossing").hexdigest()[:12]
    assert query_hash("ZEBRA crossing") == query_hash("zebra CROSSING")


def test_schema_matches_the_shared_contract(workspace):
    with workspace.open_state() as db:
        ensure_schema(db)
        ensure_schema(db)  # idempotent
        columns = [r[1] for r in db.execute("PRAGMA table_info(recall_events)")]
        indexes = {r[1] for r in db.execute("PRAGMA index_list(recall_events)")}
        assert db.version("recall") == 2
        searches = [r[1] for r in db.execute("PRAGMA table_info(recall_searches)")]
        use_columns = [r[1] for r in db.execute("PRAGMA table_info(recall_uses)")]
    # v1's columns (the spec's contract) first, v2's (recall credit) appended
    assert columns == ["id", "key", "path", "start_line", "end_line", "snippet", "claim_hash", "query",
                       "query_hash", "score", "day", "ts", "source", "search_id", "rank"]
    assert {"recall_events_key", "recall_events_day", "recall_events_search"} <= indexes
    assert searches == ["id", "query_hash", "top_score", "results", "day", "ts", "source"]
    assert use_columns == ["id", "path", "start_line", "end_line", "kind", "day", "ts"]


@pytest.fixture
def recall_ws(workspace, real_embedder, kit_now):
    kit_now(NOW)
    undated_filler(workspace.root, 12)
    write(workspace.root, "MEMORY.md", "# Memory\n\n- The zebra crossing on Elm Street is dangerous\n")
    write(workspace.root, "memory/topics/streets.md", "- Zebra crossing repainted on Elm Street last year\n")
    write(workspace.root, "memory/2026-05-06.md", "# 2026-05-06\n\n- Nearly hit at the zebra crossing on Elm Street\n")
    write(workspace.root, "memory/2026-05-04-walk.md", "# 2026-05-04\n\nWalked past the zebra crossing on Elm Street.\n")
    mem = Memory(workspace, embedder=real_embedder)
    mem.sync()
    yield mem
    mem.close()


def test_only_daily_note_hits_are_recorded_with_every_field(recall_ws):
    result = recall_ws.search("zebra crossing Elm Street", record=True, source="tool")
    paths = {h.path for h in result.results}
    assert {"MEMORY.md", "memory/topics/streets.md", "memory/2026-05-06.md", "memory/2026-05-04-walk.md"} <= paths
    assert result.recorded == 2
    with recall_ws.ws.open_state() as db:
        logged = events(db)
    assert sorted(e.path for e in logged) == ["memory/2026-05-04-walk.md", "memory/2026-05-06.md"]
    hits = {h.path: h for h in result.results}
    for event in logged:
        hit = hits[event.path]
        assert event.key == f"{hit.path}:{hit.start_line}:{hit.end_line}"
        assert (event.start_line, event.end_line) == (hit.start_line, hit.end_line)
        assert event.snippet == hit.snippet
        assert event.claim_hash == claim_hash(hit.snippet)
        assert event.query == "zebra crossing Elm Street"
        assert event.query_hash == query_hash("zebra crossing elm street")
        assert event.score == pytest.approx(hit.score)
        assert event.day == "2026-05-07"
        assert event.ts == clock.timestamp()
        assert event.source == "tool"
    keys = {e.key for e in logged}
    assert keys == {"memory/2026-05-06.md:3:3", "memory/2026-05-04-walk.md:3:3"}


def test_searches_record_only_when_asked(recall_ws):
    recall_ws.search("zebra crossing")
    with recall_ws.ws.open_state() as db:
        assert events(db) == []
    recall_ws.search("zebra crossing", record=True, source="active")
    recall_ws.search("Elm Street", record=True)
    with recall_ws.ws.open_state() as db:
        logged = events(db)
        assert {e.source for e in logged} == {"active", "cli"}
        assert len({e.query_hash for e in logged}) == 2
        assert events(db, since_day="2026-05-08") == []
        assert len(events(db, since_day="2026-05-07")) == len(logged)
    assert recall_ws.status().recall.events == len(logged)


def test_record_hits_accepts_json_results_and_rejects_unknown_sources(workspace, kit_now):
    kit_now(NOW)
    results = [
        {"path": "memory/2026-05-01.md", "start_line": 4, "end_line": 5, "score": 0.61, "snippet": "- a fact"},
        {"path": "MEMORY.md", "start_line": 1, "end_line": 2, "score": 0.9, "snippet": "- evergreen"},
        {"path": "memory/archive/promoted.md", "start_line": 1, "end_line": 1, "score": 0.9, "snippet": "- old"},
    ]
    with workspace.open_state() as db:
        assert record_hits(db, "Some Query", results, "tool") == 1
        (event,) = events(db)
        assert (event.key, event.score, event.day) == ("memory/2026-05-01.md:4:5", 0.61, "2026-05-07")
        with pytest.raises(ValueError, match="tool, active, cli"):
            record_hits(db, "q", results, "robot")


def test_cli_search_record_and_status(recall_ws, cli):
    root = recall_ws.ws.root
    plain = cli("memory", "search", "zebra crossing", "--json", "-w", root)
    assert plain.exit_code == 0
    status = json.loads(cli("memory", "status", "--json", "-w", root).output)
    assert status["recall_events"] == 0
    recorded = cli("memory", "search", "zebra crossing", "--json", "--record", "-w", root)
    assert recorded.exit_code == 0
    daily_hits = [r for r in json.loads(recorded.output)["results"] if r["path"].startswith("memory/2026-")]
    status = json.loads(cli("memory", "status", "--json", "-w", root).output)
    assert status["recall_events"] == len(daily_hits) == 2
    assert status["recall"]["by_source"] == {"cli": 2}
    assert status["files"] == 16 and status["mode"] == "hybrid" and status["fresh"] is True
    assert status["chunks"] == status["embedded_chunks"] > 0
    assert status["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    text = cli("memory", "status", "-w", root)
    assert "2 events" in text.output and "fresh" in text.output
