"""Regular expressions compiled at their first use, not at import.

Compiling Kit's large patterns (the threat rules, the date parser's handlers) took about a tenth
of a `kit run`'s own time before the first token, though a turn often uses none of them: the date
handlers run only on text that has a date word, the threat rules only on text being scanned.
Also the case folding that makes an ASCII word re.IGNORECASE finds a plain substring test. A leaf
module with no imports from Kit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any


class LazyPattern:
    """Stands in for `re.compile(pattern, flags)`: the same methods, compiled on first use."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self._source = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:  # two threads may both compile: the same result, no harm
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    @property
    def pattern(self) -> str:  # as re.Pattern has it, without compiling
        return self._source

    @property
    def flags(self) -> int:  # the flags given (re.Pattern adds re.UNICODE for a str pattern)
        return self._flags

    # the usual methods, spelled out: through __getattr__ each call first failed a lookup (a
    # microsecond, five times the search of a short text)
    def search(self, *args: Any, **kwargs: Any) -> re.Match[str] | None:
        return self.compiled.search(*args, **kwargs)

    def match(self, *args: Any, **kwargs: Any) -> re.Match[str] | None:
        return self.compiled.match(*args, **kwargs)

    def fullmatch(self, *args: Any, **kwargs: Any) -> re.Match[str] | None:
        return self.compiled.fullmatch(*args, **kwargs)

    def findall(self, *args: Any, **kwargs: Any) -> list[Any]:
        return self.compiled.findall(*args, **kwargs)

    def finditer(self, *args: Any, **kwargs: Any) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(*args, **kwargs)

    def sub(self, *args: Any, **kwargs: Any) -> str:
        return self.compiled.sub(*args, **kwargs)

    def split(self, *args: Any, **kwargs: Any) -> list[Any]:
        return self.compiled.split(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # subn, groupindex …
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self._source[:40]!r}…)"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(pattern, flags)


# the non-ASCII letters re.IGNORECASE equates with ASCII ones ("ſ" matches "s", the Kelvin sign "k")
IGNORECASE_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def fold_ascii(text: str) -> str:
    """`text` lower-cased so that an ASCII word re.IGNORECASE finds in it is a plain substring."""
    if not text.isascii() and any(c in text for c in "\u0130\u0131\u017f\u212a"):
        text = text.translate(IGNORECASE_FOLD)
    return text.lower()
