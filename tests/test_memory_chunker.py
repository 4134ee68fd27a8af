"""Markdown-aware chunking: block boundaries, line ranges, claims in daily notes."""

from __future__ import annotations

from kit.fsutil import sha1_hex
from kit.memory.chunker import chunk_markdown, embed_text, estimate_tokens


def lines_of(text: str, chunk) -> str:
    return "\n".join(text.split("\n")[chunk.start_line - 1 : chunk.end_line])


def test_headings_start_chunks_and_give_heading_paths():
    text = "# Title\n\nIntro paragraph.\n\n## Alpha\n\nAlpha body.\n\n### Deep\n\nDeep body.\n\n## Beta\n\nBeta body.\n"
    chunks = chunk_markdown("notes.md", text)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 7), (9, 11), (13, 15)]
    assert [c.heading_path for c in chunks] == [
        ("Title",),
        ("Title", "Alpha"),
        ("Title", "Alpha", "Deep"),
        ("Title", "Beta"),
    ]
    for c in chunks:
        assert c.text == lines_of(text, c)
        assert c.hash == sha1_hex(embed_text(c.heading_path, c.text))
    assert chunks[1].embed_text == "Title > Alpha\n## Alpha\n\nAlpha body."


def test_heading_only_sections_merge_with_the_next_section():
    text = "# Top\n## Sub\n\nbody\n"
    chunks = chunk_markdown("a.md", text)
    assert [(c.start_line, c.end_line, c.heading_path) for c in chunks] == [(1, 4, ("Top", "Sub"))]


def test_long_section_splits_at_block_boundaries_with_whole_line_overlap():
    paras = [f"Paragraph {i} " + "word " * 30 for i in range(12)]  # ~40 tokens each
    text = "# Big\n\n" + "\n\n".join(paras) + "\n"
    chunks = chunk_markdown("a.md", text, tokens=100, overlap=45)
    assert len(chunks) > 3
    all_lines = text.split("\n")
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.start_line <= prev.end_line, "consecutive chunks overlap"
        assert nxt.start_line > prev.start_line
        assert nxt.text == lines_of(text, nxt)  # overlap is whole lines
        assert estimate_tokens(nxt.text) <= 100 + 1
    # every paragraph line is inside some chunk
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert {i + 1 for i, ln in enumerate(all_lines) if ln.strip()} <= covered


def test_no_overlap_when_overlap_is_zero():
    # six paragraphs of four 9-token lines: whole lines fit in an overlap, so the control run
    # with overlap=20 repeats the last two lines of each chunk; at 0 nothing is repeated
    text = "\n\n".join("\n".join(f"para {i} line {j} " + "x " * 8 for j in range(4)) for i in range(6)) + "\n"
    chunks = chunk_markdown("a.md", text, tokens=80, overlap=0)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 9), (11, 19), (21, 29)]
    assert all(c.text == lines_of(text, c) for c in chunks)
    control = chunk_markdown("a.md", text, tokens=80, overlap=20)
    assert [(c.start_line, c.end_line) for c in control] == [(1, 9), (8, 19), (18, 29)]


def test_nested_lists_stay_with_their_top_level_item():
    text = "# List\n\n- one\n  - one.a\n  - one.b\n    - one.b.i\n- two\n  1. two.1\n"
    (chunk,) = chunk_markdown("a.md", text)
    assert (chunk.start_line, chunk.end_line) == (1, 8)
    small = chunk_markdown("a.md", text, tokens=16, overlap=0)
    # with tiny chunks the cut falls between top-level items, never inside one
    # (the heading rides with the first item; "two" and its sub-item stay together)
    assert [(c.start_line, c.end_line) for c in small] == [(1, 6), (7, 8)]


