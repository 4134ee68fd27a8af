"""Keyword search without embeddings (fts-only), stemming, and rebuilding an index of an older schema."""

from __future__ import annotations

import json
import sqlite3

import pytest

from helpers_memory import undated_filler, write
from kit.memory.index import SCHEMA_VERSION, MemoryIndex
from kit.memory.search import SearchSettings
from kit.memory.service import Memory, doctor_checks

NOW = "2026-05-07T09:00:00+00:00"
DEPLOY_NOTES = {
    "memory/2026-05-01.md": "# 2026-05-01\n\n- Deploys happen on Tuesdays after the standup\n",
    "memory/2026-05-03.md": "# 2026-05-03\n\n- To deploy the api run make ship from the release branch\n",
    "memory/2026-05-05.md": "# 2026-05-05\n\n- The deploy key for the mirror rotates every month\n",
}


@pytest.fixture(autouse=True)
def _frozen_clock(kit_now):
    kit_now(NOW)


def seed(root, fillers: int = 40) -> None:
    undated_filler(root, fillers)
    for rel, text in DEPLOY_NOTES.items():
        write(root, rel, text)


@pytest.mark.parametrize("fillers", [0, 4, 40])
def test_fts_only_keeps_every_keyword_match_even_below_min_score(workspace, fillers):
    """A note holding the question's one word scores 1 however small the workspace (keyword cover:
    bm25() alone is 0 with no other notes, FTS5 floors the IDF of a word half the chunks hold).
    A note holding one of two words scores less, below min_score in a small workspace; in fts-only
    mode every match is kept all the same. (The untouched MEMORY.md template is no chunk.)"""
    seed(workspace.root, fillers)
    mem = Memory(workspace, embedder=None)
    result = mem.search("deploy")
    assert result.mode == "fts-only"
    assert sorted(h.path for h in result.results) == sorted(DEPLOY_NOTES)
    assert all(h.vector_score is None for h in result.results)
    assert [h.text_score for h in result.results] == [1.0, 1.0, 1.0]
    both = mem.search("deploy tuesday")
    assert both.results[0].path == "memory/2026-05-01.md" and both.results[0].text_score == 1.0
    assert sorted(h.path for h in both.results) == sorted(DEPLOY_NOTES)
    below = [h for h in both.results if h.relevance < SearchSettings().min_score]
    assert len(below) == {0: 2, 4: 2, 40: 0}[fillers]  # what a min_score-only keep rule would drop
    assert mem.search("armadillo").results == ()  # no match is still no match


def test_fts_only_cli_search_shows_the_matches(ws_path, cli):
    (ws_path / "kit.yaml").write_text("memory:\n  embedding:\n    model: ./no-such-model\n")
    seed(ws_path)
    out = cli("memory", "search", "deploy", "-w", ws_path)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "mode: fts-only (see `kit doctor`)"
    assert lines[1] == "embeddings off: model folder './no-such-model' does not exist; Kit never downloads"
    assert "no matches" not in out.output
    assert sorted(line.split()[0] for line in lines if line.startswith("memory/2026-")) == [
        "memory/2026-05-01.md:3", "memory/2026-05-03.md:3", "memory/2026-05-05.md:3"]
    doc = json.loads(cli("memory", "search", "deploy", "--json", "-w", ws_path).output)
    assert doc["mode"] == "fts-only" and len(doc["results"]) == 3


def test_words_are_stemmed(workspace):
    seed(workspace.root)
    mem = Memory(workspace, embedder=None)
    for query in ("deploy", "deploys", "deployed", "deploying"):
        found = {h.path: h for h in mem.search(query).results}
        assert sorted(found) == sorted(DEPLOY_NOTES), query
        assert found["memory/2026-05-01.md"].text_score > 0, query
    sql = mem.index().conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]
    assert "tokenize='porter unicode61 remove_diacritics 2'" in sql


