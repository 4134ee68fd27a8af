"""`allowed-tools` while a skill is active: the calls a skill's instructions may make.

A skill is *active* from the moment its instructions enter the conversation — `/skill NAME`, or
the model's `skill_view(NAME)` — until the end of that turn. While one or more skills that
declare `allowed-tools` are active, a call runs only when one of them grants it; `skills_list`
and `skill_view` always run (a skill reads its own files). Kit's own reading, stricter than Claude
Code's, where `allowed-tools` pre-approves tools without restricting the others.

Entries are Kit tool names or Claude Code's (`Bash`, `Read`, `Write`, `Edit`, `mcp__srv__tool`),
space- or comma-separated or a YAML list, optionally with a pattern: `Bash(git add *)` grants
`exec` for commands matching the glob, `Edit(docs/*)` grants `edit_file` on matching paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kit.hooks.claude_map import Grant, parse_rules

ALWAYS = frozenset({"skills_list", "skill_view"})


def parse(value: Any) -> tuple[Grant, ...]:
    """The grants of an `allowed-tools` value (a string or a list of strings)."""
    return parse_rules(value)


@dataclass
class ActiveSkills:
    """The skills active in one turn and what their `allowed-tools` grant."""

    grants: dict[str, tuple[Grant, ...]] = field(default_factory=dict)

    def activate(self, name: str, allowed: Any) -> None:
        if allowed is None:
            return  # a skill without allowed-tools restricts nothing (and lifts nothing)
        self.grants[name] = parse(allowed)

    def refusal(self, name: str, args: dict[str, Any]) -> str | None:
        """Why the call may not run while these skills are active, or None."""
        if not self.grants or name in ALWAYS:
            return None
        if any(g.allows(name, args) for grants in self.grants.values() for g in grants):
            return None
        skills = ", ".join(f"'{s}' ({' '.join(g.text for g in grants) or 'nothing'})"
                           for s, grants in self.grants.items())
        return f"{name} is not in the allowed-tools of the active skill {skills}"
