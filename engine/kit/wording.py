"""Counts in words: `plural(1, "memory")` is "1 memory", `plural(3, "memory")` "3 memories";
and the one "did you mean" of a mistyped name (`did_you_mean`).

One helper for every count Kit prints (CLI lines, reports, commit messages), so none says
"promote 1 memories" or hedges with "file(s)". The last word of a phrase takes the plural
("skill file" → "skill files"); irregular nouns pass their plural."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

_VOWELS = frozenset("aeiou")


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `options` to a mistyped `word`, else "": the one
    wording of a suggestion (kit.yaml keys, script turn keys, skill names)."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def plural_of(noun: str) -> str:
    """The English plural of a regular noun (or of a phrase's last word)."""
    head, _, last = noun.rpartition(" ")
    lower = last.lower()
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in _VOWELS:
        word = last[:-1] + "ies"
    elif lower.endswith(("s", "x", "z", "ch", "sh")):
        word = last + "es"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def plural(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and the noun in the number it needs: 0 and 2+ take the plural."""
    return f"{count} {noun if count == 1 else (plural or plural_of(noun))}"


def count_text(value: float) -> str:
    """A count as Kit prints it: whole when it is, else with 2 decimals (a credited recall counts in
    parts: 2.25 credited recalls)."""
    shown = round(float(value), 2)  # a sum of credits a hair under a whole number (0.9999…) is that number
    return str(int(shown)) if shown.is_integer() else f"{shown:.2f}"
