"""Kit's `<!-- kit:… -->` comments, one definition (kit.provenance): what search, the index, claims and
the prompt read of a line that holds one."""

from __future__ import annotations

import pytest

from helpers_dream import days
from kit.dreaming.runner import run_dream
from kit.memory.chunker import chunk_markdown
from kit.memory.recall import claim_hash, normalise_claim
from kit.provenance import strip_kit_comments

PROMOTED = "<!-- kit:promoted key=memory/2020-01-01.md:1:1 claim=3f2a9c1b0d4e score=0.812 -->"


@pytest.mark.parametrize(("text", "stripped"), [
    (f"- {PROMOTED} Ada prefers tea", "- Ada prefers tea"),  # between words: one space
    (f"- Ada prefers tea {PROMOTED}\n- Bob", "- Ada prefers tea\n- Bob"),  # at a line's end: the line stays
    (f"{PROMOTED}\n- Ada", "- Ada"),  # alone on its line: the line goes
    (f"- Ada\n{PROMOTED}", "- Ada"),  # alone on the last line: no line break left behind
    (f"x\n  {PROMOTED}  \ny", "x\ny"),
    ("a<!--kit:x-->b", "a b"),
    ("<!-- kit:a --><!-- kit:b --> text", "text"),  # side by side: one gap
    # a comment ending a line is found up to its own "-->", not the next comment's
    ("<!-- kit:a --> text\n<!-- kit:b -->\nmore", "text\nmore"),
    ("<!-- kit:\nspans lines -->\n- Ada", "- Ada"),
    ("<!-- a user comment --> stays", "<!-- a user comment --> stays"),
    ("no comment at all", "no comment at all"),
])
def test_kit_comments_leave_the_text_around_them(text, stripped):
    assert strip_kit_comments(text) == stripped


def test_a_line_with_an_inline_comment_is_the_same_claim_as_without():
    assert normalise_claim(f"- {PROMOTED} Ada prefers tea") == "ada prefers tea"
    assert claim_hash(f"- {PROMOTED} Ada prefers tea") == claim_hash("- Ada prefers tea")
    # the snippet search records is that line's claim too
    assert claim_hash(strip_kit_comments(f"- {PROMOTED} Ada prefers tea")) == claim_hash("- Ada prefers tea")


def test_an_inline_comment_neither_dates_the_chunk_nor_joins_lines():
    text = f"# 2026-05-07\n\n- {PROMOTED} Ada prefers tea\n- Bob owns the deploy {PROMOTED}\n- Cy plays chess\n"
    chunks = chunk_markdown("memory/2026-05-07.md", text)
    assert [(c.start_line, c.embed_text, c.day) for c in chunks] == [
        (3, "- Ada prefers tea", "2026-05-07"),  # the note's day, not the comment's key
        (4, "- Bob owns the deploy", "2026-05-07"),
        (5, "- Cy plays chess", "2026-05-07"),
    ]
    # a comment alone atop a MEMORY.md entry still dates it
    memory = f"## Promoted memories\n\n{PROMOTED.replace('2020-01-01', '2026-05-01')}\n- Deploys need the VPN\n"
    assert [c.day for c in chunk_markdown("MEMORY.md", memory)] == ["2026-05-01"]


def test_recalled_lines_with_kit_comments_are_found_dated_and_promoted_clean(workspace, monkeypatch):
    """Searched on four days through the real search and recall log, then dreamt: a comment inside a
    line and one alone atop a line of a daily note (a copied MEMORY.md entry). The snippets keep
    their list marker, the hits are dated by the note, Deep finds the lines (not "gone") and
    MEMORY.md gets the texts without the comments (not "- ; Frank …")."""
    (workspace.root / "memory" / "2026-05-01.md").write_text(
        f"# 2026-05-01\n\n- {PROMOTED} Ada prefers oolong tea in the afternoon meetings\n\n"
        f"{PROMOTED}\n- Frank takes the 7:40 train from Utrecht every weekday\n", encoding="utf-8")
    facts = {"Ada": "- Ada prefers oolong tea in the afternoon meetings",
             "Frank": "- Frank takes the 7:40 train from Utrecht every weekday"}
    queries = {"Ada": ("what tea does Ada prefer", "Ada oolong afternoon"),
               "Frank": ("which train does Frank take", "Frank Utrecht train")}
    for i, day in enumerate(days("2026-05-02", 4)):
        for who, (first, second) in queries.items():
            for hour, query in ((10, first), (11, f"{second} {i}")):
                monkeypatch.setenv("KIT_NOW", f"{day}T{hour}:00:00+00:00")
                top = workspace.memory.search(query, record=True).results[0]
                assert (top.snippet, top.date) == (facts[who], "2026-05-01")
    monkeypatch.setenv("KIT_NOW", "2026-05-06T03:00:00+00:00")
    result = run_dream(workspace)
    assert result.promoted == ("memory/2026-05-01.md:3:3", "memory/2026-05-01.md:5:6")
    section = (workspace.root / "MEMORY.md").read_text(encoding="utf-8").split("## Promoted memories")[1]
    assert section.count("<!-- kit:promoted") == 2 and "2020-01-01" not in section
    assert [line for line in section.splitlines() if line.startswith("- ")] == list(facts.values())


def test_one_line_leaves_out_a_comment_line_atop_an_item():
    from kit.dreaming.managed import one_line

    assert one_line(f"{PROMOTED}\n- Frank takes the 7:40 train") == "Frank takes the 7:40 train"
    assert one_line("- Deploys: <!-- a note\nover two lines -->\n  - api on Tuesday") == "Deploys: api on Tuesday"
