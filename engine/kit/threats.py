"""The threat scan: one function for every door through which text reaches the agent's memory or
its prompt (issue 12).

A note in `memory/` is re-read by the model, MEMORY.md, USER.md and SOUL.md are injected into
every prompt, and a recalled snippet lands on the user's message: each of them is a prompt. So
text is refused when it tries to steer the model (override its instructions, speak as the
system, address the model reading the note, hide things from the user), to leak secrets, to run
payloads (pipe-to-shell, decode-and-run, reverse shells), to plant ssh access, or to hide itself
(invisible Unicode). Every refusal names its rule, so the person (or the model) knows what to
rephrase.

    threat = scan(text)                 # None, or Threat(rule, description, excerpt)
    threat = scan_added(before, after)  # only what a rewrite of a file adds
    check(text, what="memory_write")    # raises ThreatError naming the rule

Before matching, the text is normalised into a few views, each matched by every rule: NFKC
(full-width and compatibility forms), invisible characters removed (and, separately, read as
spaces), look-alike letters from other scripts mapped to Latin (Unicode's confusables table, from
the `confusable-homoglyphs` package, loaded only for text that has non-ASCII letters), leetspeak
digits in words read as letters (`1gn0re` → `ignore`) and letters spaced out with dots or blanks
joined (`i.g.n.o.r.e` → `ignore`). Case never matters.

Callers: kit.memory.daily (memory_write, `kit memory write`), the write_file/edit_file tools
(memory files and the bootstrap files), the memory search that feeds a prompt (flagged snippets
are withheld and reported), the session-memory hook, dreaming's junk filter, and MCP writes and
imports (issue 11).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.errors import KitError
from kit.lazyre import IGNORECASE_FOLD, fold_ascii, lazy

SCANNER_VERSION = 3  # bump when RULES change


@dataclass(frozen=True)
class Threat:
    """Why a text was refused: the rule's name, what the rule is about, what it matched."""

    rule: str
    description: str
    excerpt: str

    @property
    def reason(self) -> str:
        return f"rule {self.rule}: {self.description} (matched {self.excerpt!r})"

    @property
    def summary(self) -> str:
        """The reason without the matched text: what a prompt may carry about a withheld snippet
        (the excerpt would put the payload back in front of the model)."""
        return f"rule {self.rule}: {self.description}"

    def __str__(self) -> str:
        return self.reason

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "description": self.description, "excerpt": self.excerpt,
                "reason": self.reason}


class ThreatError(KitError):
    """Text refused by the threat scan; `.threat` names the rule."""

    def __init__(self, message: str, threat: Threat):
        super().__init__(message)
        self.threat = threat


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    pattern: re.Pattern[str]

    @functools.cached_property
    def branches(self) -> tuple[_Branch, ...]:
        """The pattern's top-level alternatives, each with the words it cannot match without
        (read off the parsed pattern once per Kit version: `_analysed`); each compiled when first
        tried."""
        flags = self.pattern.flags
        return tuple(_Branch.of(spec, flags) for spec in _analysed(self.pattern.pattern, flags))

    @functools.cached_property
    def needs(self) -> frozenset[str] | None:
        """Every word some branch needs; None when a branch needs none (the rule is always tried)."""
        if any(b.needs is None for b in self.branches):
            return None
        return frozenset().union(*(b.needs for b in self.branches))

    @functools.cached_property
    def _table(self) -> _Needs:
        return _Needs.of(self.needs or frozenset())

    def search(self, view: _View, present: frozenset[str] | None = None) -> re.Match[str] | None:
        """Exactly `self.pattern.search(view.text)`, faster: an alternative whose needed words are
        not in the text is not tried (`present`: the needed words the view has, of this rule or
        more — `scan` looks up every rule's at once); one that starts with a word is tried only
        where the text has it; the leftmost match wins, and at the same start the earlier
        alternative, as the whole pattern decides."""
        if present is None:
            present = view.present(self._table)
        if self.needs is not None and self.needs.isdisjoint(present):
            return None
        best: re.Match[str] | None = None
        for branch in self.branches:
            if branch.needs is not None and branch.needs.isdisjoint(present):
                continue
            if branch.head is not None:
                match = view.first_match(branch, best.start() if best else len(view.text))
            else:
                match = branch.pattern.search(view.text)
            if match and (best is None or match.start() < best.start()):
                best = match
        return best


def _rx(pattern: str) -> re.Pattern[str]:
    # compiled at the first scan: importing the module (every memory search does) costs nothing
    return lazy(pattern, re.IGNORECASE | re.MULTILINE)  # type: ignore[return-value]


# --------------------------------------------------------------------------- fast, exact matching
# A rule is an alternation of ~5-25 patterns, and Python's regex engine tries all of them at every
# offset of the text: about 1 µs per character and rule, for every view. Most alternatives cannot
# match without a word of their own ("ignore", "authorized_keys", "base64" …), read off the parsed
# pattern below; an alternative whose words are all absent is skipped (a substring test), which
# changes no verdict and no excerpt.

LINE_START = "\x00^"  # a head "word" for `^` (MULTILINE): the match starts at a line's start
_FOLD = IGNORECASE_FOLD  # what IGNORECASE also equates


@dataclass(frozen=True)
class _Branch:
    pattern: re.Pattern[str]
    needs: frozenset[str] | None  # one of these (lowercase) must be in the text; None: no such words
    head: frozenset[str] | None  # every match starts with one of these (lowercase ASCII); None: not known
    # `PREFIX[^S]*REST` (S holds the newline): (PREFIX alone, `[S]`, crossing). When PREFIX matched
    # at i (ending at e) and the whole failed, a start j from e up to the next character of S (at s)
    # whose PREFIX ends by s fails too (REST would have matched after i's PREFIX as well), and is not
    # tried: each try scanned the rest of the line, quadratic on a long line. A PREFIX of fixed words
    # (none holding a character of S) always ends by s; one of the shape `A X B` (A, B fixed words,
    # X a repeat of one class, e.g. `base64\s+-d`) can reach past s only through X, in the run of
    # X's characters holding s: crossing = (X's class, the longest A), and the starts that close to
    # the run are tried as usual
    line_prefix: tuple[re.Pattern[str], re.Pattern[str], tuple[re.Pattern[str], int] | None] | None = None

    @classmethod
    def of(cls, spec: list, flags: int) -> _Branch:
        """From `_analyse`'s data: [source, needs, head, line prefix], the patterns compiled lazily."""
        src, needs, head, prefix = spec
        line_prefix = None
        if prefix is not None:
            words, stops, crossing = prefix
            line_prefix = (lazy(words, flags), lazy(stops, flags),
                           None if crossing is None else (lazy(crossing[0], flags), crossing[1]))
        return cls(lazy(src, flags), None if needs is None else frozenset(needs),  # type: ignore[arg-type]
                   None if head is None else frozenset(head), line_prefix)  # type: ignore[arg-type]


