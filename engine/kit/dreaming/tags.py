"""Concept tags (§8): up to 8 NFKC-lower-cased word tokens of 3–32 chars or CJK bigrams, minus stop
words, plus compound tokens such as `api/v2` or `foo.bar`. Ordered by first appearance so that the
same snippet always yields the same tags."""

from __future__ import annotations

import re
import unicodedata

from kit.lazyre import LazyPattern

MAX_TAGS = 8

STOP_WORDS = frozenset(
    """
    the and for are but not you all any can had her was one our out has him his how its may new now old
    see two way who did get got let say she too use that with have this will your from they know want been
    good much some time very when come here just like long make many more only over such take than them
    well were what into also back then there their these those would could should about after again
    because before being below between both does doing down during each few further having itself most
    myself other ought same shall since still through under until upper which while whom why yours
    yourself every days weeks always never today yesterday tomorrow really thing things need needs note notes said says per via etc
    """.split()
)

# a compound starts where a run of its characters does (one starting inside a run would fail as the
# run's own start did), and the run is never given back (the separators are not in it): without the
# look-behind and `++` a search went over each word from every one of its letters
_COMPOUND = re.compile(r"(?<![0-9a-z_])[0-9a-z_]++(?:[./:\-][0-9a-z_]+)+")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af"
# a CJK run (its bigrams are the tags), or a word of any other letters: "tomás" is one word, not
# "tom" and "s" (for ASCII text the same tokens as [0-9a-z_]+)
# (the CJK patterns are compiled at their first non-ASCII text: these classes cost milliseconds)
_WORD = LazyPattern(rf"[{_CJK_CHARS}]+|[^\W{_CJK_CHARS}]+")
_ASCII_WORD = re.compile(r"[0-9a-z_]+")  # _WORD on lower-cased ASCII text, in a sixth less time
_CJK = LazyPattern(rf"[{_CJK_CHARS}]")


_DATEISH = re.compile(r"[\d.:/\-]+")


def _ok_word(token: str) -> bool:
    return 3 <= len(token) <= 32 and token not in STOP_WORDS and not token.isdigit()


def concept_tags(text: str, limit: int = MAX_TAGS) -> tuple[str, ...]:
    # (every candidate of a dream gets its tags: ASCII text skips NFKC, which keeps it as it is, and
    # the CJK test; the words stop once `limit` distinct tags are found)
    ascii_only = text.isascii()
    norm = (text if ascii_only else unicodedata.normalize("NFKC", text)).lower()
    found: dict[str, None] = {}  # distinct, in order of first appearance
    for m in _COMPOUND.finditer(norm):
        token = m.group(0).strip("-.")
        # a URL-ish or date-ish compound is noise, a path or dotted name is a concept
        if 3 <= len(token) <= 32 and not _DATEISH.fullmatch(token):
            found[token] = None
    for token in (_ASCII_WORD if ascii_only else _WORD).findall(norm):
        if len(found) >= limit:
            break
        if not ascii_only and _CJK.match(token):
            found.update(dict.fromkeys(token[i : i + 2] for i in range(len(token) - 1)))
        elif _ok_word(token):
            found[token] = None
    return tuple(found)[:limit]


def tokens(text: str) -> frozenset[str]:
    """Token set for Jaccard similarity."""
    if text.isascii():  # NFKC keeps ASCII as it is, and _WORD finds these words in it
        return frozenset(_ASCII_WORD.findall(text.lower()))
    norm = unicodedata.normalize("NFKC", text).lower()
    return frozenset(_WORD.findall(norm))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
