"""Frontmatter rules shared by SKILL.md and HOOK.md: one declaration per key (its kind, whether
it is required, its limit), one checker that reports a broken rule with the key's line, one name
rule. What only one file knows (a skill's `requires`, a hook's events and handler) stays with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kit.problems import Problem

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64


@dataclass(frozen=True)
class Key:
    """One frontmatter key. `kind`: text (a string), bool, strings (a string or a list of
    strings), mapping, number. `message`: the error for a missing or wrong value when the
    generic one would not say enough (what the key is for). A required key's missing value is
    reported with `message` too."""

    kind: str
    severity: str = "error"  # of a wrong value: "warning" when the file still loads without it
    required: bool = False
    nullable: bool = False  # `key:` with no value counts as absent (else it is a wrong value)
    max_chars: int | None = None
    positive: bool = False  # number: above zero
    message: str = ""  # may use {key} and {value!r}


def key_line(text: str, key: str) -> int | None:
    """1-based line of a top-level key in the frontmatter that opens `text`; None when absent."""
    if not key or not text.startswith("---"):
        return None
    pattern = re.compile(rf"^{re.escape(key)}\s*:")
    for number, line in enumerate(text.split("\n")[1:], start=2):
        if line.strip() in ("---", "..."):
            break
        if pattern.match(line):
            return number
    return None


def name_problem(name: Any) -> str | None:
    """Why `name` is not a valid skill or hook name (1-64 of a-z, 0-9, single hyphens), or None."""
    if not isinstance(name, str) or not name:
        return "'name' is required (1-64 characters: a-z, 0-9 and single hyphens)"
    if len(name) > MAX_NAME:
        return f"'name' is {len(name)} characters, the limit is {MAX_NAME}"
    if not NAME_RE.match(name):
        if name.startswith("-") or name.endswith("-"):
            return f"'name' {name!r} must not start or end with a hyphen"
        if "--" in name:
            return f"'name' {name!r} must not contain a double hyphen"
        return f"'name' {name!r} may only use lowercase letters a-z, digits 0-9 and hyphens"
    return None


def folder_problem(name: str, folder: str) -> str:
    """A skill or hook lives in the folder of its name."""
    return f"'name' {name!r} must equal the folder name {folder!r}"


def string_list(value: Any) -> list[str] | None:
    """A string or a list of strings as a list; None for anything else."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _value_problem(key: str, value: Any, rule: Key) -> str | None:
    wrong = {
        "text": lambda: not isinstance(value, str) or (rule.required and not value.strip()),
        "bool": lambda: not isinstance(value, bool),
        "strings": lambda: string_list(value) is None or (rule.required and not value),
        "mapping": lambda: not isinstance(value, Mapping),
        "number": lambda: isinstance(value, bool) or not isinstance(value, (int, float))
        or (rule.positive and value <= 0),
    }[rule.kind]
    if wrong():
        return (rule.message or GENERIC[rule.kind]).format(key=key, value=value)
    if rule.max_chars is not None and len(value) > rule.max_chars:
        return f"'{key}' is {len(value)} characters, the limit is {rule.max_chars}"
    return None


GENERIC = {
    "text": "'{key}' must be a string",
    "bool": "'{key}' must be true or false, not {value!r}",
    "strings": "'{key}' must be a string or a list of strings",
    "mapping": "'{key}' must be a mapping of keys to values",
    "number": "'{key}' must be a number, not {value!r}",
}


def check_keys(meta: Mapping[str, Any], keys: Mapping[str, Key], *, text: str, area: str,
               path: str | None) -> tuple[dict[str, Any], list[Problem]]:
    """({key: value} of the keys given with a good value, every broken rule of `keys`): a missing
    required key, a value of the wrong kind, one too long; in the order of `keys`, each an error at
    its key's line."""
    good: dict[str, Any] = {}
    problems: list[Problem] = []
    for key, rule in keys.items():
        value = meta.get(key)
        if key not in meta or (value is None and (rule.required or rule.nullable)):
            if rule.required:
                message = (rule.message or "'{key}' is required").format(key=key, value=value)
                problems.append(Problem(area=area, path=path, line=key_line(text, key), message=message))
            continue
        problem = _value_problem(key, value, rule)
        if problem:
            problems.append(Problem(area=area, path=path, line=key_line(text, key), message=problem,
                                    severity=rule.severity))
        else:
            good[key] = value
    return good, problems


def unknown_keys(meta: Mapping[str, Any], known: frozenset[str], *, text: str, area: str,
                 path: str | None) -> list[Problem]:
    """A warning for each key the file's rules do not know: it is ignored, and maybe misspelt."""
    return [Problem(area=area, path=path, line=key_line(text, str(key)), severity="warning",
                    message=f"unknown frontmatter key '{key}' (ignored)")
            for key in sorted(set(meta) - known, key=str)]