_BY_FREQUENCY = "etaoinshrdlcumwfgypbvkjxqz"  # English letters, most common first


def _rarity(gram: str) -> int:
    # a rough guess at how rare a trigram is in text: rare letters and symbols score high, blanks low
    return sum(_BY_FREQUENCY.index(c) if c in _BY_FREQUENCY else 0 if c == " " else 20 for c in gram)


@dataclass(frozen=True)
class _Needs:
    """Words one of which must be in the text, arranged so that most texts are ruled out by one set
    test: each ASCII word of three characters or more filed under one of its trigrams (if the word
    is in the text, so is each of its trigrams), the shorter ones apart, and the words with other
    letters (counted present whenever the text has a non-ASCII character)."""

    by_key: dict[str, tuple[str, ...]]
    keys: frozenset[str]
    short: tuple[str, ...]
    wide: tuple[str, ...]

    @classmethod
    def of(cls, words: frozenset[str]) -> _Needs:
        by_key: dict[str, list[str]] = {}
        short, wide = [], []
        for w in sorted(words):
            if not w.isascii():
                wide.append(w)
            elif len(w) < 3:
                short.append(w)
            else:
                key = max((w[i:i + 3] for i in range(len(w) - 2)), key=lambda g: (_rarity(g), g))
                by_key.setdefault(key, []).append(w)
        return cls({k: tuple(v) for k, v in by_key.items()}, frozenset(by_key), tuple(short), tuple(wide))


@functools.cache
def _window_slices() -> tuple[slice, ...]:
    """The slices of the 3-character windows of texts up to 1,026 characters (an immutable table,
    made at the first scan: not at import, which every memory search does)."""
    return tuple(slice(i, i + 3) for i in range(1024))


def _slices(n: int) -> Sequence[slice]:
    """The slices of the n 3-character windows of a text (none when n ≤ 0: a text under 3 characters)."""
    table = _window_slices()
    return table[:max(n, 0)] if n <= len(table) else [slice(i, i + 3) for i in range(n)]


class _View:
    """A view of the text with its case-folded copy for the substring tests."""

    __slots__ = ("ascii", "folded", "text")

    def __init__(self, text: str):
        self.text = text
        self.ascii = text.isascii()
        self.folded = fold_ascii(text)

    def present(self, needs: _Needs) -> frozenset[str]:
        """The words of `needs` the text has. An ASCII word matches (case-insensitively) only text
        that folds to it; a word with other letters counts whenever the text has any non-ASCII
        character (its case rules are wider)."""
        folded = self.folded
        found = [w for w in needs.short if w in folded]
        if needs.wide and not self.ascii:
            found += needs.wide
        if needs.by_key:
            # the keys among every 3-character slice, taken in C (slices made once): fed to the
            # intersection as they are made, not kept in a set of their own (that took as long
            # again). `scan` asks once per view; `Rule.search` without `present` slices again for
            # each rule, which only costs time
            hits = needs.keys.intersection(map(folded.__getitem__, _slices(len(folded) - 2)))
            if hits:
                found += [w for key in hits for w in needs.by_key[key] if w in folded]
        return frozenset(found)

    def first_match(self, branch: _Branch, before: int) -> re.Match[str] | None:
        """branch.pattern.search(text) for a pattern whose matches start with a word of its head,
        trying only the offsets where one starts (folding keeps offsets: one character folds to
        one), and only those below `before`. `match(text, pos)` sees the text before pos
        (lookbehind, \\b, ^) as search does."""
        pattern, head = branch.pattern, branch.head
        assert head is not None
        starts: set[int] = set()
        for word in head:
            if word == LINE_START:
                starts.add(0)
                i = self.text.find("\n", 0, before - 1)
                while i != -1:
                    starts.add(i + 1)
                    i = self.text.find("\n", i + 1, before - 1)
                continue
            i = self.folded.find(word, 0, before + len(word) - 1)
            while i != -1:
                starts.add(i)
                i = self.folded.find(word, i + 1, before + len(word) - 1)
        skip_from = skip_to = -1
        for i in sorted(starts):
            if skip_from <= i <= skip_to:
                continue
            match = pattern.match(self.text, i)
            if match:
                return match
            words = branch.line_prefix[0].match(self.text, i) if branch.line_prefix is not None else None
            if words:
                stop = branch.line_prefix[1].search(self.text, words.end())
                skip_from, skip_to = words.end(), len(self.text) if stop is None else stop.start()
                crossing = branch.line_prefix[2]
                if stop is not None and crossing is not None and crossing[0].match(self.text, skip_to):
                    run = skip_to  # where the run of X's characters holding the S character starts
                    while run > skip_from and crossing[0].match(self.text, run - 1):
                        run -= 1
                    skip_to = run - crossing[1] - 1  # starts from here on may reach past it: tried
        return None


def _top_branches(src: str) -> list[str]:
    """`A|B|C` → [A, B, C]; `(?:A|B)REST` → [A REST, B REST] (the same leftmost-first choices)."""
    parts = _split_bars(src)
    if len(parts) > 1:
        return parts
    if src.startswith("(?:"):
        end = _group_end(src, 0)
        rest = src[end + 1:]
        if end > 0 and not rest.startswith(("?", "*", "+", "{")):
            inner = _split_bars(src[3:end])
            if len(inner) > 1:
                return [f"(?:{part}){rest}" for part in inner]
    return [src]


