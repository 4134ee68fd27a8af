"""SKILL.md rules (§5), each with a message that names the key and, where known, its line."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from kit.problems import Problem

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_SKILL_BYTES = 256_000
MAX_BODY_LINES = 500
MAX_COMPATIBILITY = 500

KNOWN_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools",
     "user-invocable", "disable-model-invocation", "always", "requires"}
)
REQUIRES_KEYS = ("bins", "any_bins", "env", "os")
OS_ALIASES = {"macos": "darwin", "mac": "darwin", "osx": "darwin", "windows": "win32", "win": "win32"}


def placeholder_description(name: str) -> str:
    """The description `kit skills new NAME` writes when none is given."""
    return f"What {name} does and when to use it."


def key_line(text: str, key: str) -> int | None:
    """1-based line of a top-level frontmatter key, for messages."""
    pattern = re.compile(rf"^{re.escape(key)}\s*:", re.M)
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def name_problem(name: Any) -> str | None:
    """Why `name` is not a valid skill name, or None."""
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


def _string_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def normalise_os(name: str) -> str:
    low = name.strip().lower()
    return OS_ALIASES.get(low, low)


def validate_skill(
    meta: Mapping[str, Any], body: str, *, folder: str, text: str, size: int, path: str | None = None
) -> list[Problem]:
    """Every rule of §5 (`path`: the SKILL.md, for the problems). Errors exclude the skill;
    warnings are reported only."""
    problems: list[Problem] = []

    def err(message: str, key: str | None = None) -> None:
        problems.append(Problem(area="skills", path=path, line=key_line(text, key) if key else None,
                                message=message))

    def warn(message: str, key: str | None = None, line: int | None = None) -> None:
        problems.append(Problem(area="skills", path=path, line=line or (key_line(text, key) if key else None),
                                message=message, severity="warning"))

    if size > MAX_SKILL_BYTES:
        err(f"SKILL.md is {size:,} bytes, over the {MAX_SKILL_BYTES:,}-byte limit")
        return problems
    if not meta:
        err("SKILL.md needs YAML frontmatter between '---' lines with at least 'name' and 'description'")
        return problems

    name = meta.get("name")
    problem = name_problem(name)
    if problem:
        err(problem, "name")
    elif name != folder:
        err(f"'name' {name!r} must equal the folder name {folder!r}", "name")

    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        err("'description' is required: one to 1024 characters saying what the skill does and when to use it",
            "description")
    elif len(description) > MAX_DESCRIPTION:
        err(f"'description' is {len(description)} characters, the limit is {MAX_DESCRIPTION}", "description")
    elif " ".join(description.split()) == placeholder_description(str(name)):
        warn("'description' is still the placeholder from `kit skills new`: say what the skill does and "
             "when to use it (the model picks skills by their description)", "description")

    if "license" in meta and not isinstance(meta["license"], str):
        err("'license' must be a string", "license")
    if "compatibility" in meta:
        compat = meta["compatibility"]
        if not isinstance(compat, str):
            err("'compatibility' must be a string", "compatibility")
        elif len(compat) > MAX_COMPATIBILITY:
            err(f"'compatibility' is {len(compat)} characters, the limit is {MAX_COMPATIBILITY}", "compatibility")
    if "metadata" in meta and not isinstance(meta["metadata"], Mapping):
        err("'metadata' must be a mapping of keys to values", "metadata")
    if "allowed-tools" in meta and _string_list(meta["allowed-tools"]) is None:
        err("'allowed-tools' must be a string or a list of strings", "allowed-tools")
    for key in ("user-invocable", "disable-model-invocation", "always"):
        if key in meta and not isinstance(meta[key], bool):
            err(f"'{key}' must be true or false, not {meta[key]!r}", key)

    if "requires" in meta:
        requires = meta["requires"]
        if not isinstance(requires, Mapping):
            err("'requires' must be a mapping with bins, any_bins, env and/or os", "requires")
        else:
            for key, value in requires.items():
                if key not in REQUIRES_KEYS:
                    err(f"unknown key 'requires.{key}' (expected one of {', '.join(REQUIRES_KEYS)})", "requires")
                elif value is not None and _string_list(value) is None:
                    err(f"'requires.{key}' must be a list of strings", "requires")

    for key in sorted(set(meta) - KNOWN_KEYS, key=str):
        warn(f"unknown frontmatter key '{key}' (ignored)", str(key))

    body_lines = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    if not body.strip():
        warn("SKILL.md has no instructions after the frontmatter")
    elif body_lines > MAX_BODY_LINES:
        warn(f"body is {body_lines} lines, over the recommended {MAX_BODY_LINES}: move detail into references/")
    return problems


def requirements(meta: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """`requires` as {bins, any_bins, env, os} tuples (assumes validation passed)."""
    raw = meta.get("requires") or {}
    return {key: tuple(_string_list(raw.get(key)) or ()) for key in REQUIRES_KEYS}


def readiness(requires: Mapping[str, tuple[str, ...]], *, which, environ: Mapping[str, str],
              platform: str = sys.platform) -> tuple[str, dict[str, list[str]]]:
    """("available" | "missing" | "unsupported", what is missing)."""
    wanted_os = [normalise_os(o) for o in requires.get("os", ())]
    if wanted_os and not any(platform.startswith(o) for o in wanted_os):
        return "unsupported", {"os": list(requires.get("os", ()))}
    missing: dict[str, list[str]] = {}
    bins = [b for b in requires.get("bins", ()) if not which(b)]
    if bins:
        missing["bins"] = bins
    any_bins = list(requires.get("any_bins", ()))
    if any_bins and not any(which(b) for b in any_bins):
        missing["any_bins"] = any_bins
    env = [e for e in requires.get("env", ()) if not environ.get(e)]
    if env:
        missing["env"] = env
    return ("missing" if missing else "available"), missing
