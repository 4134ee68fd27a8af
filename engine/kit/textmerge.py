"""Line-wise merges of text versions (plain functions, difflib only: `merge3` is GPL-2.0 and
`git merge-file` would need git wherever Kit writes).

    carry(old, new, current)   `current` with the change old → new made to it too, as
                               `git cherry-pick` makes a commit's change to a newer tree; None
                               when `current` no longer holds the lines that change touches

Used the other way round (`carry(after, before, current)`) it takes a change out, as `git revert`.
"""

from __future__ import annotations

from difflib import SequenceMatcher

__all__ = ["carry"]


def carry(old: str, new: str, current: str) -> str | None:
    """`current` with the change `old` → `new` applied, line by line; None when `current` no longer
    holds the lines that change replaced (or the neighbours of the lines it inserts), i.e. someone
    changed those very lines since `old`."""
    if current == old:
        return new
    b, a, c = (t.splitlines(keepends=True) for t in (new, old, current))
    at: dict[int, int] = {}  # line of `old` → the same line in `current`, for the lines still there
    for block in SequenceMatcher(None, a, c, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            at[block.a + k] = block.b + k
    edits: list[tuple[int, int, list[str]]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, b, a, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if j1 < j2:  # the change replaced old[j1:j2]: they must all still be there, together
            if any(j not in at for j in range(j1, j2)) or at[j2 - 1] - at[j1] != j2 - 1 - j1:
                return None
            edits.append((at[j1], at[j2 - 1] + 1, b[i1:i2]))
            continue
        # the change only inserted new[i1:i2]: they go between the same two neighbours
        left = at.get(j1 - 1) if j1 > 0 else -1
        right = at.get(j1) if j1 < len(a) else len(c)
        if left is None or right is None or right != left + 1:
            return None
        edits.append((right, right, b[i1:i2]))
    for start, end, lines in reversed(edits):
        c[start:end] = lines
    return "".join(c)