def _scan_regex(src: str, start: int):
    """Yield (index, char, depth) over `src` from `start`, skipping escapes and character classes."""
    depth, i = 0, start
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            if j < len(src) and src[j] == "^":
                j += 1
            if j < len(src) and src[j] == "]":
                j += 1
            while j < len(src) and src[j] != "]":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        yield i, c, depth
        i += 1


def _split_bars(src: str) -> list[str]:
    parts, last = [], 0
    for i, c, depth in _scan_regex(src, 0):
        if c == "|" and depth == 0:
            parts.append(src[last:i])
            last = i + 1
    parts.append(src[last:])
    return parts


def _group_end(src: str, start: int) -> int:
    for i, c, depth in _scan_regex(src, start):
        if c == ")" and depth == 0:
            return i
    return -1


def _words(src: str, flags: int) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """(needed, head): words (lowercase) one of which every match of `src` contains, and words one
    of which every match starts with (ASCII only); None when there are none (or the pattern uses
    what this reading does not follow: then it is simply always tried, in full)."""
    if not flags & re.IGNORECASE:
        return None, None
    try:
        from re import _constants as C  # noqa: N812 - CPython's own regex parser (3.11+)
        from re import _parser

        items = list(_parser.parse(src, flags))
        need, _ = _seq(items, C)
        head = _head(items, C, bool(flags & re.MULTILINE)) if need is not None else None
    except Exception:  # noqa: BLE001 - another Python's internals: no shortcut, same verdicts
        return None, None
    return need, head


def _line_prefix(src: str, flags: int) -> tuple[str, str, tuple[str, int] | None] | None:
    """For `PREFIX[^S]*REST` (PREFIX at the top level: fixed words and zero-width checks, or those
    around one repeated class; S a plain set holding the newline; no back-references anywhere):
    PREFIX, `[S]`, and what the skip needs to know where PREFIX may reach past S (see
    _Branch.line_prefix), as pattern sources."""
    depth, i = 0, 0
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c in "()":
            depth += 1 if c == "(" else -1
        elif c == "|" and depth == 0:
            return None
        elif c == "[":
            close = src.find("]", i + 2)
            if close == -1:
                return None
            body = src[i + 1:close]
            if body.endswith("\\"):  # an escaped bracket: a class this reading does not follow
                return None
            if (depth == 0 and body.startswith("^") and "\\n" in body and src[close + 1:close + 2] == "*"
                    and src[close + 2:close + 3] not in ("?", "+") and "[" not in body):
                break
            i = close + 1
            continue
        i += 1
    else:
        return None
    prefix, stops = src[:i], "[" + body[1:] + "]"
    if not prefix:
        return None
    stop_re = re.compile(stops, flags)
    try:
        from re import _constants as C  # noqa: N812 - as in _words
        from re import _parser

        if _has_backref(list(_parser.parse(src, flags)), C):
            return None
        items = list(_parser.parse(prefix, flags))
        _need, exact = _seq(items, C)
        crossing = None
        if exact is None:  # `A X B`?
            solid = [k for k, (op, _av) in enumerate(items) if op not in (C.AT, C.ASSERT, C.ASSERT_NOT)
                     and _item(op, _av, C)[1] is None]
            if len(solid) != 1:
                return None
            x = solid[0]
            _n, exact = _seq(items[:x], C)
            _n, after = _seq(items[x + 1:], C)
            cls = _repeated_class(*items[x], C)
            if exact is None or after is None or cls is None or any(stop_re.search(w) for w in after):
                return None
            crossing = (cls, max(map(len, exact)))
        elif "" in exact:
            return None
    except Exception:  # noqa: BLE001 - as in _words
        return None
    if any(stop_re.search(w) for w in exact):  # a word that reaches past the line's end itself
        return None
    return prefix, stops, crossing


_CATEGORIES = {"CATEGORY_SPACE": r"\s", "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_DIGIT": r"\d",
               "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}


def _repeated_class(op, av, C) -> str | None:
    r"""`[...]+`, `\s*`, `x{1,3}` …: the repeated class as a one-character pattern; None for anything else."""
    if op not in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT) or len(av[2]) != 1:
        return None
    (sub_op, sub_av), = list(av[2])
    members = [(sub_op, sub_av)] if sub_op is C.LITERAL else list(sub_av) if sub_op is C.IN else None
    if not members:
        return None
    parts = []
    for k, (o, a) in enumerate(members):
        if o is C.NEGATE and k == 0:
            parts.append("^")
        elif o is C.LITERAL:
            parts.append(re.escape(chr(a)))
        elif o is C.RANGE:
            parts.append(f"{re.escape(chr(a[0]))}-{re.escape(chr(a[1]))}")
        elif o is C.CATEGORY and str(a) in _CATEGORIES:
            parts.append(_CATEGORIES[str(a)])
        else:
            return None
    return "[" + "".join(parts) + "]"




def _has_backref(items, C) -> bool:
    for op, av in items:
        if op in (C.GROUPREF, C.GROUPREF_EXISTS, C.GROUPREF_IGNORE, C.GROUPREF_UNI_IGNORE):
            return True
        subs = []
        if op is C.SUBPATTERN:
            subs = [av[3]]
        elif op is C.BRANCH:
            subs = av[1]
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            subs = [av[2]]
        elif op in (C.ASSERT, C.ASSERT_NOT):
            subs = [av[1]]
        elif op is C.ATOMIC_GROUP:
            subs = [av]
        if any(_has_backref(list(sub), C) for sub in subs):
            return True
    return False


def _head(items, C, multiline: bool) -> frozenset[str] | None:
    """The strings every match of the sequence starts with (None: not known): its leading exact
    items concatenated, then what the first other item starts with (a group, an alternation or a
    repeat of one). Only characters that match nothing but their own case forms (ASCII) or only
    themselves (uncased symbols), so that a substring search finds every offset."""
    run: set[str] = {""}
    for op, av in items:
        if op is C.AT and av is C.AT_BEGINNING and multiline and run == {""}:
            return frozenset({LINE_START})  # `^` first: the match starts where a line does
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        _need, exact = _item(op, av, C)
        if exact is not None and len(run) * len(exact) <= _MAX_WORDS:
            run = {a + b for a in run for b in exact}
            continue
        starts = _starts(op, av, C, multiline) if exact is None else None
        if starts is not None and len(run) * len(starts) <= _MAX_WORDS and (run == {""} or LINE_START not in starts):
            run = {a + b for a in run for b in starts}
        break
    if "" in run or not all(w == LINE_START or c.isascii() or c.lower() == c.upper() == c for w in run for c in w):
        return None
    # every match starts with a word's shortest-length prefix too: fewer, shorter words to find
    words = [w for w in run if w != LINE_START]
    shortest = min((len(w) for w in words), default=0)
    return frozenset(w if w == LINE_START else w[:shortest] for w in run)


