"""SKILL.md rules (§5), each with a message that names the key and, where known, its line."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from kit.frontmatter import (  # name_problem re-exported: `kit skills new` checks a name with it
    Key,
    check_keys,
    folder_problem,
    key_line,
    name_problem,
    string_list,
    unknown_keys,
)
from kit.problems import Problem

MAX_DESCRIPTION = 1024
MAX_SKILL_BYTES = 256_000
MAX_BODY_LINES = 500
MAX_COMPATIBILITY = 500

KNOWN_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools",
     "user-invocable", "disable-model-invocation", "always", "requires",
     # read by Kit from the ecosystem's shapes (Claude Code, OpenClaw, Hermes)
     "arguments", "argument-hint", "platforms", "prerequisites", "required_environment_variables"}
)
# keys the documented formats of Claude Code, OpenClaw and Hermes define that Kit does not use:
# ignored without an "unknown key" warning (a skill written for them is not wrong)
IGNORED_KEYS = frozenset(
    {"when_to_use", "disallowed-tools", "model", "effort", "context", "agent", "background", "hooks",
     "paths", "shell", "homepage", "version", "author", "command-dispatch", "command-tool",
     "command-arg-mode"}
)
REQUIRES_KEYS = ("bins", "any_bins", "env", "os", "mcp", "config")
# metadata.openclaw.requires (camelCase) -> Kit's requires keys
OPENCLAW_REQUIRES = {"bins": "bins", "anyBins": "any_bins", "env": "env", "config": "config"}
OPENCLAW_KEYS = ("openclaw", "clawdbot")  # clawdbot: the older name, read when openclaw is absent
OS_ALIASES = {"macos": "darwin", "mac": "darwin", "osx": "darwin", "windows": "win32", "win": "win32"}
# the keys checked by kind alone (kit.frontmatter); the name, the description and `requires` have
# rules of their own below
KEYS: dict[str, Key] = {
    "license": Key("text"),
    "compatibility": Key("text", max_chars=MAX_COMPATIBILITY),
    "metadata": Key("mapping", severity="warning", message="'metadata' must be a mapping of keys to values; ignored"),
    "allowed-tools": Key("strings"),
    "user-invocable": Key("bool"),
    "disable-model-invocation": Key("bool"),
    "always": Key("bool"),
}


def placeholder_description(name: str) -> str:
    """The description `kit skills new NAME` writes when none is given."""
    return f"What {name} does and when to use it."


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
    if not meta and not first_body_line(body):
        err("SKILL.md needs YAML frontmatter between '---' lines with at least 'name' and 'description'")
        return problems
    if not meta:
        # "---" lines with nothing between them are there: say what is missing, not to add them
        fenced = text.lstrip("\ufeff").startswith("---")
        warn(("SKILL.md's frontmatter is empty" if fenced else "SKILL.md has no frontmatter")
             + ": its name is the folder's and the body's first line stands in for the description ("
             + ("write name and description between the '---' lines)" if fenced
                else "add '---' lines with name and description)"), line=1 if fenced else None)

    # a missing name is the folder's (Claude Code and OpenClaw do the same)
    name = meta.get("name") if meta.get("name") is not None else folder
    problem = name_problem(name)
    if problem:
        err(problem, "name")
    elif name != folder:
        err(folder_problem(name, folder), "name")

    description = meta.get("description")
    if description is None and not meta:
        pass  # said above
    elif description is None and first_body_line(body):
        warn("no 'description': the body's first line stands in for it (the model picks skills by their "
             "description: write one)")
    elif not isinstance(description, str) or not description.strip():
        err("'description' is required: one to 1024 characters saying what the skill does and when to use it",
            "description")
    elif len(description) > MAX_DESCRIPTION:
        warn(f"'description' is {len(description)} characters, over the {MAX_DESCRIPTION} limit: "
             f"loaded cut to {MAX_DESCRIPTION}", "description")
    elif " ".join(description.split()) == placeholder_description(str(name)):
        warn("'description' is still the placeholder from `kit skills new`: say what the skill does and "
             "when to use it (the model picks skills by their description)", "description")

    problems += check_keys(meta, KEYS, text=text, area="skills", path=path)[1]

    if "requires" in meta:
        requires = meta["requires"]
        if not isinstance(requires, Mapping):
            # another agent's shape (a list of skill ids …): not Kit's, so it counts for nothing
            warn("'requires' is not a mapping of bins, any_bins, env, os, mcp and/or config; ignored", "requires")
        else:
            for key, value in requires.items():
                if key not in REQUIRES_KEYS and key != "anyBins":
                    warn(f"unknown key 'requires.{key}' ignored (Kit reads {', '.join(REQUIRES_KEYS)})", "requires")
                elif value is not None and string_list(value) is None:
                    err(f"'requires.{key}' must be a list of strings", "requires")
    metadata = meta.get("metadata") if isinstance(meta.get("metadata"), Mapping) else {}
    vendor_key, vendor = _openclaw(metadata)
    if vendor is not None:
        vendor_requires = vendor.get("requires")
        if vendor_requires is not None and not isinstance(vendor_requires, Mapping):
            warn(f"'metadata.{vendor_key}.requires' is not a mapping; ignored", "metadata")
        for key, value in (vendor_requires or {}).items() if isinstance(vendor_requires, Mapping) else ():
            if key not in OPENCLAW_REQUIRES:
                warn(f"unknown key 'metadata.{vendor_key}.requires.{key}' ignored", "metadata")
            elif value is not None and string_list(value) is None:
                err(f"'metadata.{vendor_key}.requires.{key}' must be a list of strings", "metadata")
        primary = vendor.get("primaryEnv")
        if primary is not None and not isinstance(primary, str):
            err(f"'metadata.{vendor_key}.primaryEnv' must be the name of an environment variable", "metadata")

    problems += unknown_keys(meta, KNOWN_KEYS | IGNORED_KEYS, text=text, area="skills", path=path)

    body_lines = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    if not body.strip():
        warn("SKILL.md has no instructions after the frontmatter")
    elif body_lines > MAX_BODY_LINES:
        warn(f"body is {body_lines} lines, over the recommended {MAX_BODY_LINES}: move detail into references/")
    return problems


def first_body_line(body: str) -> str:
    """The first non-empty line of the body's prose, without a heading's #s (a missing description's
    stand-in). Code blocks are not prose: a body opening with one stood in as "```bash", an open
    fence in the system prompt."""
    fence = ""  # the open fence's run: a closing one is the same character, at least as long
    for line in body.splitlines():
        stripped = line.strip()
        run = len(stripped) - len(stripped.lstrip(stripped[:1])) if stripped[:1] in ("`", "~") else 0
        if fence:
            if run >= len(fence) and stripped[0] == fence[0] and not stripped[run:].strip():
                fence = ""
            continue
        if run >= 3:
            fence = stripped[:run]
            continue
        text = stripped.lstrip("#").strip()
        if text:
            return text
    return ""


def description_of(meta: Mapping[str, Any], body: str) -> str:
    """The description as loaded: one line, cut to 1024 characters, or the body's first line."""
    raw = meta.get("description")
    text = " ".join(str(raw).split()) if isinstance(raw, str) else first_body_line(body)
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1].rstrip() + "…"


