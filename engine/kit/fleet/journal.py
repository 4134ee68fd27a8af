"""An undo journal for one fleet dream, so that a run killed half-way is rolled back before its
rerun, and the rerun leaves the workspace exactly as one clean run would.

What a dream writes, and how each is undone:
- workspace files: every write goes through `ws.write_text`; `JournaledWorkspace` saves the file's
  original (or notes that it did not exist) in the journal *before* the write (an undo log);
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
import shutil
import subprocess
from pathlib import Path
from typing import Any

from kit import clock
from kit.fsutil import atomic_write
from kit.workspace import Workspace

# the tables kit.dreaming.store owns (tests check this matches what its schema creates)
DREAM_TABLES = ("dream_phase_hits", "dream_promotions", "dream_vectors", "dream_verify")
DREAM_COMMIT_PREFIX = "dream: "


class JournaledWorkspace(Workspace):
    """A Workspace whose own writes are recorded in `journal` (when one is set) before they happen."""

    journal: Journal | None = None

    def write_text(self, rel: str, text: str, **options):
        # every write goes through here (ws.update_text's compare-and-swap too); options: expected=
        if self.journal is not None:
            self.journal.save(rel)
        return super().write_text(rel, text, **options)


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
        for rel, how in manifest["files"].items():
            target = self.ws.path(rel)
            if how == "saved":
                atomic_write(target, (self.dir / "files" / rel).read_bytes())
            else:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
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
        notes.insert(0, f"rolled back an interrupted run of task {manifest['task_id']} "
                        f"(started {manifest['started']}; {len(restored)} file(s) restored)")
        self.discard()
        return notes

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
                        f"history left as it is ({len(messages)} commit(s) since {head or 'the first'})"]
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