def _starts(op, av, C, multiline: bool) -> frozenset[str] | None:
    """What every match of one (non-exact) item starts with."""
    if op is C.SUBPATTERN:
        return None if av[1] or av[2] else _head(av[3], C, multiline)
    if op is C.BRANCH:
        heads = [_head(sub, C, multiline) for sub in av[1]]
        return None if any(h is None for h in heads) else frozenset().union(*heads)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT) and av[0] >= 1:
        _need, exact = _seq(av[2], C)
        if exact is not None and "" not in exact and len(exact) ** min(av[0], 4) <= _MAX_WORDS:
            words: set[str] = {""}
            for _ in range(min(av[0], 4)):
                words = {a + b for a in words for b in exact}
            return frozenset(words)
        return _head(av[2], C, multiline)
    return None


_MAX_WORDS = 256


def _best(candidates: list[frozenset[str]]) -> frozenset[str] | None:
    good = [c for c in candidates if c and "" not in c]
    return max(good, key=lambda c: (min(map(len, c)), -len(c)), default=None)


def _seq(items, C) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """(needed words, exact set of strings matched or None) of a sequence of parsed items."""
    run: set[str] = {""}
    candidates: list[frozenset[str]] = []
    whole = True
    for op, av in items:
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):  # zero-width: the text around them stays contiguous
            continue
        need, exact = _item(op, av, C)
        if exact is not None and len(run) * len(exact) <= _MAX_WORDS:
            run = {a + b for a in run for b in exact}
            continue
        candidates.append(frozenset(run))
        whole = False
        run = set(exact) if exact is not None else {""}
        if need:
            candidates.append(need)
    candidates.append(frozenset(run))
    return _best(candidates), (frozenset(run) if whole else None)


def _item(op, av, C) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    if op is C.LITERAL:
        char = chr(av)
        if char.translate(_FOLD) != char:
            return None, None
        return frozenset({char.lower()}), frozenset({char.lower()})
    if op is C.IN and av and all(o is C.LITERAL for o, _ in av):  # [.!?:;]
        chars = [chr(a) for _, a in av]
        if any(c.translate(_FOLD) != c for c in chars):
            return None, None
        words = frozenset(c.lower() for c in chars)
        return words, words
    if op is C.SUBPATTERN:
        _group, add, remove, sub = av
        return (None, None) if add or remove else _seq(sub, C)
    if op is C.ATOMIC_GROUP:
        return _seq(av, C)
    if op is C.BRANCH:
        parts = [_seq(sub, C) for sub in av[1]]
        need = None if any(n is None for n, _ in parts) else frozenset().union(*(n for n, _ in parts))
        exact = None
        if all(e is not None for _, e in parts):
            exact = frozenset().union(*(e for _, e in parts))
            exact = exact if len(exact) <= _MAX_WORDS else None
        return need, exact
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        low, high, sub = av
        need, exact = _seq(sub, C)
        if low == 0:
            return None, (exact | {""} if exact is not None and high == 1 else None)
        return _best([c for c in (need, exact) if c is not None]), (exact if low == high == 1 else None)
    return None, None  # a class, any character, a back-reference: no word


# --------------------------------------------------------------------------- the rules

_PREVIOUS = (r"(?:(?:all|any|of|the|your|my|these|those|every)\s+)*"
             r"(?:previous|prior|above|earlier|preceding|former|foregoing|system|original|initial|old|existing)")
_ORDERS = (r"(?:instructions?|prompts?|rules|directions|guidelines|context|messages?|directives|commands|"
           r"orders|programming|constraints|guardrails|policies|restrictions)")
_OVERRIDE_VERB = r"(?:ignore|disregard|forget|override|bypass|skip|drop|abandon|discard)"
_AI = r"(?:ai|a\.i\.|llm|assistant|model|agent|bot|chatbot|gpt|claude|language\s+model)"
_ROLE = r"(?:system|admin(?:istrator)?|developer|root|operator|sudo|god)"
_OPEN = r"(?:#{2,}|={2,}|\*{2,}|-{3,}|!{2,}|>{2,}|\[{1,2}|<{1,2}|【)"
_CLOSE = r"(?:#{2,}|={2,}|\*{2,}|-{3,}|!{2,}|<{2,}|\]{1,2}|>{1,2}|】)"
_SECRETS = (r"(?:api[\s_-]?keys?|passwords?|passphrases?|secrets?|tokens?|credentials|private\s+keys?|"
            r"ssh\s+keys?|env(?:ironment)?\s+variables)")
_KEY_FILES = r"(?:\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|\.aws/credentials\b|\.netrc\b)"
_SEND = r"(?:send|post|upload|e-?mail|mail|forward|paste|leak|exfiltrate)"
# what a note must never ask the model reading it to do (a verb in its base form)
_DIRECTIVE = (r"(?:call|run|execute|exec|invoke|use\s+the\s+\w+\s+tool|send|e-?mail|forward|upload|post|"
              r"write|delete|remove|rm|add|append|install|download|fetch|curl|wget|open|connect|ignore|"
              r"disregard|reveal|print|tell|show|copy|move|grant|disable|enable|change|modify|edit|create|"
              r"push|commit|transfer|pay|silently|secretly|always|never|must|do\s+not|don'?t)")
# a line's start, past list markers, quotes, headings — on its own line: `^\s*` under MULTILINE ran
# over every blank line after each line start (40,000 blank lines before "act as …" took a minute)
_LINE = r"^[^\S\n]*(?:(?:[-*+>]|\d+[.)]|#{1,6})[^\S\n]+)*"
_SHELLS = r"(?:sudo\s+)?(?:env\s+\S+\s+)?(?:ba|z|k|da|fi|c|tc)?sh\b|python\d?\b|perl\b|ruby\b|node\b|php\b"
_USER = r"(?:the|your|my|this)\s+(?:user|human|owner|operator|principal)s?\b"

