"""Config values read from another agent's file, each checked before it reaches kit.yaml.

A value of the wrong type (`model: 42`, `contextTokens: "100000"`, `agents.defaults: 5`) is
reported by its key path and type, never its value (it may be a secret), and not imported; the
rest of the file still is. What passes is checked once more with Kit's own config loader, so the
kit.yaml an import writes always loads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from kit.importers.reading import kind_of

# what a value must be, and how a report names it
KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "whole": (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    "number": (lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"),
    "bool": (lambda v: isinstance(v, bool), "true/false"),
    "strings": (lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v), "a list of strings"),
    "mapping": (lambda v: isinstance(v, dict), ""),  # named by the reader: "an object" or "a mapping"
}
# no user config file: an imported value is judged alone, not with the importing person's own
_NO_USER_FILE = Path(os.devnull) / "kit-import-has-no-user-config"


class TypedReader:
    """Values of a parsed config file by dotted key path; `notes` collects what was refused."""

    def __init__(self, origin: str, data: Mapping[str, Any], mapping: str = "an object"):
        self.origin, self.data, self.mapping = origin, data, mapping
        self.notes: list[str] = []

    def _expected(self, kinds: tuple[str, ...]) -> str:
        return " or ".join(KINDS[k][1] or self.mapping for k in kinds)

    def _refuse(self, path: str, value: Any, kinds: tuple[str, ...]) -> None:
        found = kind_of(value, self.mapping)
        odd = [v for v in value if not isinstance(v, str)] if isinstance(value, list) else []
        if "strings" in kinds and odd:  # a list, but not of strings: say what is in it
            found = f"a list holding {kind_of(odd[0], self.mapping)}"
        self.notes.append(f"{self.origin} {path} is {found}, not {self._expected(kinds)}: not imported")

    def get(self, path: str, *kinds: str) -> Any:
        """The value at `path` when it is one of `kinds`; None when absent (or null). A wrong
        type, here or in a section on the way, is reported and gives None."""
        node: Any = self.data
        walked: list[str] = []
        for key in path.split("."):
            if not isinstance(node, dict):
                self._refuse(".".join(walked), node, ("mapping",))
                return None
            if node.get(key) is None:
                return None
            node = node[key]
            walked.append(key)
        if not any(KINDS[k][0](node) for k in kinds):
            self._refuse(path, node, kinds)
            return None
        return node

    def section(self, path: str) -> dict[str, Any]:
        """A mapping at `path` ({} when absent or reported as the wrong type)."""
        return self.get(path, "mapping") or {}


def nest(values: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys as nested mappings: {"agent.model": x} -> {"agent": {"model": x}}."""
    tree: dict[str, Any] = {}
    for dotted, value in values.items():
        *parents, leaf = dotted.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def kit_problems(key: str | tuple[str, ...], value: Any) -> list[str]:
    """What Kit's config loader says of `key: value` in a kit.yaml of its own ([] when it loads).
    `key`: dotted, or its parts (an MCP server's name may hold a dot)."""
    from kit.config import ConfigError, config_errors, load_config

    tree: Any = value
    for part in reversed(key.split(".") if isinstance(key, str) else key):
        tree = {part: tree}
    text = yaml.safe_dump(tree, sort_keys=False, allow_unicode=True)
    try:
        load_config(_NO_USER_FILE.parent, workspace_text=text, environ={}, user_file=_NO_USER_FILE)
    except ConfigError as exc:
        return [error.message for error in config_errors(exc)]
    return []


def checked(values: Mapping[str, Any], origin: str, names: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """`values` without those Kit's config loader refuses, and a report line for each refused one
    (`names`: the key each came from in `origin`)."""
    kept: dict[str, Any] = {}
    notes: list[str] = []
    for dotted, value in values.items():
        problems = kit_problems(dotted, value)
        if problems:
            notes.append(f"{origin} {names.get(dotted, dotted)}: not imported: {'; '.join(problems)}")
        else:
            kept[dotted] = value
    return kept, notes
