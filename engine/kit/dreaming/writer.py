"""The one place dreaming writes the workspace: `Files` for every file, `write_memory` for MEMORY.md.

Deep and `kit memory verify accept` both go through `write_memory`; files people edit (MEMORY.md,
the archive, DREAMS.md) are changed with `Files.update`, the workspace's one compare-and-swap
(`ws.update_text`), so an edit made meanwhile is never reverted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kit.core import WorkspaceCore
from kit.dreaming import managed
from kit.errors import DocumentError
from kit.filewrite import sweep_temps
from kit.fsutil import read_text
from kit.memory.notes import MEMORY_FILE


class Files:
    """Reads and writes workspace files for one dream (or one verify step); `dry_run` writes nothing."""

    def __init__(self, ws: WorkspaceCore, dry_run: bool = False):
        self.ws = ws
        self.dry_run = dry_run
        self.changed: list[str] = []
        if not dry_run:
            self.sweep()

    def sweep(self) -> None:
        """Remove the temp files a killed dream (kill -9) left where dreams write. A write sweeps its
        own folder, but this run may write nothing there (an unchanged report is not rewritten)."""
        root = self.ws.root
        folders = [root, root / "memory", *sorted(p for p in (root / "memory" / "dreaming").glob("*") if p.is_dir())]
        for folder in folders:
            sweep_temps(folder)

    def read(self, rel: str) -> str | None:
        """The file's text, None when it does not exist; DocumentError (file and line) when it is not
        UTF-8 text, so a dream never rewrites a file it could not read faithfully."""
        path = self.ws.path(rel)
        try:
            return read_text(path, display=rel)
        except DocumentError:
            if not path.exists():
                return None
            raise

    def write(self, rel: str, text: str) -> None:
        """Write only what differs, so an idle re-run leaves every file (and its mtime) alone.
        For files only Kit writes (the dream's reports); files people edit go through `update`."""
        if self.dry_run or self.read(rel) == text:
            return
        self.ws.write_text(rel, text)
        if rel not in self.changed:
            self.changed.append(rel)

    def update(self, rel: str, change: Callable[[str | None], str | None]) -> str | None:
        """Apply `change` (text or None → new text) to the file as it is when written: a
        compare-and-swap that re-applies the change to a newer version whenever the user (or any
        other program) edited the file meanwhile, so their edit is never reverted. Returns the text
        written (in a dry run: what would be)."""
        if self.dry_run:
            return change(self.read(rel))
        # a file that is not UTF-8 text (or a FIFO, a device …) stops the dream with file and line
        done = self.ws.update_text(rel, change)
        if done.wrote and rel not in self.changed:
            self.changed.append(rel)
        return done.text


Recall = Callable[[managed.Entry], tuple[str, float]]


def merged_and_retired(text: str, add: list[managed.Entry], remove: list[tuple[str, str]], cap: int,
                       last_recall: Recall | None) -> tuple[str, list[managed.Entry]]:
    """MEMORY.md `text` with the additions and removals, and the entries the cap then retires
    (oldest last recall first; none without `last_recall`)."""
    from kit.dreaming.deep import choose_retirements

    merged = managed.merge(text, add=add, remove=remove)
    return merged, choose_retirements(merged, cap, last_recall) if last_recall else []


def planned_retirements(text: str, *, add: Iterable[managed.Entry] = (), remove: Iterable[tuple[str, str]] = (),
                        cap: int = 0, last_recall: Recall | None = None) -> list[managed.Entry]:
    """The entries `write_memory` would retire from MEMORY.md as `text` holds it now: the archive
    is written with them before MEMORY.md is swapped, so a dream stopped in between loses none."""
    return merged_and_retired(text, list(add), list(remove), cap, last_recall)[1]


def write_memory(files: Files, *, add: Iterable[managed.Entry] = (), remove: Iterable[tuple[str, str]] = (),
                 cap: int = 0, last_recall: Recall | None = None,
                 drop_lines: Iterable[str] = ()) -> list[managed.Entry]:
    """Apply additions and removals (entries by (key, claim); `drop_lines`: lines of the user's own,
    only on the user's say, `kit memory verify accept`) to MEMORY.md as it is right now, then retire
    entries (oldest last recall first) until the promoted section fits `cap`. Returns the retired
    entries.

    `change` may run more than once (again on a newer text when the user saved in between); the
    retirements returned are those of the text that was written.
    """
    add, remove, drop_lines = list(add), list(remove), list(drop_lines)
    retired: list[managed.Entry] = []

    def change(base: str | None) -> str:
        nonlocal retired
        text = base or ""
        for line in drop_lines:
            text = managed.drop_user_line(text, line)
        merged, retired = merged_and_retired(text, add, remove, cap, last_recall)
        return managed.merge(merged, remove=[(e.key, e.claim) for e in retired])

    files.update(MEMORY_FILE, change)
    return retired