RULES: tuple[Rule, ...] = (
    Rule(
        "prompt-injection",
        "tries to override the agent's instructions",
        _rx(
            rf"\b{_OVERRIDE_VERB}\s+{_PREVIOUS}\s+{_ORDERS}"
            rf"|\b(?:ignore|disregard|forget|bypass|override)\s+(?:all\s+)?(?:your|the\s+(?:system|assistant)'?s?)\s+"
            r"(?:instructions|rules|guidelines|guardrails|programming|restrictions|safety\s+\w+|system\s+prompt)"
            r"|\b(?:override|replace|overwrite|ignore|disregard)\s+(?:the|your)\s+system\s+(?:prompt|message|instructions)"
            r"|\b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:(?:that\s+)?you\s+(?:were|have\s+been|'ve\s+been)\s+told"
            r"|above|before|so\s+far|previously)"
            r"|\b(?:ignore|disregard|forget)\s+(?:all\s+of\s+|everything\s+)?(?:the\s+|what(?:'s|\s+is|\s+was)\s+)?"
            r"(?:above|foregoing|preceding|previous|earlier)\b[^.\n]{0,40}?(?:\band\b|,|;)\s*(?:instead|now|just|rather)\b"
            r"|\b(?:ignore|disregard)\s+(?:the\s+)?(?:above|previous)\s+and\s+(?:tell|give|show|print|reveal|send|list|output|say)\b"
            r"|\bbypass\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:safety|security|content)\s+(?:rules|filters?|guidelines|checks|measures|policies)"
            r"|\bnew\s+(?:system\s+)?instructions\s*:"
            r"|\b(?:reveal|print|show|repeat|output|dump)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|hidden\s+instructions|initial\s+prompt)"
            r"|\bdo\s+not\s+follow\s+(?:your|the)\s+(?:rules|instructions|guidelines)"
            r"|\b(?:the\s+|your\s+|all\s+)?(?:previous\s+|prior\s+|system\s+)?(?:rules|instructions|guidelines|restrictions)"
            r"(?:\s+(?:above|before))?\s+(?:no\s+longer|do\s+not|don'?t)\s+apply"
            r"|\bobey\s+(?:only\s+)?(?:this|the)\s+(?:note|memory|file|message)"
            r"|\bfollow\s+only\s+(?:this|the)\s+(?:note|memory|file|message)"
            r"|\b(?:follow|obey)\s+(?:this|the)\s+(?:note|memory)\s+instead"
            rf"|\b{_AI}\s+(?:must|shall|will|should|is\s+to)\s+(?:always\s+)?(?:comply|obey)\b"
            r"|\bignora(?:r|d)?\s+(?:todas\s+)?(?:las\s+)?instrucciones\s+(?:anteriores|previas)"
            r"|\bignore[zr]?\s+(?:toutes\s+)?(?:les\s+)?instructions\s+(?:précédentes|precedentes|antérieures)"
            r"|\bignorier(?:e|en|t)?\s+(?:alle\s+)?(?:vorherigen|bisherigen|früheren|obigen)\s+(?:anweisungen|instruktionen|befehle)"
            r"|\bignore\s+(?:todas\s+)?(?:as\s+)?instruções\s+anteriores"
            r"|\bignora\s+(?:tutte\s+)?(?:le\s+)?istruzioni\s+precedenti"
            r"|(?:игнорируй(?:те)?|забудь(?:те)?)\s+(?:все\s+)?(?:предыдущие|прежние)\s+(?:инструкции|указания)"
            r"|忽略(?:之前|以上|先前|所有)(?:的)?(?:所有)?(?:指令|指示|提示)"
            r"|(?:以前|前|上記)の(?:指示|命令)を(?:すべて)?無視"
        ),
    ),
    Rule(
        "override-banner",
        "a banner that claims system or admin authority",
        _rx(
            rf"{_OPEN}\s*(?:begin\s+|end\s+|new\s+)?{_ROLE}\s+(?:override|prompt|message|instructions?|directive|mode|command|update)\s*{_CLOSE}"
            rf"|{_LINE}\[\s*{_ROLE}\s*\]"
            rf"|\[\s*{_ROLE}\s*\]\s*(?:[:\-]|priority|instruction|override|message|prompt|notice|mode|you\b|the\s+(?:assistant|ai|model)\b)"
            r"|(?:#{2,}|={2,}|\*{2,})\s*(?:override|jailbreak|sudo\s+mode|god\s+mode)\s*(?:#{2,}|={2,}|\*{2,})"
        ),
    ),
    Rule(
        "role-hijack",
        "tries to give the agent a new role or speak as the system",
        _rx(
            r"\byou\s+are\s+now\s+(?:(?:a|an|the|my|in)\s+)?(?:no\s+longer|dan|jailbroken|unrestricted|unfiltered|uncensored|free\s+of|evil|"
            r"root|admin(?:istrator)?|developer|system|hacker|different|new\s+(?:ai|assistant|persona|model)|ai\s+without|\w+\s+mode)\b"
            r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should)\b"
            rf"|(?:{_LINE}|[.!?:;]\s+|\byou\s+(?:must|should|will|shall|now)\s+)(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?"
            r"(?:the\s+|a\s+|an\s+)?(?:system|developer|admin(?:istrator)?|root|jailbroken|unrestricted|dan)\b"
            r"(?!\s+(?:owner|engineer|architect|lead|manager|user|team|integrator|account|contact))"
            r"|\b(?:act|behave)\s+as\s+(?:the\s+)?(?:root|system|admin(?:istrator)?|developer|superuser)\s+and\s+(?:run|execute|do|obey|follow|ignore)\b"
            r"|\bpretend\s+(?:to\s+be|you\s+are|you're)\s+(?:a\s+|an\s+|the\s+)?(?:system|developer|admin\w*|root|dan|jailbroken|"
            r"unrestricted|unfiltered|evil|different\s+ai|ai\s+without)"
            r"|\benter\s+(?:developer|god|dan|jailbreak|maintenance|debug)\s+mode\b"
            rf"|{_LINE}(?:system|developer|assistant)\s*:\s*(?:you\b|the\s+(?:user|assistant|ai|model)\b|ignore|override|new\s+instructions|<)"
            r"|\b(?:system|developer)\s*:\s*(?:the\s+user\s+(?:has|had)\s+(?:approved|authori[sz]ed|allowed)|you\s+(?:must|are\s+now|will\s+now|may\s+now)"
            r"|ignore\s+|override\s+|new\s+instructions)"
            r"|<\|?(?:im_start|im_end|system|endoftext)\|?>|\[/?INST\]|<</?SYS>>|</?system>"
        ),
    ),
    Rule(
        "reader-instruction",
        "gives orders to the model that reads the note",
        _rx(
            r"(?:"
            rf"\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+|any\s+|every\s+|all\s+)?{_AI}s?\b"
            rf"|\b(?:to|for|dear|hey|attention)\s+(?:the\s+|any\s+|an?\s+|every\s+)?{_AI}s?\s+(?:that|who)\s+"
            r"(?:reads?|is\s+reading|sees?|processes?|loads?|finds?)\b"
            rf"|\b(?:if|when|whenever|once)\s+(?:you|an?\s+{_AI})\s+(?:read|reads|see|sees|recall|recalls|load|loads|"
            r"find|finds|process|processes|are\s+reading)\s+this\b"
            rf"|\bif\s+you\s+are\s+an?\s+(?:{_AI})\b"
            r"|\bwhen(?:ever)?\s+this\s+(?:note|memory|file|message|text)\s+(?:is|gets)\s+(?:recalled|read|loaded|retrieved|found|seen|injected)"
            rf"|\b{_AI}\s*,\s*(?:when|if|once|please|you\s+must)\b"
            r"|\bwhoever\s+(?:reads|finds|sees|loads)\s+this\b"
            rf"|\b{_AI}s?\s+(?:reading|that\s+reads)\s+this\b"
            rf")[^\n]{{0,160}}?\b{_DIRECTIVE}\b"
        ),
    ),
    Rule(
        "concealment",
        "asks to hide something from the user",
        _rx(
            r"\b(?:do\s+not|don'?t|never|without)\s+(?:ever\s+)?(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|let(?:ting)?|"
            r"show(?:ing)?|reveal(?:ing)?|alert(?:ing)?|notify(?:ing)?|warn(?:ing)?|disclos(?:e|ing)|report(?:ing)?)\s+"
            rf"(?:[\w'-]+\s+){{0,4}}?(?:to\s+)?{_USER}"
            rf"|\b(?:hide|conceal|keep|withhold)\b[^.\n]{{0,60}}\bfrom\s+{_USER}"
            r"|\bwithout\s+(?:the\s+)?(?:user|human|owner)(?:'s)?\s+(?:knowing|knowledge|noticing|consent|approval|permission|seeing)"
            rf"|(?:{_LINE}|[.!?:;,]\s*|\b(?:you|and|then|please)\s+)(?:silently|secretly|covertly)\s+(?:add|send|forward|upload|copy|run|execute|"
            r"exec|install|delete|remove|write|append|change|email|post|grant|disable|exfiltrate)\b"
        ),
    ),
    Rule(
        "ssh-access",
        "plants ssh access or carries a private key",
        _rx(
            r">>?\s*\S*authorized_keys\b|\btee\s+(?:-a\s+)?\S*authorized_keys\b"
            r"|\b(?:add|append|put|insert|write|copy|install|place|drop|paste)\b[^.\n]{0,60}\bkeys?\b[^.\n]{0,40}\bauthorized_keys\b"
            r"|-----BEGIN\s+(?:OPENSSH\s+|RSA\s+|DSA\s+|EC\s+|ENCRYPTED\s+)?PRIVATE\s+KEY-----"
        ),
    ),
    Rule(
        "obfuscated-shell",
        "decodes a hidden payload and runs it",
        _rx(
            rf"\b(?:base64|b64|base32)\s+(?:-d|--decode|-D)\b[^\n]*\|\s*(?:{_SHELLS})"
            r"|\beval\b[^\n]{0,20}\b(?:echo|printf)\b[^\n]*\|\s*(?:base64|base32|xxd|rev|openssl)\b"
            r"|\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]*\s-(?:e|en|enc|encodedcommand)\s+[A-Za-z0-9+/=]{16,}"
            r"|\bpython\d?\s+-c\s+[\"'][^\n]*(?:os\.system|subprocess|\bexec\(|\beval\(|__import__)"
            rf"|\bxxd\s+-r\b[^\n]*\|\s*(?:{_SHELLS})"
            r"|\b(?:echo|printf)\s+-?e?\s*[\"'](?:\\x[0-9a-f]{2}){6,}"
        ),
    ),
    Rule(
        "remote-exec",
        "downloads code and runs it, or opens a remote shell",
        _rx(
            rf"\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^\n|;]*\|\s*(?:{_SHELLS})"
            r"|\b(?:ba|z|k|da)?sh\s+-c\s+[\"']?\$\(\s*(?:curl|wget)\b"
            r"|<\(\s*(?:curl|wget)\b"
            r"|\bnc(?:at)?\b[^\n]*\s-[ec]\s+\S*(?:sh|bash|cmd)\b"
            r"|/dev/tcp/[\w.\-]+/\d+"
            r"|\bsocat\b[^\n]*\bexec:"
            r"|\b(?:ba)?sh\s+-i\s+>&"
            r"|\b(?:open|start|spawn)\s+a\s+reverse\s+shell\b"
        ),
    ),
    Rule(
        "exfiltration",
        "looks like a command that sends secrets or local files somewhere",
        _rx(
            r"\b(?:curl|wget|nc|ncat|netcat|scp|rsync|http|Invoke-WebRequest)\b[^\n]*"
            r"(?:\$\{?[A-Z_]*(?:KEY|TOKEN|SECRET|PASS(?:WORD)?|CREDENTIALS?)[A-Z_]*\}?|\$\(\s*(?:env|printenv|cat)\b|@?~?/?\.(?:ssh|aws|env|netrc|gnupg)\b|/etc/(?:passwd|shadow))"
            r"|\b(?:env|printenv|set)\s*\|\s*(?:curl|wget|nc|ncat|netcat|base64)\b"
            r"|\bcat\s+[^\n|]*(?:\.ssh/|id_rsa|id_ed25519|\.aws/credentials|\.netrc|\.env\b)[^\n]*\|\s*(?:curl|wget|nc|ncat|base64)\b"
            rf"|\b(?:send|post|upload|email|forward|exfiltrate|leak)\s+(?:the\s+|all\s+|any\s+|your\s+|my\s+)*{_SECRETS}\s+to\b"
            rf"|\b(?:tell|give|show|send|print|reveal|list|dump|output|display|paste)\s+(?:me|us)\s+(?:all\s+|the\s+|your\s+|any\s+)*{_SECRETS}"
            # a private key file named, then asked to be sent on ("… ~/.ssh/id_rsa; send it to ops@…"),
            # or sent by name; a public key (id_rsa.pub) is meant to be shared
            rf"|{_KEY_FILES}[^\n]*\b{_SEND}\s+(?:it|them|this|that|its\s+contents?|a\s+copy|the\s+(?:file|keys?|contents?))\s+to\b"
            rf"|\b{_SEND}\s+(?:(?:me|us)\s+)?(?:(?:the|a\s+copy\s+of|the\s+contents?\s+of)\s+)?~?/?(?:\.ssh/)?{_KEY_FILES}"
        ),
    ),
)
RULE_NAMES = ("invisible-unicode", *(r.name for r in RULES))

