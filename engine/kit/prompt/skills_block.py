"""The skills block (§4): full → compact → truncated, within max_in_prompt and max_prompt_chars.

    full       "- name: description (location)"   every eligible skill, when count and chars fit
    compact    "- name (location)"                 every eligible skill, when count and chars fit
    truncated  the largest compact prefix that fits (binary search), plus a line saying how many
               were left out and to call skills_list
    none       no eligible skills, or not even the header fits
Eligible skills arrive sorted: `always: true` first, then by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

HEADER = (
    "## Skills\n\n"
    "Skills are folders of instructions for specific tasks. When one matches the task, call "
    "skill_view(name) first and follow it."
)


@dataclass(frozen=True)
class SkillEntry:
    name: str
    description: str
    location: str


@dataclass(frozen=True)
class SkillsBlock:
    text: str
    format: str  # full | compact | truncated | none
    total: int  # skills in the catalog (valid, any readiness)
    eligible: int  # available, model-invocable, not blocked
    in_prompt: int

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "eligible": self.eligible, "in_prompt": self.in_prompt,
                "format": self.format, "chars": len(self.text)}


def full_line(s: SkillEntry) -> str:
    return f"- {s.name}: {s.description} ({s.location})"


def compact_line(s: SkillEntry) -> str:
    return f"- {s.name} ({s.location})"


def more_line(left_out: int) -> str:
    noun = "skill is" if left_out == 1 else "skills are"
    return f"- … {left_out} more {noun} not listed here: call skills_list to see them all."


def render(lines: Sequence[str]) -> str:
    return HEADER + "\n\n" + "\n".join(lines)


def build_skills_block(
    skills: Sequence[SkillEntry], *, max_in_prompt: int, max_prompt_chars: int, total: int | None = None
) -> SkillsBlock:
    n = len(skills)
    total = n if total is None else total
    if n == 0 or max_in_prompt <= 0:
        return SkillsBlock("", "none", total, n, 0)
    if n <= max_in_prompt:
        text = render([full_line(s) for s in skills])
        if len(text) <= max_prompt_chars:
            return SkillsBlock(text, "full", total, n, n)
        text = render([compact_line(s) for s in skills])
        if len(text) <= max_prompt_chars:
            return SkillsBlock(text, "compact", total, n, n)
    compact = [compact_line(s) for s in skills]

    def truncated(k: int) -> str:
        return render([*compact[:k], more_line(n - k)])

    if len(truncated(0)) > max_prompt_chars:
        return SkillsBlock("", "none", total, n, 0)
    low, high = 0, min(n, max_in_prompt)  # invariant: truncated(low) fits
    while low < high:
        mid = (low + high + 1) // 2
        if len(truncated(mid)) <= max_prompt_chars:
            low = mid
        else:
            high = mid - 1
    return SkillsBlock(truncated(low), "truncated", total, n, low)
