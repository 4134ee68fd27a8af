"""Bootstrap budgets with exact numbers (§4): per-file cap, max-min fair share, head+tail cuts."""

from __future__ import annotations

import pytest

from helpers_skills import set_file, write_config
from kit.kinds import BOOTSTRAP_FILES
from kit.prompt.budget import (
    apply_budgets,
    fair_allowances,
    marker_line,
    truncate_head_tail,
)
from kit.prompt.builder import build_prompt, doctor_checks
from kit.prompt.warning import WarningState, describe_cut
from kit.provenance import strip_kit_comments
from kit.tokens import estimate_tokens
from kit.workspace import Workspace

DEFAULTS = {"max_chars_per_file": 20_000, "max_total_chars": 60_000, "head_ratio": 0.7, "tail_ratio": 0.2}


def numbered(n: int, tag: str = "x") -> str:
    """n characters whose every position is identifiable (so slices can be checked exactly)."""
    unit = "".join(f"{tag}{i:08d}\n" for i in range(n // 10 + 2))  # 10-char lines
    return unit[:n]


def test_everything_fits_untouched():
    files = [("AGENTS.md", "a" * 1000), ("SOUL.md", "s" * 5000), ("MEMORY.md", "m" * 19_999)]
    out = apply_budgets(files, **DEFAULTS)
    assert [(b.name, b.raw_chars, b.injected_chars, b.truncated, b.reason) for b in out] == [
        ("AGENTS.md", 1000, 1000, False, None),
        ("SOUL.md", 5000, 5000, False, None),
        ("MEMORY.md", 19_999, 19_999, False, None),
    ]
    assert [b.text for b in out] == [t for _, t in files]


def test_one_50k_file_under_the_20k_cap_keeps_head_14000_and_tail_4000():
    text = numbered(50_000)
    (budget,) = apply_budgets([("SOUL.md", text)], **DEFAULTS)
    assert budget.allowance == 20_000
    assert budget.truncated and budget.reason == "max_per_file"
    marker = marker_line("SOUL.md", 14_000, 4_000, 50_000)
    assert budget.text == text[:14_000] + marker + "\n" + text[-4_000:]
    assert text[:14_000].endswith("\n")  # so no newline was added before the marker
    assert budget.injected_chars == len(budget.text) == 14_000 + len(marker) + 1 + 4_000
    assert budget.raw_chars == 50_000
    assert "SOUL.md" in marker and 'read_file("SOUL.md")' in marker
    assert marker.count("\n") == 0


def test_marker_is_one_line_between_head_and_tail_without_newlines():
    out = truncate_head_tail("a" * 1000, 400, "X.md", 0.7, 0.2)
    # 280 + 80 + the marker (118) + 2 newlines would be 480 > 400: head and tail shrink in their ratio
    # to the 400 − 118 − 2 = 280 characters left beside the marker: tail ⌊80·280/360⌋ = 62, head 218
    assert out == "a" * 218 + "\n" + marker_line("X.md", 218, 62, 1000) + "\n" + "a" * 62
    assert len(out) == 400


def test_a_cut_file_never_takes_more_than_its_allowance_marker_included():
    """Regression (new-user report): the allowance counted the kept characters only, so with a
    small allowance the marker made a cut file larger than its allowance, and than the file."""
    text = numbered(584, "a")
    (cut,) = apply_budgets([("AGENTS.md", text)], **{**DEFAULTS, "max_total_chars": 534})
    marker = marker_line("AGENTS.md", 316, 89, 584)
    # 534 − the marker with the first numbers (127) − 2 newlines = 405 = 316 + 89 kept
    assert (cut.allowance, cut.kept_head, cut.kept_tail) == (534, 316, 89)
    assert cut.text == text[:316] + "\n" + marker + "\n" + text[-89:]
    assert cut.injected_chars == len(cut.text) == 533 <= cut.allowance < cut.raw_chars == 584
    # every allowance below the file's length, both ratios at their limits: never over
    for ratios in ((0.7, 0.2), (1.0, 0.0), (0.0, 1.0), (0.0, 0.0), (0.5, 0.5)):
        for allowance in range(0, 584):
            out = truncate_head_tail(text, allowance, "AGENTS.md", *ratios)
            assert len(out) <= allowance, (ratios, allowance)


def test_an_allowance_smaller_than_the_marker_leaves_the_file_out():
    marker = marker_line("IDENTITY.md", 0, 0, 65)
    assert len(marker) == 126
    (cut,) = apply_budgets([("IDENTITY.md", "i" * 65)], **{**DEFAULTS, "max_total_chars": 62})
    assert (cut.allowance, cut.injected_chars, cut.text, cut.truncated, cut.reason) == (62, 0, "", True, "max_total")
    assert cut.left_out and (cut.kept_head, cut.kept_tail) == (0, 0)
    assert describe_cut(cut) == ("IDENTITY.md: left out: its allowance of 62 of 65 characters (total limit) cannot "
                                 "hold the truncation marker")
    # the marker alone fits from its own length on: no file characters, but the model is told
    (alone,) = apply_budgets([("IDENTITY.md", "i" * 200)], **{**DEFAULTS, "max_total_chars": 127})
    assert alone.text == marker_line("IDENTITY.md", 0, 0, 200) and not alone.left_out
    assert alone.injected_chars == 127 and (alone.kept_head, alone.kept_tail) == (0, 0)


def test_max_total_chars_holds_on_a_fresh_workspace(ws_path):
    """Regression (new-user report): `max_total_chars: 2000` under 2,050 characters of files
    injected 2,074; with 500, IDENTITY.md grew from 65 characters to 185."""
    write_config(ws_path, "bootstrap:\n  max_total_chars: 2000\n")
    result = build_prompt(Workspace.open(ws_path))
    assert sum(f.raw_chars for f in result.files) == 2_050
    assert sum(f.injected_chars for f in result.files) == 1_999 <= 2_000
    agents = next(f for f in result.files if f.name == "AGENTS.md")
    assert (agents.raw_chars, agents.allowance, agents.injected_chars) == (584, 534, 533)
    assert [f.name for f in result.files if f.truncated] == ["AGENTS.md"]
    assert result.warnings == ("AGENTS.md: cut to an allowance of 534 of 584 characters (total limit): the first "
                               "316 and last 89 are kept, 533 injected with the marker",)
    write_config(ws_path, "bootstrap:\n  max_total_chars: 500\n")
    result = build_prompt(Workspace.open(ws_path))
    # Regression (review): 500 / 8 = 62 each held no marker line (119 characters and more), all 8
    # files were left out and 0 of the 500 characters used. A file left out now gives its share
    # back, largest demand first: AGENTS.md at 62, TOOLS.md at 435 / 6 = 72, BOOTSTRAP.md at
    # 435 / 5 = 87, SOUL.md at 435 / 4 = 108 (IDENTITY.md's 65 fits from the second round on);
    # then 65, 118 and 152 fit whole and MEMORY.md gets the 165 left: 498 of 500 injected
    assert [(f.name, f.raw_chars, f.allowance, f.injected_chars, f.truncated) for f in result.files] == [
        ("AGENTS.md", 584, 62, 0, True), ("SOUL.md", 306, 108, 0, True), ("TOOLS.md", 322, 72, 0, True),
        ("IDENTITY.md", 65, 65, 65, False), ("USER.md", 118, 118, 118, False),
        ("HEARTBEAT.md", 152, 152, 152, False), ("BOOTSTRAP.md", 315, 87, 0, True),
        ("MEMORY.md", 188, 165, 163, True)]
    assert sum(f.injected_chars for f in result.files) == 498 <= 500
    memory = next(f for f in result.files if f.name == "MEMORY.md")
    assert (memory.kept_head, memory.kept_tail) == (29, 8)
    # left out is out: no heading either; the files that fit are there whole
    left_out = ("AGENTS.md", "SOUL.md", "TOOLS.md", "BOOTSTRAP.md")
    assert not any(f"# {name}" in result.prompt for name in left_out)
    kept = [f for f in result.files if not f.truncated]
    assert all(f.text and f"# {f.name}" in result.prompt and f.text in result.prompt for f in kept)
    assert "# Current time" in result.prompt
    assert result.warnings == (
        "AGENTS.md: left out: its allowance of 62 of 584 characters (total limit) cannot hold the truncation marker",
        "SOUL.md: left out: its allowance of 108 of 306 characters (total limit) cannot hold the truncation marker",
        "TOOLS.md: left out: its allowance of 72 of 322 characters (total limit) cannot hold the truncation marker",
        "BOOTSTRAP.md: left out: its allowance of 87 of 315 characters (total limit) cannot hold the truncation "
        "marker",
        "MEMORY.md: cut to an allowance of 165 of 188 characters (total limit): the first 29 and last 8 are kept, "
        "163 injected with the marker",
    )
    assert f"- {result.warnings[0]}" in result.warning_block
    checks = {p.path: p.message for p in doctor_checks(Workspace.open(ws_path))}
    assert "IDENTITY.md" not in checks
    assert checks["AGENTS.md"] == ("left out: its allowance of 62 of 584 characters (total limit) cannot hold the "
                                   "truncation marker; the model sees none of it. Trim the file or raise "
                                   "bootstrap.max_total_chars")


def test_a_left_out_files_share_goes_to_the_others_largest_demand_first():
    # 186 / 3 = 62 holds no marker line (113 characters and more): the largest demand leaves first
    # (B.md's 400), then at 186 / 2 = 93 of the two 300s the later one; A.md gets all 186
    files = [("A.md", "a" * 300), ("B.md", "b" * 400), ("C.md", "c" * 300)]
    out = apply_budgets(files, **{**DEFAULTS, "max_total_chars": 186})
    assert [(b.allowance, b.injected_chars, b.truncated, b.reason, b.left_out) for b in out] == [
        (186, 185, True, "max_total", False), (62, 0, True, "max_total", True), (93, 0, True, "max_total", True)]
    # 186 − the marker with the first numbers (116) − 2 newlines = 68 kept = 53 + 15
    assert out[0].text == "a" * 53 + "\n" + marker_line("A.md", 53, 15, 300) + "\n" + "a" * 15
    # a file whose per-file cap (100) cannot hold the marker (113) is out whatever the total; at
    # 200 / 3 = 66 each no file fits or holds a marker, and when A.md leaves, 90 + 95 fit whole
    files = [("A.md", "a" * 300), ("B.md", "b" * 90), ("C.md", "c" * 95)]
    out = apply_budgets(files, **{**DEFAULTS, "max_chars_per_file": 100, "max_total_chars": 200})
    assert [(b.allowance, b.injected_chars, b.reason) for b in out] == [(66, 0, "max_total"), (90, 90, None),
                                                                         (95, 95, None)]


@pytest.mark.parametrize("seed", range(40))
def test_budgets_hold_and_a_left_out_share_is_not_wasted(seed):
    import random

    rng = random.Random(seed)
    files = [(f"F{i}.md", numbered(rng.choice([0, 5, 60, 130, 200, 400, 900, 3000]) + rng.randrange(50), "f"))
             for i in range(rng.randrange(1, 9))]
    total, cap = rng.randrange(0, 2500), rng.choice([100, 150, 600, 20_000])
    out = apply_budgets(files, **{**DEFAULTS, "max_total_chars": total, "max_chars_per_file": cap})
    assert sum(b.injected_chars for b in out) <= total
    for (name, text), b in zip(files, out, strict=True):
        assert b.injected_chars == len(b.text) <= b.allowance
        assert b.truncated == (b.text != text) and (not b.truncated or len(b.text) < len(text))
        assert b.left_out == (b.truncated and len(marker_line(name, 0, 0, len(text))) > b.allowance)
    kept = [b for b in out if not b.left_out]
    if any(b.left_out and b.reason == "max_total" for b in out):
        # what a file left out gave back went to the others: they got their demand, or shared it all
        # (but for the rounding down of the level)
        assert sum(b.allowance for b in kept) > total - len(kept) or all(b.allowance == min(b.raw_chars, cap) for b in kept)
        # and when every file is left out, the last one had the whole total (or its whole demand)
        assert kept or any(b.allowance == min(total, b.raw_chars, cap) for b in out)


def test_eight_15k_files_under_60k_total_get_7500_each():
    files = [(f"F{i}.md", numbered(15_000, chr(97 + i))) for i in range(8)]
    out = apply_budgets(files, **DEFAULTS)
    assert [b.allowance for b in out] == [7_500] * 8
    for (name, text), b in zip(files, out, strict=True):
        assert b.reason == "max_total" and b.truncated
        assert b.text == text[:5_250] + marker_line(name, 5_250, 1_500, 15_000) + "\n" + text[-1_500:]
        assert b.injected_chars == len(b.text)


def test_mixed_sizes_small_files_keep_everything_rest_share_equally():
    # demands: 1000, 2000, 20000 (capped from 30000), 20000, 20000 → Σ 63,000 > 20,000
    assert fair_allowances([1_000, 2_000, 20_000, 20_000, 20_000], 20_000) == [1_000, 2_000, 5_666, 5_666, 5_666]
    files = [("A.md", "a" * 1_000), ("B.md", "b" * 2_000), ("C.md", "c" * 30_000),
             ("D.md", "d" * 40_000), ("E.md", "e" * 50_000)]
    out = apply_budgets(files, **{**DEFAULTS, "max_total_chars": 20_000})
    assert [(b.allowance, b.truncated, b.reason) for b in out] == [
        (1_000, False, None), (2_000, False, None),
        (5_666, True, "max_total"), (5_666, True, "max_total"), (5_666, True, "max_total"),
    ]


def test_water_filling_raises_the_level_when_a_middle_file_fits():
    # level 100/3=33 → 10 fits; (90)/2=45 → 40 fits; 50 left for the last file
    assert fair_allowances([10, 40, 1000], 100) == [10, 40, 50]
    assert fair_allowances([50, 50], 100) == [50, 50]
    assert fair_allowances([], 100) == []


def test_memory_loaded_last_gets_the_same_level_as_the_others(ws_path):
    write_config(ws_path, "bootstrap:\n  max_total_chars: 30000\n")
    for name in BOOTSTRAP_FILES:
        (ws_path / name).write_text("", encoding="utf-8")
    (ws_path / "AGENTS.md").write_text(numbered(18_000, "a"), encoding="utf-8")
    (ws_path / "SOUL.md").write_text(numbered(18_000, "s"), encoding="utf-8")
    (ws_path / "MEMORY.md").write_text(numbered(18_000, "m"), encoding="utf-8")
    (ws_path / "IDENTITY.md").write_text("I" * 600, encoding="utf-8")
    ws = Workspace.open(ws_path)
    result = build_prompt(ws)
    by_name = {f.name: f for f in result.files}
    # (30,000 − 600 − empty files) / 3 = 9,800 each, MEMORY.md included
    assert by_name["IDENTITY.md"].injected_chars == 600 and not by_name["IDENTITY.md"].truncated
    assert {by_name[n].allowance for n in ("AGENTS.md", "SOUL.md", "MEMORY.md")} == {9_800}
    assert by_name["MEMORY.md"].reason == "max_total"
    memory = by_name["MEMORY.md"]
    assert memory.injected_chars == len(memory.text) == 6_860 + len(marker_line("MEMORY.md", 6_860, 1_960, 18_000)) + 1 + 1_960


def test_kit_comments_are_stripped_before_measuring_and_injecting(ws_path):
    memory = (
        "# Memory\n\nUser text.\n\n## Promoted memories\n\n"
        "<!-- kit:promoted key=memory/2026-05-07.md:12:14 claim=3f2a9c1b0d4e score=0.812 -->\n"
        "- Alice likes tea.\n"
        "Inline <!-- kit:note x --> stays readable. <!-- a user comment stays -->\n"
    )
    (ws_path / "MEMORY.md").write_text(memory, encoding="utf-8")
    ws = Workspace.open(ws_path)
    result = build_prompt(ws)
    stripped = strip_kit_comments(memory)
    assert stripped == (
        "# Memory\n\nUser text.\n\n## Promoted memories\n\n- Alice likes tea.\n"
        "Inline stays readable. <!-- a user comment stays -->\n"
    )
    entry = next(f for f in result.files if f.name == "MEMORY.md")
    assert entry.raw_chars == len(stripped) == entry.injected_chars
    assert "kit:promoted" not in result.prompt and "kit:note" not in result.prompt
    assert "- Alice likes tea." in result.prompt and "<!-- a user comment stays -->" in result.prompt


def _cut_workspace(ws_path, mode: str) -> Workspace:
    write_config(ws_path, f"bootstrap:\n  max_chars_per_file: 1000\n  warning: {mode}\n")
    (ws_path / "SOUL.md").write_text("soul " * 1000, encoding="utf-8")
    return Workspace.open(ws_path)


def test_warning_once_per_distinct_set_of_cuts_per_session(ws_path):
    ws = _cut_workspace(ws_path, "once")
    session = WarningState()
    first = build_prompt(ws, warning_state=session)
    assert first.warning_block.startswith("# Truncated workspace files")
    assert ("- SOUL.md: cut to an allowance of 1,000 of 5,000 characters (per-file limit): the first 679 and "
            "last 194 are kept, 1,000 injected with the marker") in first.warning_block
    assert first.warning_block in first.prompt
    second = build_prompt(ws, warning_state=session)
    assert second.warning_block == "" and "# Truncated workspace files" not in second.prompt
    assert second.warnings == first.warnings == (
        "SOUL.md: cut to an allowance of 1,000 of 5,000 characters (per-file limit): the first 679 and last 194 "
        "are kept, 1,000 injected with the marker",
    )
    # a new set of cuts warns again, once
    set_file(ws, "USER.md", "user " * 1000)
    third = build_prompt(ws, warning_state=session)
    assert "- USER.md: cut to an allowance of 1,000" in third.warning_block and "- SOUL.md" in third.warning_block
    assert build_prompt(ws, warning_state=session).warning_block == ""
    # another session is warned again; no state at all means a fresh session each time
    assert build_prompt(ws, warning_state=WarningState()).warning_block != ""
    assert build_prompt(ws).warning_block != ""


def test_warning_always_repeats_and_off_never_shows(ws_path):
    ws = _cut_workspace(ws_path, "always")
    session = WarningState()
    blocks = [build_prompt(ws, warning_state=session).warning_block for _ in range(3)]
    assert blocks[0] and blocks == [blocks[0]] * 3
    set_file(ws, "kit.yaml", "bootstrap:\n  max_chars_per_file: 1000\n  warning: off\n")
    result = build_prompt(ws, warning_state=WarningState())
    assert result.warning_block == "" and "Truncated workspace files" not in result.prompt
    assert result.warnings  # the report still says what was cut


def test_warning_goes_in_the_dynamic_tail_after_memory(ws_path):
    ws = _cut_workspace(ws_path, "always")
    prompt = build_prompt(ws).prompt
    assert prompt.index("# MEMORY.md") < prompt.index("# Current time") < prompt.index("# Truncated workspace files")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("abcd" * 100, 120), ("你好" * 10, 24), ("ab你好", 3), ("日本語のテキスト", 10), ("a", 1)],
)
def test_estimate_tokens(text, tokens):
    # chars/4 for Latin text, one per CJK character, × 1.2, rounded up
    assert estimate_tokens(text) == tokens
