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
    # the JSON says what it recorded, as the text output does (a new user found it missing)
    assert json.loads(recorded.output)["recorded"] == 2 and "recorded" not in json.loads(plain.output)
    assert status["recall"]["by_source"] == {"cli": 2}
    assert status["files"] == 16 and status["mode"] == "hybrid" and status["fresh"] is True
    assert status["chunks"] == status["embedded_chunks"] > 0
    assert status["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    text = cli("memory", "status", "-w", root)
    # events on distinct passages (line ranges), not on notes
    passages = len({(r["path"], r["start_line"], r["end_line"]) for r in daily_hits})
    assert f"recalls   2 events on {passages} passage{'s' * (passages != 1)} over 1 day (cli 2)" in text.output
    assert "fresh" in text.output


def test_a_recorded_search_keeps_its_top_score_and_each_hits_rank(recall_ws):
    from kit.memory.recall import top_scores

    result = recall_ws.search("zebra crossing Elm Street", record=True, source="tool")
    with recall_ws.ws.open_state() as db:
        logged = events(db)
        tops = top_scores(db)
    order = [h.path for h in result.results]
    assert {e.search_id for e in logged} == set(tops) == {1}
    assert tops[1] == pytest.approx(max(h.score for h in result.results))  # MEMORY.md hits count for the top
    for event in logged:  # the rank is the hit's place among all results, best first
        assert event.rank == order.index(event.path)


def test_the_agent_reading_a_hit_and_quoting_it_are_logged_as_uses(recall_ws, tmp_path):
    from helpers_agent import write_script
    from kit.agent.loop import Agent
    from kit.memory.recall import uses

    recall_ws.ws.write_text("kit.yaml", "memory:\n  active_recall: {enabled: false}\n")
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "memory_search", "arguments": {"query": "zebra crossing Elm Street"}}]},
        {"tool_calls": [{"name": "memory_get", "arguments": {"path": "memory/2026-05-06.md", "start": 3,
                                                             "lines": 1}}]},
        {"text": "You were nearly hit at the zebra crossing on Elm Street."},
    ])
    agent = Agent(recall_ws.ws, model=f"script:{script}")
    agent.turn("where was I nearly hit?")
    agent.close()
    with recall_ws.ws.open_state() as db:
        logged = [(u.path, u.start_line, u.end_line, u.kind) for u in uses(db)]
    # read in full with memory_get, and its words reached the reply; the walk note's did not
    assert logged == [("memory/2026-05-06.md", 3, 3, "read"), ("memory/2026-05-06.md", 3, 3, "reply")]


def test_reached_reply_needs_most_of_the_words_not_a_topic():
    from kit.memory.recall import reached_reply

    note = "- Nearly hit at the zebra crossing on Elm Street"
    assert reached_reply(note, "You were nearly hit at the zebra crossing on Elm Street.")
    assert not reached_reply(note, "Elm Street has a zebra crossing.")  # 4 of 6 words: a topic, not a quote
    assert reached_reply("- Dad's mobile number is 07700 900456.", "His number: 07700 900456 (mobile).")
    assert not reached_reply("- Dad's mobile number is 07700 900456.", "Dad's mobile number changed.")
    assert not reached_reply("- ok then", "ok then")  # under 3 words


def test_read_events_share_each_text_and_a_log_not_utf8_raises_as_sqlite3_does(workspace):
    """Each distinct text is one string across the events read (`read_events`); a TEXT value that
    is not UTF-8 raises sqlite3's own error, and the connection reads text as before."""
    import sqlite3

    insert = ("INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, query_hash, "
              "score, day, ts, source) VALUES ('k', 'memory/2026-05-07.md', 1, 1, {}, 'h', {}, 'qh', 0.5, "
              "'2026-05-07', 1.0, 'tool')")
    with workspace.open_state() as db:
        ensure_schema(db)
        db.execute(insert.format("'Ada likes tea'", "'tea'"))
        db.execute(insert.format("'Ada likes tea'", "'Ada likes tea'"))
        first, second = events(db)
        assert first.snippet == "Ada likes tea" and first.snippet is second.snippet is second.query
        assert first.day is second.day and first.query != second.query
        db.execute(insert.format("CAST(X'41FF' AS TEXT)", "'tea'"))
        with pytest.raises(sqlite3.OperationalError, match="Could not decode to UTF-8"):
            events(db)
        assert db.conn.text_factory is str
