"""Bootstrap budgets (§4): per-file cap, max-min fair share of the total, head+tail truncation.

    demand_i    = min(len(text_i), max_chars_per_file)      text after stripping <!-- kit:… -->
    allowance_i = demand_i                                  if Σ demand ≤ max_total_chars
                = min(demand_i, level)                      otherwise (water-filling level)

A file whose allowance `a` is below its length keeps its first ⌊head_ratio·a⌋ and last
⌊tail_ratio·a⌋ characters with one marker line between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_EPS = 1e-9  # 0.7 * 20000 is 14000.000000000002 in floating point


def fair_allowances(demands: Sequence[int], total: int) -> list[int]:
    """Max-min fair (water-filling) split of `total` over `demands`.

    Every demand at or below the level is met in full; every other file gets the same level,
    ⌊what remains / files left⌋. When everything fits, everyone gets their demand.
    """
    if sum(demands) <= total:
        return list(demands)
    order = sorted(range(len(demands)), key=lambda i: (demands[i], i))
    allowances = [0] * len(demands)
    remaining = total
    for position, index in enumerate(order):
        left = len(order) - position
        level = remaining // left
        if demands[index] <= level:
            allowances[index] = demands[index]
            remaining -= demands[index]
            continue
        for rest in order[position:]:
            allowances[rest] = level
        break
    return allowances


def marker_line(name: str, kept_head: int, kept_tail: int, length: int) -> str:
    return (
        f"[… {name} truncated: showing the first {kept_head:,} and last {kept_tail:,} of "
        f"{length:,} characters; read the full file with read_file(\"{name}\") …]"
    )


def truncate_head_tail(text: str, allowance: int, name: str, head_ratio: float, tail_ratio: float) -> str:
    """Keep the head and tail of `text` around one marker line; unchanged when it fits."""
    if len(text) <= allowance:
        return text
    head = int(head_ratio * allowance + _EPS)
    tail = int(tail_ratio * allowance + _EPS)
    head_text = text[:head]
    tail_text = text[len(text) - tail :] if tail > 0 else ""
    # exact head/tail slices; the newlines around the marker are added, never taken from them
    return _join_with_marker(head_text, marker_line(name, head, tail, len(text)), tail_text)


def _join_with_marker(head: str, marker: str, tail: str) -> str:
    out = head
    if out and not out.endswith("\n"):
        out += "\n"
    out += marker
    if tail:
        out += "\n" + tail
    return out


@dataclass(frozen=True)
class FileBudget:
    """One bootstrap file after budgeting, as reported by `kit prompt --json`."""

    name: str
    raw_chars: int  # length after stripping Kit comments
    injected_chars: int  # what actually goes into the prompt, marker included
    truncated: bool
    reason: str | None  # None | "max_per_file" | "max_total" | "excluded_by_kind"
    allowance: int = 0  # the budget it was given: file characters kept (head + tail), marker excluded
    text: str = ""  # the injected text
    kept_head: int = 0  # when truncated: characters kept from the start …
    kept_tail: int = 0  # … and from the end (kept_head + kept_tail <= allowance)
    problem: str | None = None  # the file could not be loaded ("SOUL.md:3: invalid frontmatter …")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "raw_chars": self.raw_chars,
            "injected_chars": self.injected_chars,
            "truncated": self.truncated,
            "reason": self.reason,
            "allowance": self.allowance,
            "problem": self.problem,
        }


def apply_budgets(
    files: Sequence[tuple[str, str]],
    *,
    max_chars_per_file: int,
    max_total_chars: int,
    head_ratio: float,
    tail_ratio: float,
) -> list[FileBudget]:
    """Budget `files` [(name, text)] (text already stripped of Kit comments)."""
    demands = [min(len(text), max_chars_per_file) for _, text in files]
    allowances = fair_allowances(demands, max_total_chars)
    out: list[FileBudget] = []
    for (name, text), demand, allowance in zip(files, demands, allowances, strict=True):
        if allowance >= len(text):
            out.append(FileBudget(name, len(text), len(text), False, None, allowance, text))
            continue
        reason = "max_total" if allowance < demand else "max_per_file"
        injected = truncate_head_tail(text, allowance, name, head_ratio, tail_ratio)
        head = int(head_ratio * allowance + _EPS)
        tail = int(tail_ratio * allowance + _EPS)
        out.append(FileBudget(name, len(text), len(injected), True, reason, allowance, injected, head, tail))
    return out