# --------------------------------------------------------------------------- invisible characters

# zero-width, bidi controls, word joiners, BOM, soft hyphen, tag characters: text a person cannot see
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_ZERO_WIDTH_JOINERS = "\u200b\u200c\u200d"  # legitimate in emoji sequences and in many scripts
_MARKS = "\u200e\u200f"  # left-to-right / right-to-left marks: legitimate in right-to-left text
_BLACK_FLAG = "\U0001f3f4"  # tag characters after it spell a subdivision flag (🏴 + gbsct + cancel)


def _latin(char: str) -> bool:
    """An ASCII or Latin letter or digit: where a zero-width character only serves to split a word."""
    if not char:
        return False
    if char.isascii():
        return char.isalnum()
    return char.isalpha() and "LATIN" in unicodedata.name(char, "")


def _allowed_invisible(text: str, i: int) -> bool:
    """Invisible characters that ordinary text needs: a BOM at the start, ZWJ/ZWNJ/ZWSP between
    letters of scripts that use them or in emoji sequences, direction marks in right-to-left text,
    tag characters of a subdivision flag. Not: any of them inside Latin words, runs of them."""
    char = text[i]
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if char == "\ufeff":
        return i == 0
    if "\U000e0020" <= char <= "\U000e007f":
        j = i
        while j > 0 and "\U000e0020" <= text[j - 1] <= "\U000e007f":
            j -= 1
        return j > 0 and text[j - 1] == _BLACK_FLAG
    if _INVISIBLE.match(before) or _INVISIBLE.match(after):
        return False  # a run of invisible characters hides something
    if char in _ZERO_WIDTH_JOINERS:
        return not (_latin(before) or _latin(after))
    if char in _MARKS:
        return any(unicodedata.bidirectional(c) in ("R", "AL") for c in text)
    return False


