"""Reading another agent's files for an import: every problem is one `path:line: message`.

A file the plan cannot read (invalid UTF-8, broken JSON5 or YAML) stops the plan before anything
is written: a Markdown file that is not UTF-8 cannot pass the threat scan, and a config that does
not parse would lose every value in it. The messages are Kit's own (kit.fsutil for UTF-8,
kit.yamlsafe for YAML), so an import says what `kit doctor` would say of the same file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kit.errors import DocumentError
from kit.fsutil import decode_text
from kit.yamlsafe import NotAMapping, YamlError, load_mapping

# json5's message: `<string>:5 Unexpected "," at column 29` (the character itself between the quotes,
# a raw newline included) or `<string>:1 Unexpected end of input at column 6`; columns 1-based
_JSON5_ERROR = re.compile(r'\A<string>:(\d+) Unexpected (?:"(.)"|(end of input)) at column (\d+)\Z', re.S)
_BLANK = {"\n": "end of line", "\r": "end of line", " ": "space", "\t": "tab"}


def source_text(path: Path, display: str) -> str:
    """A UTF-8 text as it is, BOM and all (a copy stays byte for byte); not UTF-8: DocumentError
    at the line of the first bad byte (`MEMORY.md:2: not valid UTF-8 (byte 14)`)."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        decode_text(raw, display=display)  # raises with Kit's message and the line
        raise


def config_text(path: Path, display: str) -> str:
    """A config file's text (a leading BOM dropped, as parsers want it), or DocumentError."""
    return decode_text(path.read_bytes(), display=display)


def load_yaml_file(path: Path, display: str) -> dict[str, Any]:
    """A YAML file whose top level must be a mapping (Hermes' config.yaml, HOOK.yaml), read with
    Kit's bounded loader; any problem is one DocumentError at its line."""
    try:
        values, _ = load_mapping(config_text(path, display))
    except NotAMapping as exc:  # "the top level is a list, not a mapping", at line 1
        raise DocumentError(exc.message, path=display, line=exc.line) from None
    except YamlError as exc:
        raise DocumentError(f"invalid YAML: {exc.message}", path=display, line=exc.line) from None
    return values


def json5_problem(message: str, text: str) -> tuple[int | None, str]:
    """json5's error as (line, one-line problem). json5 names the character where parsing stopped;
    when that is a blank (`,,` then the end of the line) the mistake is the character before it,
    so the column is that character's."""
    m = _JSON5_ERROR.match(message)
    if not m:
        return None, " ".join(message.split())
    line, char, end, column = int(m[1]), m[2], m[3], int(m[4])
    if end:
        return line, f"the file ends at column {column} before the JSON5 is complete (an unclosed bracket or string?)"
    if char in _BLANK:
        before = text.split("\n")[line - 1][: column - 1].rstrip() if line <= text.count("\n") + 1 else ""
        if before:
            return line, f"unexpected {_BLANK[char]} after {before[-1]!r} at column {len(before)}"
        return line, f"unexpected {_BLANK[char]} at column {column}"
    return line, f"unexpected {char!r} at column {column}"


def load_json5(path: Path, display: str) -> Any:
    """openclaw.json's values (JSON5: comments, trailing commas, unquoted keys), or DocumentError."""
    import json5

    text = config_text(path, display)
    try:
        return json5.loads(text)
    except RecursionError:
        raise DocumentError("cannot read as JSON5: nested too deeply", path=display) from None
    except ValueError as exc:
        line, problem = json5_problem(str(exc), text)
        raise DocumentError(f"cannot read as JSON5: {problem}", path=display, line=line) from None


def kind_of(value: Any, mapping: str = "an object") -> str:
    """What a value is, for a report that must not show the value itself (it may be a secret)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return mapping
    if isinstance(value, list):
        return "a list"
    return type(value).__name__
