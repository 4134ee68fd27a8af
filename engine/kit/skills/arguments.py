"""What a skill's body says once it is used: `{baseDir}` and `$ARGUMENTS` filled in, as the
ecosystem writes them (OpenClaw's `{baseDir}`, Claude Code's `${CLAUDE_SKILL_DIR}`, `$ARGUMENTS`,
`$ARGUMENTS[N]`, `$N` and the names of an `arguments:` list).

    substitute("Deploy $ARGUMENTS from {baseDir}", skill_dir=Path("/s/deploy"), arguments="staging")
    -> "Deploy staging from /s/deploy"

As in Claude Code: `$N` and `$ARGUMENTS[N]` are 0-based (`$0` is the first argument), split with
shell quoting; a missing indexed argument stays as written, a missing named one is empty; values
are inserted as they are (never expanded again); `\\$` writes a literal `$`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

_DIR_RE = re.compile(r"\{baseDir\}|\$\{CLAUDE_SKILL_DIR\}")
_ARG_RE = re.compile(r"\\\$|\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS\b|\$(\d+)|\$([A-Za-z_][A-Za-z0-9_]*)")


def split_arguments(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: words, as typed
        return text.split()


def argument_names(value: object) -> list[str]:
    """`arguments:` in the frontmatter: a list, or a space-separated string."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int))]
    return []


def has_placeholder(body: str, names: Sequence[str] = ()) -> bool:
    for match in _ARG_RE.finditer(body):
        if match.group(0) == "\\$":
            continue
        if match.group(3) is None or match.group(3) in names:
            return True
    return False


def substitute(body: str, *, skill_dir: Path, arguments: str | None, names: Sequence[str] = ()) -> str:
    """The body with the skill folder and (when `arguments` is given) the arguments filled in."""
    body = _DIR_RE.sub(lambda _m: str(skill_dir), body)
    if arguments is None:
        return body
    values = split_arguments(arguments)

    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "\\$":
            return "$"
        index = match.group(1) or match.group(2)
        if index is not None:
            i = int(index)
            return values[i] if i < len(values) else whole
        name = match.group(3)
        if name is not None:
            if name not in names:
                return whole  # $HOME, $PATH …: not the skill's
            i = list(names).index(name)
            return values[i] if i < len(values) else ""
        return arguments  # $ARGUMENTS

    return _ARG_RE.sub(one, body)