def test_fenced_code_is_never_split_unless_larger_than_a_chunk():
    # a 232-token fence (lines 5-26) after a paragraph that fills most of a 300-token chunk: it
    # moves whole into a chunk of its own, and the 60-token overlap carries none of its last lines
    # into the next chunk (the paragraph after it starts that one)
    code = "\n".join(f"    line_{i} = compute({i})  # some code" for i in range(20))
    text = ("# Code\n\nBefore the code " + "w " * 300 + "\n\n```python\n" + code + "\n```\n\nAfter "
            + "z " * 300 + "\n")
    lines = text.split("\n")
    assert (lines[4], lines[25]) == ("```python", "```")
    chunks = chunk_markdown("a.md", text, tokens=300, overlap=60)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 26), (28, 28)]
    assert chunks[1].text == "\n".join(lines[4:26])
    # a fence larger than one chunk is cut at line boundaries, the pieces tiling it
    big = chunk_markdown("a.md", text, tokens=60, overlap=0)
    fence_parts = [(c.start_line, c.end_line) for c in big if 5 <= c.start_line <= 26]
    assert fence_parts == [(5, 11), (12, 17), (18, 23), (24, 26)]
    assert all(c.text == lines_of(text, c) for c in big if c.start_line != 3 and c.start_line != 28)


def test_tables_are_never_split():
    # a 153-token table (lines 3-16) between paragraphs that each fill most of a 200-token chunk:
    # it moves whole into a chunk of its own, and the 60-token overlap does not carry its last
    # rows into the next chunk
    rows = [f"| row {i} | value {i * 3} | note about row {i} |" for i in range(12)]
    table = "| a | b | c |\n|---|---|---|\n" + "\n".join(rows)
    text = "Intro " + "w " * 300 + "\n\n" + table + "\n\nAfter the table " + "z " * 300 + "\n"
    chunks = chunk_markdown("a.md", text, tokens=200, overlap=60)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 1), (3, 16), (18, 18)]
    assert chunks[1].text == table
    # control: the same lines as a plain paragraph have their last five carried over
    plain = text.replace("|", "¦")
    assert [(c.start_line, c.end_line) for c in chunk_markdown("a.md", plain, tokens=200, overlap=60)] == \
        [(1, 1), (3, 16), (12, 18)]


def test_cjk_text_counts_characters_as_tokens():
    para = "今天我们讨论了部署流程和回滚方案。" * 10  # 170 CJK characters ≈ 170 tokens
    text = "# 笔记\n\n" + "\n\n".join([para] * 4) + "\n"
    chunks = chunk_markdown("memory/topics/zh.md", text, tokens=200, overlap=0)
    assert len(chunks) == 4
    assert chunks[0].heading_path == ("笔记",)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 5), (7, 7), (9, 9)]
    assert estimate_tokens(para) == 170


def test_a_single_100kb_line_is_cut_into_pieces_that_point_at_its_line():
    long_line = "abcdefghij" * 10_000
    text = "# Huge\n\nshort line\n\n" + long_line + "\n\ntail\n"
    chunks = chunk_markdown("a.md", text, tokens=400, overlap=80)
    pieces = [c for c in chunks if c.start_line == 5]
    assert len(pieces) == 63  # 100,000 chars / 1,600 chars per 400-token piece
    assert all(c.end_line == 5 for c in pieces)
    assert "".join(c.text for c in pieces) == long_line
    assert max(len(c.text) for c in pieces) == 1600
    assert chunks[-1].text == "tail" and chunks[-1].start_line == 7


def test_empty_and_frontmatter_only_files_give_no_chunks():
    assert chunk_markdown("a.md", "") == []
    assert chunk_markdown("a.md", "\n\n  \n") == []
    assert chunk_markdown("a.md", "---\ntitle: x\ntags: [a]\n---\n") == []


def test_frontmatter_is_skipped_and_line_numbers_still_count_it():
    text = "---\ntitle: x\n---\n# Head\n\nBody line.\n"
    (chunk,) = chunk_markdown("a.md", text)
    assert (chunk.start_line, chunk.end_line) == (4, 6)
    assert "title" not in chunk.text