def _invisible(text: str) -> Threat | None:
    if text.isascii():
        return None  # every character _INVISIBLE matches is outside ASCII (a search tried each one)
    for match in _INVISIBLE.finditer(text):
        i = match.start()
        if _allowed_invisible(text, i):
            continue
        char = match.group(0)
        name = unicodedata.name(char, "UNNAMED")
        return Threat("invisible-unicode", "contains a character a person cannot see",
                      f"U+{ord(char):04X} {name} at offset {i}")
    return None


# --------------------------------------------------------------------------- normalisation

_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g",
                       "@": "a", "$": "s", "!": "i", "|": "l"})
_LEET_L = str.maketrans({"1": "l", "!": "l"})
# a word made of letters and leetspeak digits/signs, with at least one letter and one sign
_LEET_WORD = re.compile(r"(?<![\w@$!|])(?=[\w@$!|]*[^\W\d_])(?=[\w@$!|]*[\d@$!|])[\w@$!|]{3,}")
# letters spaced out: i.g.n.o.r.e, i g n o r e, i-g-n-o-r-e (three or more)
_SPACED = re.compile(r"(?<![^\W\d_])(?:[^\W\d_][.\-_*·• ]){2,}[^\W\d_](?![^\W\d_])")
# Cheap tests that must pass before those two are tried (a pattern that opens with a character class
# is searched in C; the two above, opening with a look-behind, were most of a clean text's views):
# a leet word's run of word characters holds a letter and a sign, so somewhere a sign comes right
# before a letter (underscores between) — in the text or, the other way round, in the text reversed;
# letters spaced out end in "separator, letter, separator, letter" with no letter after it (not
# " a new": a clean text is seldom searched).
_SIGN_THEN_LETTER = re.compile(r"[\d@$!|]_*[^\W\d_]")
_SPACED_HINT = re.compile(r"[.\-_*·• ][^\W\d_][.\-_*·• ][^\W\d_](?![^\W\d_])")


def _may_be_leet(text: str) -> bool:
    return _SIGN_THEN_LETTER.search(text) is not None or _SIGN_THEN_LETTER.search(text[::-1]) is not None


_NON_LETTERS = re.compile(r"[^\w]|_")


@functools.cache
def _confusables() -> dict[str, str]:
    """Non-ASCII character → the ASCII letter or digit it looks like (Unicode's confusables via
    confusable-homoglyphs). A constant table, built once per process on first need."""
    try:
        from confusable_homoglyphs.confusables import confusables_data
    except ImportError:  # pragma: no cover - a dependency; NFKC still folds the common cases
        return {}
    table: dict[str, str] = {}
    for char, glyphs in confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        for glyph in glyphs:
            c = glyph.get("c", "")
            if len(c) == 1 and c.isascii() and c.isalnum():
                # the table maps capital I look-alikes (Cyrillic І, Greek Ι) to "l": as letters of
                # a Latin word they are read as I
                name = unicodedata.name(char, "")
                table[char] = "i" if c == "l" and (name.endswith(" I") or "IOTA" in name) else c.lower()
                break
    return table