def _downgrade_to_schema_1(path) -> None:
    """Turn a current index into what Kit built before stemming: unicode61 word table, schema 1."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TABLE chunks_fts")
        conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
        conn.execute("INSERT INTO chunks_fts(rowid, text) SELECT id, text FROM chunks")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
        conn.execute("INSERT INTO embedding_cache(model, hash, dim, vector) VALUES ('m', 'h', 1, x'0000803f')")
    conn.close()


def test_an_index_of_the_old_schema_is_rebuilt_on_open_and_searches(workspace):
    seed(workspace.root)
    mem = Memory(workspace, embedder=None)
    mem.sync()
    mem.close()
    path = workspace.kit_dir / "index.db"
    _downgrade_to_schema_1(path)
    conn = sqlite3.connect(path)
    stemmed = conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'deploy'").fetchone()[0]
    conn.close()
    assert stemmed == 2  # the old table does not find "Deploys"

    messages = [f.message for f in doctor_checks(workspace)]
    assert (f"memory index was built by another Kit (schema 1, now {SCHEMA_VERSION}): the next "
            "`kit memory index` or search rebuilds it") in messages

    fresh = Memory(workspace, embedder=None)
    idx = fresh.index()
    assert idx.rebuilt_from == "1" and idx.meta("schema") == str(SCHEMA_VERSION)
    assert idx.counts()["files"] == 0  # dropped: the next sync re-chunks everything
    assert idx.conn.execute("SELECT COUNT(*) FROM embedding_cache WHERE model = 'm'").fetchone()[0] == 1
    found = fresh.search("deploy")
    assert sorted(h.path for h in found.results) == sorted(DEPLOY_NOTES)
    assert all(h.text_score > 0 for h in found.results)
    fresh.close()
    again = MemoryIndex(path)  # a current index is left alone
    assert again.rebuilt_from is None and again.counts()["files"] == 44
    again.close()


def test_status_says_why_embeddings_are_off(ws_path, cli):
    (ws_path / "kit.yaml").write_text("memory:\n  embedding:\n    model: ./no-such-model\n")
    out = cli("memory", "status", "-w", ws_path)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[1].startswith("mode      fts-only   model -   backend -   fts5 yes")
    assert lines[2] == ("          embeddings off: model folder './no-such-model' does not exist; "
                        "Kit never downloads")
    doc = json.loads(cli("memory", "status", "--json", "-w", ws_path).output)
    assert doc["mode"] == "fts-only" and doc["model"] is None
    assert doc["embedding_error"] == "model folder './no-such-model' does not exist; Kit never downloads"


def test_bm25_ranks_are_fts5s_own_bm25_to_the_last_bit(workspace):
    """Search ranks an OR of the question's words itself (FTS5 scores every row the OR matches
    before LIMIT cuts, 5–8 ms at 10k chunks) from FTS5's own statistics: the same (id, rank) list,
    float for float, as `bm25()`, for stems, a word twice in a row, a word no note holds and CJK
    trigrams — and again after a write changed the row lengths. A term FTS5 reads as a phrase is
    left to FTS5."""
    from kit.memory.search import _quote, bm25_ranks

    seed(workspace.root, 12)
    write(workspace.root, "memory/2026-05-06.md",
          "# 2026-05-06\n\n- Deploy deploy deploy: the Tuesday release slipped\n- 用户喜欢喝咖啡，不加糖\n"
          "- 他喜欢喝茶\n")
    mem = Memory(workspace, embedder=None)
    mem.sync()
    idx = mem.index()
    asked = [(["deploy"], False), (["deploy", "tuesday"], False), (["deploys", "deployed", "release"], False),
             (["armadillo", "deploy"], False), (["armadillo"], False), (["喜欢喝", "咖啡不"], True)]

    def check() -> None:
        for terms, trigram in asked:
            ranked = bm25_ranks(idx, terms, 50, trigram=trigram)
            assert ranked is not None
            assert ranked[0] == idx.text_search(" OR ".join(map(_quote, terms)), 50, trigram=trigram), terms
            assert [list(ids) for ids in ranked[1]] == [
                list(idx.postings(_quote(t), trigram=trigram)) for t in terms]

    check()
    assert bm25_ranks(idx, ["deploy"], 50)[0][0][0] == max(  # the note saying it three times wins
        r.id for r in idx.chunk_rows(i for i, _ in idx.text_search('"deploy"', 50)).values()
        if r.path == "memory/2026-05-06.md")
    write(workspace.root, "memory/2026-05-07.md", "# 2026-05-07\n\n- Deploy the long way round, " + "slowly " * 40 + "\n")
    mem.sync()
    check()
    assert bm25_ranks(idx, ["re-deploy"], 50) is None  # two tokens: a phrase