def test_daily_note_of_twelve_bullets_gives_twelve_claims():
    bullets = [f"- fact number {i}: something worth remembering" for i in range(1, 13)]
    text = "# 2026-05-07\n\n" + "\n".join(bullets) + "\n"
    chunks = chunk_markdown("memory/2026-05-07.md", text)
    assert len(chunks) == 12
    for i, chunk in enumerate(chunks):
        assert (chunk.start_line, chunk.end_line) == (i + 3, i + 3)
        assert chunk.text == bullets[i]
        assert chunk.heading_path == ("2026-05-07",)
        assert chunk.embed_text == bullets[i]  # a bare date heading adds nothing for the model


def test_daily_note_claims_keep_sub_bullets_and_paragraphs_and_topics():
    text = (
        "# 2026-05-07\n\n"
        "Met Dana for coffee.\nShe is moving to Lisbon.\n\n"
        "- Deploy checklist lives in ops/README\n  - step one: freeze\n  - step two: tag\n"
        "- Second fact\n\n"
        "## Health\n\n"
        "- Allergic to penicillin\n"
    )
    chunks = chunk_markdown("memory/2026-05-07-standup.md", text)
    assert [(c.start_line, c.end_line, c.heading_path) for c in chunks] == [
        (3, 4, ("2026-05-07",)),
        (6, 8, ("2026-05-07",)),
        (9, 9, ("2026-05-07",)),
        (13, 13, ("2026-05-07", "Health")),
    ]
    assert chunks[1].text.endswith("step two: tag")
    assert chunks[3].embed_text == "Health\n- Allergic to penicillin"


def test_the_same_text_outside_memory_dates_is_chunked_by_section():
    bullets = "\n".join(f"- fact {i}" for i in range(12))
    text = "# 2026-05-07\n\n" + bullets + "\n"
    assert len(chunk_markdown("notes/ideas.md", text)) == 1
    assert len(chunk_markdown("memory/topics/deploys.md", text)) == 1
    assert len(chunk_markdown("memory/2026-05-07.md", text)) == 12


def test_memory_md_and_the_archive_are_chunked_by_claim():
    """A search of MEMORY.md finds the entry that answers, not the whole file (a new user saw
    `MEMORY.md:1-10` and every entry for "which port does staging use")."""
    text = ("# Memory\n\n- Deploys happen on Tuesdays after standup.\n\n- The staging database listens on port "
            "5433.\n\nGrandma prefers lilies\nrather than roses.\n")
    for path in ("MEMORY.md", "memory/archive/promoted.md"):
        assert [(c.start_line, c.end_line, c.text) for c in chunk_markdown(path, text)] == [
            (3, 3, "- Deploys happen on Tuesdays after standup."),
            (5, 5, "- The staging database listens on port 5433."),
            (7, 8, "Grandma prefers lilies\nrather than roses."),
        ]


def test_kit_provenance_comments_are_not_content():
    text = (
        "# Memory\n\nMy own text.\n\n## Promoted memories\n\n"
        "<!-- kit:promoted key=memory/2026-05-07.md:12:14 claim=3f2a9c1b0d4e score=0.812 -->\n"
        "- Prefers window seats\n"
    )
    sections = chunk_markdown("notes/promoted.md", text)
    promoted = sections[-1]
    assert (promoted.start_line, promoted.end_line) == (5, 8)
    assert "kit:promoted" in promoted.text  # the chunk still maps the file's lines
    assert promoted.embed_text == "## Promoted memories\n\n- Prefers window seats"  # no place headings as context
    # MEMORY.md, by claim: the comment goes with the entry below it, and dates it
    entry = chunk_markdown("MEMORY.md", text)[-1]
    assert (entry.start_line, entry.end_line, entry.day) == (7, 8, "2026-05-07")
    # embedded as the note's line is ("Memory > Promoted memories" took a promoted fact's cosine to
    # its question from 0.553 to 0.469): it shares that line's cached vector
    assert entry.text.startswith("<!-- kit:promoted") and entry.embed_text == "- Prefers window seats"
    assert chunk_markdown("MEMORY.md", "# Memory\n\n## Work\n\n- Deploys on Tuesdays\n")[-1].embed_text == (
        "Work\n- Deploys on Tuesdays")  # a heading of the user's own is still context
    daily = chunk_markdown("memory/2026-05-07.md", "<!-- kit:note x -->\n\n- a claim <!-- kit:seen -->\n")
    assert [(c.start_line, c.embed_text) for c in daily] == [(3, "- a claim")]


