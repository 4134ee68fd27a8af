"""Counts in words (kit.wording.plural): every count Kit prints takes the number it needs."""

from __future__ import annotations

import pytest

from kit import plural
from kit.wording import plural_of


@pytest.mark.parametrize(("count", "noun", "expected"), [
    (0, "memory", "0 memories"), (1, "memory", "1 memory"), (2, "memory", "2 memories"),
    (1, "query", "1 query"), (3, "query", "3 queries"), (2, "day", "2 days"), (2, "match", "2 matches"),
    (1, "invalid skill file", "1 invalid skill file"), (2, "invalid skill file", "2 invalid skill files"),
    (2, "failed attempt", "2 failed attempts"), (2, "box", "2 boxes"), (2, "key", "2 keys"),
])
def test_plural(count, noun, expected):
    assert plural(count, noun) == expected


def test_an_irregular_plural_is_given():
    assert plural(2, "person", "people") == "2 people" and plural(1, "person", "people") == "1 person"
    assert plural_of("status") == "statuses"


def test_no_cli_module_hedges_a_count_with_s_in_brackets():
    # "1 file(s)", "1 step(s)": every count the CLI prints goes through plural()
    from pathlib import Path

    import kit.cli

    hedged = [f"{p.name}:{i}" for p in Path(kit.cli.__file__).parent.glob("*.py")
              for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "(s)" in line]
    assert hedged == []
