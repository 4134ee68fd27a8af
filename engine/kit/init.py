"""`kit init`: create a workspace from the bundled template."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kit import clock
from kit.errors import WorkspaceError
from kit.fsutil import atomic_write
from kit.ignore import IGNORED_DIRS, ignored_name
from kit.paths import CONFIG_FILE, bundled

GITIGNORE = ".kit/\n"
GIT_AUTOCOMMIT = "\ngit:\n  autocommit: true\n"
NEVER_OVERWRITTEN = frozenset({"MEMORY.md", "DREAMS.md"})


@dataclass(frozen=True)
class InitResult:
    root: Path
    created: tuple[str, ...]
    overwritten: tuple[str, ...]
    skipped: tuple[str, ...]
    committed: bool
    updated: tuple[str, ...] = ()  # kept files init added to (kit.yaml's git section, for --git)
    first_commit: bool = False  # the repository's first commit (every file), not just init's files
    autocommit: bool = False  # --git: kit.yaml has git.autocommit on after this init
    notes: tuple[str, ...] = ()  # what the person should know (a kept kit.yaml init could not change)

    def to_json(self) -> dict:
        return {
            "root": str(self.root),
            "created": list(self.created),
            "overwritten": list(self.overwritten),
            "skipped": list(self.skipped),
            "updated": list(self.updated),
            "committed": self.committed,
            "first_commit": self.first_commit,
            "autocommit": self.autocommit,
            "notes": list(self.notes),
        }


def _template_files(template: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(template):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        for name in sorted(filenames):
            if not ignored_name(name):
                out.append(Path(dirpath, name).relative_to(template).as_posix())
    return out


def init_workspace(path: str | os.PathLike, *, git: bool = False, force: bool = False) -> InitResult:
    """Copy the template into `path`; existing files are kept unless `force`."""
    root = Path(path).expanduser()
    if root.exists() and not root.is_dir():
        raise WorkspaceError(f"{root} exists and is not a directory")
    template = bundled("workspace")
    if not template.is_dir():
        raise WorkspaceError(f"the bundled workspace template is missing ({template}); reinstall kit-agent")
    if git and shutil.which("git") is None:
        raise WorkspaceError("--git needs git on PATH")
    created: list[str] = []
    overwritten: list[str] = []
    skipped: list[str] = []
    files = _template_files(template)
    contents = {rel: (template / rel).read_bytes() for rel in files}
    gitignore = (contents.pop(".gitignore", b"") or GITIGNORE.encode())
    if b".kit/" not in gitignore:
        gitignore += b"\n" + GITIGNORE.encode()
    contents[".gitignore"] = gitignore
    if git:
        contents[CONFIG_FILE] = contents[CONFIG_FILE] + GIT_AUTOCOMMIT.encode()
    # every refusal comes before the first write: a failed init leaves nothing behind
    for rel in sorted(contents):
        if (root / rel).is_dir():
            raise WorkspaceError(f"{root / rel} is a directory where a file belongs")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        # e.g. a parent that is a file, or a path under /proc
        raise WorkspaceError(f"cannot create {root}: {exc.strerror or exc}") from None
    for rel in sorted(contents):
        target = root / rel
        if target.exists():
            # memory is the agent's own history, not a template: --force never resets it
            if not force or rel in NEVER_OVERWRITTEN:
                skipped.append(rel)
                continue
            overwritten.append(rel)
        else:
            created.append(rel)
        atomic_write(target, contents[rel])
    for folder in ("memory", "skills", "hooks", "templates"):
        (root / folder).mkdir(exist_ok=True)
    autocommit, notes, updated = False, [], []
    if git:
        autocommit, changed, note = _autocommit_on(root / CONFIG_FILE, written=CONFIG_FILE not in skipped)
        notes += [note] if note else []
        if changed:
            skipped.remove(CONFIG_FILE)
            updated.append(CONFIG_FILE)  # kept, with the git section added: part of init's commit
    committed, first = _git_commit(root, created + overwritten + updated) if git else (False, False)
    return InitResult(root.resolve(), tuple(created), tuple(overwritten), tuple(skipped), committed,
                      tuple(updated), first, autocommit, tuple(notes))


def _autocommit_on(config: Path, *, written: bool) -> tuple[bool, bool, str | None]:
    """--git on a workspace whose kit.yaml was kept: git.autocommit turned on in it, where that
    is an addition at its end (no `git:` section yet), keeping every byte the person wrote; else a
    note saying what to set. (on now, kit.yaml changed here, the note)."""
    if written:
        return True, False, None
    from kit.yamlsafe import YamlError, load_mapping

    try:
        text = config.read_text(encoding="utf-8")
        values, _ = load_mapping(text)
    except (OSError, UnicodeDecodeError, YamlError):
        return False, False, f"{CONFIG_FILE} kept as it is (it does not load): set git.autocommit: true in it yourself"
    section = values.get("git")
    if isinstance(section, dict) and section.get("autocommit") is True:
        return True, False, None
    if "git" in values:  # a git section the person wrote (even an empty one): theirs to change
        return False, False, (f"{CONFIG_FILE} kept: its git section does not turn autocommit on; "
                              "set git.autocommit: true in it")
    added = text + ("" if text.endswith("\n") or not text else "\n") + GIT_AUTOCOMMIT
    try:  # an addition at the end must still load (a flow mapping or a `...` end marker would not)
        after, _ = load_mapping(added)
    except YamlError:
        after = {}
    if not (isinstance(after.get("git"), dict) and after["git"].get("autocommit") is True):
        return False, False, (f"{CONFIG_FILE} kept: git.autocommit cannot be added at its end without "
                              "breaking it; set git.autocommit: true in it yourself")
    atomic_write(config, added.encode())
    return True, True, None


def _git_commit(root: Path, written: list[str]) -> tuple[bool, bool]:
    """A new repository gets everything as its first commit; an existing one gets only the files
    this init wrote (never the user's other changes, staged or not). (committed, a first commit)."""
    env = {**os.environ, **clock.git_dates()}
    run = lambda *args: subprocess.run(  # noqa: E731
        ["git", *args], cwd=root, capture_output=True, text=True, env=env
    )
    fresh = not (root / ".git").exists() or run("rev-parse", "--verify", "-q", "HEAD").returncode != 0
    if not (root / ".git").exists():
        result = run("init", "-q")
        if result.returncode != 0:
            raise WorkspaceError(f"git init failed: {result.stderr.strip()}")
    if fresh:
        run("add", "-A")
        paths: list[str] = []
        message = "Kit workspace: initial files"
    else:
        if not written:
            return False, False
        run("add", "--", *written)
        paths = ["--", *written]
        message = "Kit workspace: files from kit init"
    if run("diff", "--cached", "--quiet", *paths).returncode == 0:
        return False, False
    identity = []
    if not run("config", "user.email").stdout.strip():
        identity = ["-c", "user.name=Kit", "-c", "user.email=kit@localhost"]
    result = run(*identity, "commit", "-q", "-m", message, *paths)
    if result.returncode != 0:
        raise WorkspaceError(f"git commit failed: {result.stderr.strip()}")
    return True, fresh