def test_a_long_line_of_words_is_cut_at_whitespace_not_mid_word():
    sentence = "The backup job copies the staging database to cold storage every night. "
    long_line = "Long line fact: certificates rotate every ninety days. " + sentence * 280
    chunks = chunk_markdown("notes/long.md", "# Ops\n\n" + long_line + "\n", tokens=400, overlap=80)
    pieces = [c for c in chunks if c.start_line == 3]
    assert len(pieces) == 13
    assert "".join(c.text for c in pieces) == long_line
    assert pieces[0].text.startswith("Long line fact: certificates rotate every ninety days. The backup job")
    for before, after in zip(pieces, pieces[1:], strict=False):
        assert before.text.endswith(" ") and not after.text.startswith(" ")
    assert all(800 <= len(c.text) <= 1600 for c in pieces[:-1])


def test_every_chunk_knows_its_day():
    from kit.memory.chunker import chunk_day

    daily = chunk_markdown("memory/2026-05-07.md", "# 2026-05-07\n\n- one\n- 2026-04-30: backfilled from last week\n")
    assert [c.day for c in daily] == ["2026-05-07", "2026-04-30"]  # a date opening the line wins
    journal = chunk_markdown("memory/journal.md", "# Journal\n\n## 2026-02-03\n\nReplaced the bike chain.\n\n"
                                                   "## Someday\n\nLearn the cello.\n")
    assert [c.day for c in journal] == ["2026-02-03", None]  # the nearest dated heading, else none
    promoted = ("# Memory\n\n## Promoted memories\n\n<!-- kit:promoted key=memory/2026-05-07.md:3:3 claim=ab "
                "score=0.8 recalls=3 queries=2 date=2026-05-09 -->\n- Deploys need the VPN\n")
    assert [c.day for c in chunk_markdown("MEMORY.md", promoted)] == ["2026-05-07"]  # the note it came from
    assert chunk_day("memory/2026-13-45.md", (), "- not a real date") is None
    assert chunk_day("memory/topics/x.md", (), "- 2026-02-30: no such day") is None


def test_untouched_template_text_headings_alone_and_comments_alone_are_no_chunks():
    from kit.paths import bundled

    template = (bundled("workspace") / "MEMORY.md").read_text(encoding="utf-8")
    assert chunk_markdown("MEMORY.md", template) == []
    with_fact = template + "\n- Sam is allergic to cashews.\n"
    chunks = chunk_markdown("MEMORY.md", with_fact)
    assert len(chunks) == 1 and "Long-term facts" not in chunks[0].text
    assert chunks[0].text.endswith("- Sam is allergic to cashews.") and chunks[0].heading_path == ("Memory",)
    # the same paragraph in another file is the user's text, not the template's
    assert chunk_markdown("memory/topics/copy.md", template) != []
    assert chunk_markdown("memory/topics/t.md", "# Travel\n\n## Japan\n") == []
    assert chunk_markdown("memory/topics/t.md", "# Travel\n\n<!-- write about Japan here -->\n") == []
    assert [c.text for c in chunk_markdown("memory/2026-05-07.md", "# 2026-05-07\n\n## Work\n\n- shipped it\n")] == [
        "- shipped it"]
