"""The search examples of README.md on a fresh workspace, with the real model: what they show must be
what a new user gets. In a workspace of one note FTS5's bm25() is ~0 for every word (its IDF of a
word half the chunks hold is floored), so these pin the keyword cover that keeps an exact word
match scoring at any index size."""

from __future__ import annotations

import json

import pytest

from kit import Workspace, init_workspace

NOW = "2026-05-07T09:00:00+00:00"


@pytest.fixture(autouse=True)
def _frozen_clock(kit_now):
    kit_now(NOW)


def test_the_library_example_finds_the_note_it_just_wrote(tmp_path, shared_embedders, real_embedder):
    root = tmp_path / "my-agent"
    init_workspace(root)
    # README "As a library", step for step (the shared Embedders only spare the test a model load)
    with Workspace.open(root, embedders=shared_embedders) as ws:
        ws.memory.write("Deploys need the VPN", topic="ops")
        result = ws.memory.search("how do I deploy")
    assert result.mode == "hybrid"
    assert [(h.path, h.start_line, h.snippet) for h in result.results] == [
        ("memory/2026-05-07.md", 5, "- Deploys need the VPN")]
    hit = result.results[0]
    assert hit.text_score == 1.0  # the one word asked, held: bm25() alone gives ~0 here
    assert hit.vector_score < 0.35  # the vector side alone would not keep it


def test_the_quickstart_search_finds_the_note(ws_path, cli, real_embedder):
    # README's first commands: kit memory write … --topic deploys, then kit memory search
    assert cli("memory", "write", "Ada prefers Tuesday deploys", "--topic", "deploys", "-w", ws_path).exit_code == 0
    out = cli("memory", "search", "when do we deploy?", "--json", "-w", ws_path)
    assert out.exit_code == 0
    hits = json.loads(out.stdout)["results"]
    assert [(h["path"], h["snippet"]) for h in hits] == [("memory/2026-05-07.md", "- Ada prefers Tuesday deploys")]
    assert hits[0]["text_score"] == 1.0
