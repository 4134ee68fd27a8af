"""An undo journal for one fleet dream, so that a run killed half-way is rolled back before its
rerun, and the rerun leaves the workspace exactly as one clean run would.

What a dream writes, and how each is undone:
- workspace files: every write goes through `ws.write_text`; `JournaledWorkspace` saves the file's
  original (or notes that it did not exist) in the journal *before* the first write (an undo log),
  and, before each write, the text it changes and the text it writes. The rollback is a
  compare-and-swap like every other write, because a person may have saved the file during the
  run: each of the run's changes is taken out of the file as it is now (as `git revert` takes out
  a commit), so an edit saved meanwhile, before or after the run's write, stays. Where it cannot be
  taken out cleanly (the person changed the very lines), the file is kept as it is and a note
  says so;
- the dreaming tables of `.kit/state.db` (`DREAM_TABLES`): copied into the journal when it begins;
- git: HEAD at the start; dream commits made since are reset (`--soft`, then the files are restored)
  and anything the dream staged is unstaged. A commit that is not a dream's is never touched;
- `.kit/index.db`: derived data, re-synced for the restored files after a rollback.

Layout (inside `.kit/fleet/journal/<kind>/`): `manifest.json` (written last at begin, so a journal
without one recorded nothing and the workspace was not touched yet), `files/<rel>`, `state.db`.
Only the holder of the workspace's dream lock uses it.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from kit import clock
from kit.core import ANY
from kit.errors import ConflictError, DocumentError
from kit.filewrite import FileState, file_state, remove_file, write_file
from kit.fsutil import atomic_write, sha1_hex
from kit.textmerge import carry
from kit.wording import plural
from kit.workspace import Workspace

# the tables kit.dreaming.store owns (tests check this matches what its schema creates)
DREAM_TABLES = ("dream_phase_hits", "dream_promotions", "dream_vectors", "dream_verify", "dream_junk",
                "dream_checkpoint")
DREAM_COMMIT_PREFIX = "dream: "


class JournaledWorkspace(Workspace):
    """A Workspace whose own writes are recorded in `journal` (when one is set) before they happen."""

    journal: Journal | None = None

    def write_text(self, rel: str, text: str, **options):
        # every write goes through here (ws.update_text's compare-and-swap too); options: expected=
        journal = self.journal
        if journal is None:
            return super().write_text(rel, text, **options)
        with self.writing():
            journal.save(rel)
            expected = options.get("expected", ANY)
            if isinstance(expected, FileState):
                before: str | None | object = expected.text
            elif expected is None:
                before = None
            else:  # an unconditional write (Kit's own reports): what it replaces is what is there now
                try:
                    before = file_state(self.path(rel), display=rel, settle=False).text
                except DocumentError:
                    before = UNKNOWN
            mark = journal.intend(rel, before, text)
            try:
                done = super().write_text(rel, text, **options)
            except ConflictError:
                journal.forget(rel, mark)  # nothing was written: nothing to take out
                raise
            journal.landed(rel, mark)
            return done


UNKNOWN = object()  # a write whose previous text could not be read: only undone if the file is still its text


def revert_change(before: str, after: str, current: str) -> str | None:
    """`current` with the change `before` → `after` taken out, line by line, as `git revert` takes a
    commit out of a newer tree; None when `current` no longer holds the lines that change wrote (or
    the neighbours of lines it removed), i.e. someone changed those very lines since."""
    return carry(after, before, current)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def _in_git(root: Path) -> bool:
    try:
        done = _git(root, "rev-parse", "--is-inside-work-tree")
    except FileNotFoundError:
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


class Journal:
    def __init__(self, ws: Workspace, kind: str = "dream"):
        self.ws = ws
        self.dir = ws.kit_dir / "fleet" / "journal" / kind
        self.manifest_path = self.dir / "manifest.json"
        self._manifest: dict[str, Any] | None = None

    # ------------------------------------------------------------------ state

    def exists(self) -> bool:
        return self.dir.exists()

    def _load(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None

    def _flush(self) -> None:
        atomic_write(self.manifest_path, json.dumps(self._manifest, indent=1, sort_keys=True))

    # ------------------------------------------------------------------ begin / save

    def begin(self, task_id: str) -> None:
        """Record what the run may change. Call with the dream lock held and no journal left."""
        shutil.rmtree(self.dir, ignore_errors=True)
        (self.dir / "files").mkdir(parents=True)
        root = self.ws.root
        head = staged = None
        git = _in_git(root)
        if git:
            rev = _git(root, "rev-parse", "--verify", "-q", "HEAD")
            head = rev.stdout.strip() if rev.returncode == 0 else None
            staged = _git(root, "diff", "--cached", "--quiet").returncode != 0
        self._snapshot_tables()
        self._manifest = {"task_id": task_id, "started": clock.now().isoformat(timespec="seconds"),
                          "git": git, "head": head, "staged_at_start": staged, "files": {}}
        self._flush()  # from here on the journal is valid: the workspace may change

    def _blob(self, text: str | None) -> str | None:
        if text is None:
            return None
        digest = sha1_hex(text)
        path = self.dir / "blobs" / digest
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
        return digest

    def _text(self, digest: str | None) -> str | None:
        return None if digest is None else (self.dir / "blobs" / digest).read_text(encoding="utf-8")

    def intend(self, rel: str, before: str | None | object, after: str) -> int:
        """Record, before it happens, that this run is about to change `rel` from `before` to `after`
        (flushed first: a run killed during the write leaves it recorded as pending)."""
        assert self._manifest is not None
        writes = self._manifest.setdefault("writes", {}).setdefault(rel, [])
        writes.append({"before": "?" if before is UNKNOWN else self._blob(before),  # type: ignore[arg-type]
                       "after": self._blob(after), "landed": False})
        self._flush()
        return len(writes) - 1

    def landed(self, rel: str, mark: int) -> None:
        assert self._manifest is not None
        self._manifest["writes"][rel][mark]["landed"] = True
        self._flush()

    def forget(self, rel: str, mark: int) -> None:
        assert self._manifest is not None
        del self._manifest["writes"][rel][mark]
        self._flush()

    def save(self, rel: str) -> None:
        """Keep `rel`'s original before its first write in this run."""
        if self._manifest is None or rel in self._manifest["files"]:
            return
        src = self.ws.path(rel)
        if src.is_file():
            dst = self.dir / "files" / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(dst, src.read_bytes())
            self._manifest["files"][rel] = "saved"
        else:
            self._manifest["files"][rel] = "absent"
        self._flush()

    def _state_path(self) -> Path:
        return self.ws.kit_dir / "state.db"

    def _snapshot_tables(self) -> None:
        from kit.dreaming import store

        db = self.ws.open_state()
        try:
            store.ensure_schema(db)
            db.execute("ATTACH DATABASE ? AS j", (str(self.dir / "state.db"),))
            try:
                with db.transaction():
                    for table in DREAM_TABLES:
                        db.execute(f"CREATE TABLE j.{table} AS SELECT * FROM main.{table}")
            finally:
                db.execute("DETACH DATABASE j")
        finally:
            db.close()

    # ------------------------------------------------------------------ end

    def discard(self) -> None:
        """The run finished (or was never started): forget the journal."""
        self._manifest = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def rollback(self) -> list[str]:
        """Put the workspace back as it was when the journal began; returns what was done (notes).
        A journal without a manifest recorded nothing (the run died before touching anything)."""
        manifest = self._manifest or self._load()
        notes: list[str] = []
        if manifest is None:
            self.discard()
            return notes
        restored = list(manifest["files"])
        if manifest.get("git"):
            notes += self._rollback_git(manifest, restored)
        kept = 0
        for rel, how in manifest["files"].items():
            if "writes" not in manifest:  # a journal of an older Kit: it recorded no texts to compare
                self._restore_blindly(rel, how)
                continue
            note = self._restore(rel, how, manifest["writes"].get(rel, []))
            if note:
                notes.append(note)
                kept += note.startswith(f"{rel}: kept")
        self._restore_tables()
        if restored:
            self.ws.reload(restored)
            from kit.memory.service import memory_for

            mem = memory_for(self.ws)
            indexable = [p for p in restored if mem.is_indexable(p)]
            try:
                if indexable:
                    mem.sync(indexable)
            finally:
                mem.close()
        told = f"; {kept} kept as edited meanwhile" if kept else ""
        notes.insert(0, f"rolled back an interrupted run of task {manifest['task_id']} "
                        f"(started {manifest['started']}; {plural(len(restored) - kept, 'file')} restored{told})")
        self.discard()
        return notes

    def _restore_blindly(self, rel: str, how: str) -> None:
        target = self.ws.path(rel)
        if how == "saved":
            atomic_write(target, (self.dir / "files" / rel).read_bytes())
        else:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()

    def _undo(self, original: str | None, writes: list[dict[str, Any]], current: str | None) -> tuple[str, str | None]:
        """What `rel` should become: ("same", _) nothing to do, ("write", text), ("original", _) its
        saved bytes back (they were not text), ("remove", _), or ("keep", _) when the run's change
        cannot be taken out of what someone saved since."""
        if current == original:
            return "same", None
        if current is None:  # a run never removes a file: somebody else did, after the run began
            return "keep", None
        landed = [w for w in writes if w["landed"]]
        pending = [w for w in writes if not w["landed"]]
        # a write killed mid-way may or may not have landed: try with it, then without
        for chain in ([*landed, *pending], landed) if pending else (landed,):
            text: str | None = current
            for i in range(len(chain) - 1, -1, -1):
                w = chain[i]
                after = self._text(w["after"]) or ""
                if w["before"] == "?":  # it replaced something that was not text: only undone whole
                    if i == 0 and text == after:
                        return "original", None
                    text = None
                else:
                    text = revert_change(self._text(w["before"]) or "", after, text)
                if text is None:
                    break
            else:
                if original is None and text == "":
                    return "remove", None
                return "write", text
        return "keep", None

    def _restore(self, rel: str, how: str, writes: list[dict[str, Any]]) -> str | None:
        """Take this run's changes out of `rel` as a compare-and-swap: when the file moves while we do,
        the undo is worked out again on the newer text. Returns a note when the result is not
        simply the original (an edit made meanwhile kept)."""
        target = self.ws.path(rel)
        raw = (self.dir / "files" / rel).read_bytes() if how == "saved" else None
        try:
            original = None if raw is None else raw.decode("utf-8")
        except UnicodeDecodeError:
            original = "\x00not text"  # never equal to a text read: only the "original" outcome restores it
        for attempt in range(1, 41):
            try:
                state = file_state(target, display=rel)
            except DocumentError as exc:  # someone saved something that is not text: theirs
                return f"{rel}: kept as it is now (not restored: {exc.message})"
            what, text = self._undo(original, writes, state.text)
            try:
                if what == "write" and text is not None:
                    self.ws.write_text(rel, text, expected=state)
                elif what == "original" and raw is not None:
                    write_file(target, raw, expected=state, display=rel)
                elif what == "remove":
                    remove_file(target, expected=state, display=rel)
            except ConflictError:
                time.sleep(random.uniform(0, min(0.1, 0.001 * 2 ** min(attempt, 7))))
                continue
            if what == "keep":
                return (f"{rel}: kept as it is now: it was edited after the interrupted run wrote it, and the "
                        "run's change could not be taken out without touching that edit")
            if what == "write" and text != original:
                return f"{rel}: the interrupted run's change taken out; the edit saved meanwhile kept"
            return None
        return f"{rel}: kept as it is now: it kept changing while the rollback tried to restore it"

    def _restore_tables(self) -> None:
        saved = self.dir / "state.db"
        if not saved.exists():
            return
        db = self.ws.open_state()
        try:
            db.execute("ATTACH DATABASE ? AS j", (str(saved),))
            try:
                with db.transaction():
                    for table in DREAM_TABLES:
                        db.execute(f"DELETE FROM main.{table}")
                        db.execute(f"INSERT INTO main.{table} SELECT * FROM j.{table}")
            finally:
                db.execute("DETACH DATABASE j")
        finally:
            db.close()

    def _rollback_git(self, manifest: dict[str, Any], restored: list[str]) -> list[str]:
        root = self.ws.root
        head = manifest.get("head")
        rev = _git(root, "rev-parse", "--verify", "-q", "HEAD")
        now = rev.stdout.strip() if rev.returncode == 0 else None
        if now != head:
            span = f"{head}..{now}" if head else (now or "")
            messages = _git(root, "log", "--format=%s", span).stdout.splitlines()
            if not messages or not all(m.startswith(DREAM_COMMIT_PREFIX) for m in messages):
                return [f"git: HEAD moved since the interrupted run began and not only by dream commits; "
                        f"history left as it is ({plural(len(messages), 'commit')} since {head or 'the first'})"]
            if head:
                _git(root, "reset", "-q", "--soft", head)
            else:  # the dream made the repository's first commit: back to an unborn branch
                _git(root, "update-ref", "-d", "HEAD")
        if not manifest.get("staged_at_start"):
            # nothing was staged when the run began (autocommit never adds to a user's staged
            # commit), so whatever is staged under the dream's paths now, the dream staged
            staged = [p for p in _git(root, "diff", "--cached", "--name-only", "--relative").stdout.splitlines() if p]
            mine = [p for p in staged if p in restored or p == "DREAMS.md" or p.startswith("memory/")]
            if mine:
                if head:
                    _git(root, "reset", "-q", head, "--", *mine)
                else:
                    _git(root, "rm", "-q", "--cached", "--", *mine)
        return []