def _skeleton(text: str) -> str:
    table = _confusables()
    # CJK and other scripts without Latin look-alikes keep their characters (their rules match
    # the base view anyway)
    return "".join(table.get(ch, ch) if not ch.isascii() and ch < "\u2e80" else ch for ch in text)


def views(text: str) -> list[str]:
    """The forms of `text` the rules are matched against (see the module docstring), distinct."""
    if text.isascii():  # NFKC keeps ASCII as it is, and every invisible character is outside it
        stripped = spaced = text
    else:
        base = unicodedata.normalize("NFKC", text)
        stripped = _INVISIBLE.sub("", base)
        spaced = _INVISIBLE.sub(" ", base)
    out = [stripped, spaced]
    folded = stripped
    if not folded.isascii():
        folded = _skeleton(folded)
        out.append(folded)
    if _may_be_leet(folded) and _LEET_WORD.search(folded):
        out.append(_LEET_WORD.sub(lambda m: m.group(0).translate(_LEET_L).translate(_LEET), folded))
        folded = _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET), folded)
        out.append(folded)
    if _SPACED_HINT.search(folded) and _SPACED.search(folded):
        out.append(_SPACED.sub(lambda m: _NON_LETTERS.sub("", m.group(0)), folded))
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------- the analysis, kept
# Reading the needed words off every rule's parsed alternatives took 45–70 ms, once per process:
# a tenth of a nightly `kit dream`, and most of a `kit memory write`. The result is data fixed by
# this file's source, so it is kept in $XDG_CACHE_HOME/kit/threat-words.json, keyed by a hash of
# this file and the Python version (whose regex parser it reads), and worked out again when either
# changed or the file is unreadable.


def _analyse(src: str, flags: int) -> list[list]:
    """Each top-level alternative of a pattern as JSON data: [source, needed words, head words,
    line prefix] (see _Branch)."""
    out = []
    for branch in _top_branches(src):
        needs, head = _words(branch, flags)
        prefix = _line_prefix(branch, flags)
        out.append([branch, None if needs is None else sorted(needs), None if head is None else sorted(head),
                    None if prefix is None else [prefix[0], prefix[1], None if prefix[2] is None else list(prefix[2])]])
    return out


def _cache_key() -> str:
    import sys

    from kit.fsutil import sha256_hex

    return sha256_hex(Path(__file__).read_bytes() + sys.version.encode())


@functools.cache
def _rules_analysis() -> dict[str, list[list]]:
    """`_analyse` of every rule's pattern (an immutable table once made), from the cache file when
    it was made by this source; else worked out and written there (a failure only costs speed)."""
    import json

    from kit.fsutil import atomic_write
    from kit.paths import user_cache_dir

    path = user_cache_dir() / "threat-words.json"
    key = _cache_key()
    want = {_rule_key(r.pattern.pattern, r.pattern.flags) for r in RULES}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["key"] == key and set(data["rules"]) == want:
            return data["rules"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    rules = {_rule_key(r.pattern.pattern, r.pattern.flags): _analyse(r.pattern.pattern, r.pattern.flags)
             for r in RULES}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"key": key, "rules": rules}, ensure_ascii=False))
    except OSError:
        pass
    return rules


def _rule_key(src: str, flags: int) -> str:
    return f"{flags}:{src}"


def _analysed(src: str, flags: int) -> list[list]:
    """`_analyse(src, flags)`, from the kept table for Kit's own rules."""
    found = _rules_analysis().get(_rule_key(src, flags))
    return found if found is not None else _analyse(src, flags)


# --------------------------------------------------------------------------- the scan


@functools.cache
def _needed_words() -> _Needs:
    """Every word some rule's alternative needs (an immutable table, built at the first scan)."""
    return _Needs.of(frozenset().union(*(rule.needs or () for rule in RULES)))


def scan(text: str) -> Threat | None:
    """None when the text is clean, else the first Threat found (invisible characters first,
    then RULES in order)."""
    if not text or not text.strip():
        return None
    threat = _invisible(text)
    if threat:
        return threat
    forms = [_View(form) for form in views(text)]
    table = _needed_words()
    found = [form.present(table) for form in forms]
    held = frozenset().union(*found)
    for rule in RULES:
        if rule.needs is not None and rule.needs.isdisjoint(held):
            continue  # no form holds a word it needs (what `Rule.search` tests first, for each form)
        for form, present in zip(forms, found, strict=True):
            match = rule.search(form, present)
            if match:
                excerpt = " ".join(match.group(0).split())[:60]
                return Threat(rule.name, rule.description, excerpt)
    return None


def scan_threats(text: str) -> Threat | None:
    """`from kit import scan_threats`: the scan for callers outside Kit's doors (MCP writes,
    imports, your own tools). Same as `scan`."""
    return scan(text)


def scan_text(text: str) -> str | None:
    """The reason string ("rule NAME: description (matched '…')") or None: the older API."""
    threat = scan(text)
    return threat.reason if threat else None


def added_lines(before: str | None, after: str) -> str:
    """The lines of `after` that `before` does not have (each line counted as often as it occurs):
    what a rewrite of a file adds. A file's existing text is its author's, not this write's."""
    if not before:
        return after
    have = Counter(before.splitlines())
    out = []
    for line in after.splitlines():
        if have[line] > 0:
            have[line] -= 1
        else:
            out.append(line)
    return "\n".join(out)


def scan_added(before: str | None, after: str) -> Threat | None:
    """Scan only what `after` adds to `before` (write_file / edit_file of an existing file)."""
    return scan(added_lines(before, after))


def scan_all(texts: Iterable[str]) -> Threat | None:
    """The first threat in any of `texts` (a topic and its text, the fields of an MCP call …)."""
    for text in texts:
        threat = scan(text)
        if threat:
            return threat
    return None


def check(text: str, *, what: str = "text") -> None:
    """Raise ThreatError ("<what> refused: rule NAME: …") when the scan flags `text`."""
    threat = scan(text)
    if threat:
        raise ThreatError(f"{what} refused: {threat.reason}", threat)
