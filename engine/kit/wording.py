"""Counts in words: `plural(1, "memory")` is "1 memory", `plural(3, "memory")` "3 memories".

One helper for every count Kit prints (CLI lines, reports, commit messages), so none says
"promote 1 memories" or hedges with "file(s)". The last word of a phrase takes the plural
("skill file" → "skill files"); irregular nouns pass their plural."""

from __future__ import annotations

_VOWELS = frozenset("aeiou")


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
