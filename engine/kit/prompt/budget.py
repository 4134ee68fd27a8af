"""Bootstrap budgets (§4): per-file cap, max-min fair share of the total, head+tail truncation.

    demand_i    = min(len(text_i), max_chars_per_file)      text after stripping <!-- kit:… -->
    allowance_i = demand_i                                  if Σ demand ≤ max_total_chars
                = min(demand_i, level)                      otherwise (water-filling level)

A file whose allowance `a` is below its length keeps its first ⌊head_ratio·a⌋ and last
⌊tail_ratio·a⌋ characters with one marker line between them. The allowance holds everything the
file puts in the prompt, marker included: when head + marker + tail would not fit (a small
allowance), head and tail shrink in their ratio until they do; when even the marker alone would
not fit, the file is left out (nothing injected; the report and the warnings say so) and its share
goes back to the others: the water-filling is run again over the files still in, one file left out
at a time (of those whose share cannot hold the marker, the one with the largest demand, then the
longest, then the last loaded), until every file still in fits whole or holds the marker. So no
file ever takes more than its allowance, a cut file is always shorter than the file, the files
never take more than `max_total_chars` together, and a total too small for every file still goes
to the files it can hold.
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


def _holds_nothing(name: str, text: str, allowance: int) -> bool:
    """Whether a file given `allowance` is left out: cut, and not even the marker line fits."""
    return allowance < len(text) and len(marker_line(name, 0, 0, len(text))) > allowance


def settled_allowances(files: Sequence[tuple[str, str]], demands: Sequence[int],
                       total: int) -> tuple[list[int], set[int]]:
    """Each file's allowance, and the indexes of the files left out.

    Water-filling over the files still in; while some of them get a share that cannot hold the
    truncation marker, the one with the largest demand (then the longest text, then the last in
    load order) is left out, keeping the share it had as its reported allowance, and the total is
    shared again over the rest. A share only grows when a file leaves, so this stops, and a file
    that was kept stays kept."""
    allowances = [0] * len(files)
    active = list(range(len(files)))
    left_out: set[int] = set()
    while True:
        shares = fair_allowances([demands[i] for i in active], total)
        for index, share in zip(active, shares, strict=True):
            allowances[index] = share
        failing = [i for i in active if _holds_nothing(files[i][0], files[i][1], allowances[i])]
        if not failing:
            return allowances, left_out
        worst = max(failing, key=lambda i: (demands[i], len(files[i][1]), i))
        left_out.add(worst)
        active.remove(worst)


def marker_line(name: str, kept_head: int, kept_tail: int, length: int) -> str:
    return (
        f"[… {name} truncated: showing the first {kept_head:,} and last {kept_tail:,} of "
        f"{length:,} characters; read the full file with read_file(\"{name}\") …]"
    )


@dataclass(frozen=True)
class Cut:
    """How a file is cut to its allowance: the characters kept from each end, and the text."""

    head: int
    tail: int
    text: str  # "" when the allowance cannot hold even the marker line: the file is left out


def cut_to_allowance(text: str, allowance: int, name: str, head_ratio: float, tail_ratio: float) -> Cut:
    """Cut `text` (longer than `allowance`) to head + marker line + tail within `allowance`."""
    length = len(text)
    if len(marker_line(name, 0, 0, length)) > allowance:
        return Cut(0, 0, "")  # not even the marker fits: the file is left out
    head = int(head_ratio * allowance + _EPS)
    tail = int(tail_ratio * allowance + _EPS)
    # the marker's numbers only get smaller as head and tail shrink, and so does the marker: what
    # fits beside the marker (and newlines) of the first numbers fits beside the final ones too
    room = allowance - len(marker_line(name, head, tail, length)) - _separators(head, tail)
    if head + tail > room:
        head, tail = _scaled(head, tail, room)
    marker = marker_line(name, head, tail, length)
    # exact head/tail slices; the newlines around the marker are added, never taken from them
    return Cut(head, tail, _join_with_marker(text[:head], marker, text[length - tail :] if tail else ""))


def _separators(head: int, tail: int) -> int:
    """The most newlines put around the marker: one after a head, one before a tail."""
    return (1 if head else 0) + (1 if tail else 0)


def _scaled(head: int, tail: int, room: int) -> tuple[int, int]:
    """Head and tail scaled down in their ratio to add up to `room` (the rounding goes to the head)."""
    if room <= 0:
        return 0, 0
    kept_tail = tail * room // (head + tail)
    return room - kept_tail, kept_tail


def truncate_head_tail(text: str, allowance: int, name: str, head_ratio: float, tail_ratio: float) -> str:
    """Keep the head and tail of `text` around one marker line, within `allowance` characters
    (marker included); unchanged when it fits, "" when not even the marker fits."""
    if len(text) <= allowance:
        return text
    return cut_to_allowance(text, allowance, name, head_ratio, tail_ratio).text


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
    raw_chars: int  # length without frontmatter and Kit comments, LF line endings
    injected_chars: int  # what actually goes into the prompt, marker included (<= allowance)
    truncated: bool
    reason: str | None  # None | "max_per_file" | "max_total" | "excluded_by_kind"
    allowance: int = 0  # the budget it was given: characters in the prompt, marker included
    text: str = ""  # the injected text
    kept_head: int = 0  # when truncated: characters kept from the start …
    kept_tail: int = 0  # … and from the end (kept_head + kept_tail + marker <= allowance)
    problem: str | None = None  # the file could not be loaded ("SOUL.md:3: invalid frontmatter …")

    @property
    def left_out(self) -> bool:
        """Cut to nothing: the allowance could not hold even the truncation marker."""
        return self.truncated and not self.text

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
    allowances, left_out = settled_allowances(files, demands, max_total_chars)
    out: list[FileBudget] = []
    for index, ((name, text), demand, allowance) in enumerate(zip(files, demands, allowances, strict=True)):
        if index in left_out:
            reason = "max_total" if allowance < demand else "max_per_file"
            out.append(FileBudget(name, len(text), 0, True, reason, allowance))
            continue
        if allowance >= len(text):
            out.append(FileBudget(name, len(text), len(text), False, None, allowance, text))
            continue
        reason = "max_total" if allowance < demand else "max_per_file"
        cut = cut_to_allowance(text, allowance, name, head_ratio, tail_ratio)
        out.append(FileBudget(name, len(text), len(cut.text), True, reason, allowance, cut.text, cut.head, cut.tail))
    return out