def _openclaw(metadata: Mapping[str, Any]) -> tuple[str, Mapping[str, Any] | None]:
    for key in OPENCLAW_KEYS:
        value = metadata.get(key)
        if isinstance(value, Mapping):
            return key, value
    return "", None


def requirements(meta: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """What the skill needs, as {bins, any_bins, env, os, mcp, config} tuples (assumes validation
    passed), from Kit's `requires` and the ecosystem's shapes: OpenClaw's `metadata.openclaw`
    (requires.bins/anyBins/env/config, primaryEnv, os; `always: true` there waives all but os),
    Hermes' `platforms`, `prerequisites.commands` and `required_environment_variables`."""
    out: dict[str, list[str]] = {key: [] for key in REQUIRES_KEYS}

    def add(key: str, values: Any) -> None:
        for value in string_list(values) or ():
            if value not in out[key]:
                out[key].append(value)

    raw = meta.get("requires")
    if isinstance(raw, Mapping):
        for key in REQUIRES_KEYS:
            add(key, raw.get(key))
        add("any_bins", raw.get("anyBins"))
    metadata = meta.get("metadata") if isinstance(meta.get("metadata"), Mapping) else {}
    _key, vendor = _openclaw(metadata)
    if vendor is not None:
        add("os", vendor.get("os"))
        if vendor.get("always") is not True:
            vendor_requires = vendor.get("requires") if isinstance(vendor.get("requires"), Mapping) else {}
            for key, kit_key in OPENCLAW_REQUIRES.items():
                add(kit_key, vendor_requires.get(key))
            if isinstance(vendor.get("primaryEnv"), str):
                add("env", vendor["primaryEnv"])
    add("os", meta.get("platforms"))
    prerequisites = meta.get("prerequisites")
    if isinstance(prerequisites, Mapping):
        add("bins", prerequisites.get("commands"))
    variables = meta.get("required_environment_variables")
    if isinstance(variables, list):
        add("env", [v.get("name") if isinstance(v, Mapping) else v for v in variables
                    if isinstance(v, str) or (isinstance(v, Mapping) and isinstance(v.get("name"), str))])
    return {key: tuple(values) for key, values in out.items()}


def mcp_servers(config: Any) -> frozenset[str]:
    """The MCP servers kit.yaml configures and enables (what `requires.mcp` names)."""
    if config is None:
        return frozenset()
    from kit.config import mcp_server_names  # the one definition (kit.mcp_client reads it too)

    return frozenset(mcp_server_names(config))


def readiness(requires: Mapping[str, tuple[str, ...]], *, which, environ: Mapping[str, str],
              platform: str = sys.platform, config: Any = None) -> tuple[str, dict[str, list[str]]]:
    """("available" | "missing" | "unsupported", what is missing). `config`: the workspace's
    effective config, for `mcp` (servers configured) and `config` (dotted keys that are truthy)."""
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
    if requires.get("mcp"):
        servers = mcp_servers(config)
        mcp = [m for m in requires["mcp"] if m not in servers]
        if mcp:
            missing["mcp"] = mcp
    keys = [k for k in requires.get("config", ()) if config is None or not config.get(k, None)]
    if keys:
        missing["config"] = keys
    return ("missing" if missing else "available"), missing
