"""The skill catalog (§5): roots and precedence, validation, readiness, security status.

Roots, lowest precedence first (the same name in a later root overrides):
    bundled < skills.extra_dirs < user ($XDG_DATA_HOME/kit/skills)
    < ~/.claude/skills < ~/.agents/skills < <ws>/.claude/skills < <ws>/.agents/skills   (compat_dirs)
    < workspace skills/
Roots inside the workspace come from the snapshot (so a broken edit keeps its last good version
and hot reload works); the others are read from disk when the catalog is built. The catalog is
cached per snapshot version (and per state of the trust store) via `ws.cached`; a rebuild checks
and scans only the skills whose files changed (SkillMemo).
"""

from __future__ import annotations

import difflib
import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kit.core import WorkspaceCore
from kit.documents import Document, read_document
from kit.errors import DocumentError, NotFoundError
from kit.fsutil import is_within
from kit.ignore import IGNORED_DIRS, ignored_name
from kit.paths import CONFIG_FILE, bundled, user_cache_dir, user_skills_dir
from kit.problems import Problem, of_severity
from kit.skills.scanner import (
    UNTRUSTABLE,
    FolderStamp,
    Inventory,
    ScanCache,
    ScanResult,
    inventory,
    scan_skill,
    stamp_paths,
)
from kit.skills.validate import (
    MAX_SKILL_BYTES,
    description_of,
    readiness,
    requirements,
    validate_skill,
)
from kit.trust import TrustStore
from kit.wording import did_you_mean

TRUST_KIND = "skill"
WORKSPACE_ROOTS = {"claude-workspace": ".claude/skills", "agents-workspace": ".agents/skills",
                   "workspace": "skills"}


@dataclass(frozen=True)
class Root:
    source: str  # bundled | extra | user | claude-home | agents-home | claude-workspace | agents-workspace | workspace
    path: Path
    snapshot_prefix: str | None = None  # set for roots read from the workspace snapshot

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "path": str(self.path)}


def skill_problem(root: Root, folder: str, path: str, line: int | None, message: str,
                  severity: str = "error") -> Problem:
    """A problem with one skill file: an invalid skill (error: excluded) or a warning about one.
    `details` name the skill folder and its root, for `kit skills` and JSON."""
    return Problem(area="skills", path=path, line=line, message=message, severity=severity,
                   details={"skill": folder, "source": root.source})


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    source: str
    dir: Path
    location: str  # display path of SKILL.md (workspace-relative, or ~/…, or absolute)
    meta: Mapping[str, Any]
    body: str
    body_line: int
    requires: Mapping[str, tuple[str, ...]]
    readiness: str  # available | missing | unsupported
    missing: Mapping[str, list[str]]
    scan: ScanResult
    trusted: bool
    overrides: tuple[str, ...] = ()  # sources of same-named skills this one shadows
    warnings: tuple[Problem, ...] = ()

    @property
    def user_invocable(self) -> bool:
        return bool(self.meta.get("user-invocable", True))

    @property
    def model_invocable(self) -> bool:
        return not bool(self.meta.get("disable-model-invocation", False))

    @property
    def always(self) -> bool:
        return bool(self.meta.get("always", False))

    @property
    def blocked(self) -> bool:
        """A critical scan finding the user has not trusted keeps the skill from the model; a
        symlink out of the skill folder keeps it out even when trusted (`ScanResult.untrustable`)."""
        return bool(self.scan.untrustable) or (bool(self.scan.critical) and not self.trusted)

    @property
    def blocked_by(self) -> Problem | None:
        """The finding that blocks the skill, None when it is not blocked."""
        if self.scan.untrustable:
            return self.scan.untrustable[0]
        return self.scan.critical[0] if self.blocked else None

    @property
    def block_reason(self) -> str:
        """Why the skill is blocked, for a sentence after "is blocked: " or "cannot be trusted: "
        ("" when it is not)."""
        first = self.blocked_by
        if first is None:
            return ""
        untrustable = UNTRUSTABLE.get(first.details.get("rule", ""))
        if untrustable is not None:
            return f"{first.details['excerpt']} {untrustable[0]}"
        return f"its code has a critical security finding and is not trusted ({first.path})"

    @property
    def unblock_hint(self) -> str:
        """What the user does about a block: the one wording of it (the CLI, the tools, doctor and
        `kit skills trust` all say this). An untrustable finding's message says it too."""
        first = self.blocked_by
        untrustable = None if first is None else UNTRUSTABLE.get(first.details.get("rule", ""))
        if untrustable is not None:
            return untrustable[1]
        return f"review it with `kit skills check {self.name}`, then `kit skills trust {self.name}`"

    @property
    def eligible(self) -> bool:
        """May enter the prompt: available, model-invocable and not blocked."""
        return self.readiness == "available" and self.model_invocable and not self.blocked

    @property
    def left_out_because(self) -> str | None:
        """Why it may not enter the prompt — "blocked", its readiness ("missing", "unsupported") or
        "user-only" (disable-model-invocation), the first that holds — or None when it may."""
        if self.blocked:
            return "blocked"
        if self.readiness != "available":
            return self.readiness
        return None if self.model_invocable else "user-only"

    def summary_json(self) -> dict[str, Any]:
        """What `skills_list` shows: name, description, readiness, source root — nothing else."""
        return {"name": self.name, "description": self.description,
                "readiness": self.readiness, "source": self.source}

    def to_json(self) -> dict[str, Any]:
        return {
            **self.summary_json(),
            "location": self.location,
            "missing": dict(self.missing),
            "user_invocable": self.user_invocable,
            "model_invocable": self.model_invocable,
            "always": self.always,
            "blocked": self.blocked,
            "trusted": self.trusted,
            "eligible": self.eligible,
            "overrides": list(self.overrides),
            "findings": [f.to_json() for f in self.scan.findings],
            "warnings": [w.to_json() for w in self.warnings],
        }


@dataclass(frozen=True)
class SkillCheck:
    """The verdict of `kit skills check`: ok unless a skill is invalid or has untrusted critical code."""

    name: str | None  # the skill asked about, or None for all
    skills: tuple[Skill, ...]
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> tuple[Problem, ...]:
        return of_severity(self.problems, "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return of_severity(self.problems, "warning")

    @property
    def blocked(self) -> tuple[Skill, ...]:
        return tuple(s for s in self.skills if s.blocked)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.blocked

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": [p.to_json() for p in self.problems],
            "skills": [{"name": s.name, "source": s.source, "location": s.location, "blocked": s.blocked,
                        "trusted": s.trusted, "digest": s.scan.digest,
                        "findings": [f.to_json() for f in s.scan.findings]} for s in self.skills],
        }


@dataclass(frozen=True)
class SkillCatalog:
    skills: Mapping[str, Skill]  # by name, sorted by name
    problems: tuple[Problem, ...]  # every invalid skill and every warning
    roots: tuple[Root, ...]

    def get(self, name: str) -> Skill:
        skill = self.skills.get(name)
        if skill is None:
            broken = next((p for p in self.problems_for(name) if p.severity == "error"), None)
            if broken is not None:  # it exists but failed validation: say why, not "no such skill"
                raise NotFoundError(f"skill '{name}' is invalid and was not loaded: {broken}")
            hint = did_you_mean(name, self.skills) or "; `kit skills list` shows them"
            raise NotFoundError(f"no skill named '{name}'{hint}")
        return skill

    def __iter__(self):
        return iter(self.skills.values())

    def __len__(self) -> int:
        return len(self.skills)

    def problems_for(self, folder: str) -> tuple[Problem, ...]:
        """The problems of the skill in `folder` (in every root)."""
        return tuple(p for p in self.problems if p.details.get("skill") == folder)

    @property
    def errors(self) -> tuple[Problem, ...]:
        return of_severity(self.problems, "error")

    @property
    def invalid(self) -> tuple[Problem, ...]:
        """The first error of each skill file that failed validation and is not loaded at all (a
        broken edit that keeps its last good version is loaded, so it is not here)."""
        loaded = {s.location for s in self.skills.values()}
        out: dict[str, Problem] = {}
        for p in self.errors:
            if p.path not in loaded and not p.message.endswith("(keeping the last good version)"):
                out.setdefault(p.path, p)
        return tuple(out.values())

    def check(self, name: str | None = None) -> SkillCheck:
        """`kit skills check [NAME]`: validation problems and untrusted critical code, for every
        skill or the one named (NotFoundError, with a suggestion, for a name that is neither)."""
        if name is not None and name not in self.skills and not self.problems_for(name):
            self.get(name)  # raises NotFoundError with a suggestion
        skills = tuple(s for s in self if name is None or s.name == name)
        problems = self.problems if name is None else self.problems_for(name)
        return SkillCheck(name, skills, tuple(problems))

    def eligible(self) -> list[Skill]:
        """Skills for the prompt: `always: true` first, then by name."""
        return sorted((s for s in self.skills.values() if s.eligible), key=lambda s: (not s.always, s.name))

    def left_out(self) -> dict[str, int]:
        """How many skills may not enter the prompt, by `Skill.left_out_because` (reasons with none
        are not listed)."""
        counts: dict[str, int] = {}
        for skill in self.skills.values():
            why = skill.left_out_because
            if why is not None:
                counts[why] = counts.get(why, 0) + 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "skills": [s.to_json() for s in self.skills.values()],
            "problems": [p.to_json() for p in self.problems],
            "roots": [r.to_json() for r in self.roots],
        }


# --------------------------------------------------------------------------- roots


def compact_home(path: Path) -> str:
    """~/… for paths under the home folder: shorter in the prompt, same meaning."""
    text = str(path)
    home = str(Path.home())
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home):]
    return text


def skill_roots(ws: WorkspaceCore) -> tuple[Root, ...]:
    settings = ws.config.skills
    roots = [Root("bundled", bundled("skills"))]
    for entry in settings.extra_dirs:
        path = Path(os.path.expandvars(str(entry))).expanduser()
        roots.append(Root("extra", path if path.is_absolute() else ws.root / path))
    roots.append(Root("user", user_skills_dir()))
    if settings.compat_dirs:
        home = Path.home()
        roots.append(Root("claude-home", home / ".claude" / "skills"))
        roots.append(Root("agents-home", home / ".agents" / "skills"))
        for source in ("claude-workspace", "agents-workspace"):
            prefix = WORKSPACE_ROOTS[source]
            roots.append(Root(source, ws.root / prefix, prefix))
    roots.append(Root("workspace", ws.root / "skills", "skills"))
    return tuple(roots)


@dataclass
class _Candidate:
    root: Root
    folder: str
    dir: Path
    display: str
    doc: Document | None  # None when it could not be loaded
    problems: list[Problem] = field(default_factory=list)


def _disk_candidates(root: Root, memo: SkillMemo) -> list[_Candidate]:
    out: list[_Candidate] = []
    try:
        entries = sorted(os.scandir(root.path), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return out
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        skill_md = Path(entry.path) / "SKILL.md"
        if not skill_md.is_file():
            continue
        display = compact_home(skill_md)
        cand = _Candidate(root, entry.name, Path(entry.path), display, memo.disk_doc(skill_md))
        if cand.doc is not None:
            out.append(cand)
            continue
        try:
            md_stamp = stamp_paths([os.fspath(skill_md)])  # before reading: an edit during the read is seen next time
            size = skill_md.stat().st_size
            if size > MAX_SKILL_BYTES:
                raise DocumentError(f"SKILL.md is {size:,} bytes, over the {MAX_SKILL_BYTES:,}-byte limit",
                                    path=display)
            cand.doc = read_document(skill_md, display)
            memo.remember_disk_doc(skill_md, md_stamp, cand.doc)
        except DocumentError as exc:
            cand.problems.append(skill_problem(root, entry.name, display, exc.line, exc.message))
        out.append(cand)
    return out


def _snapshot_candidates(ws: WorkspaceCore, root: Root) -> list[_Candidate]:
    snap = ws.snapshot
    prefix = root.snapshot_prefix
    names = set(snap.names(f"{prefix}/*/SKILL.md"))
    issues = {i.path: i for i in snap.issues if i.path.startswith(prefix + "/") and i.path.endswith("/SKILL.md")}
    out: list[_Candidate] = []
    for rel in sorted(names | set(issues)):
        if rel.count("/") != prefix.count("/") + 2:
            continue
        folder = rel.split("/")[-2]
        cand = _Candidate(root, folder, ws.root / Path(rel).parent, rel, snap.get(rel))
        issue = issues.get(rel)
        if issue is not None:
            if cand.doc is None:
                cand.problems.append(skill_problem(root, folder, rel, issue.line, issue.message))
            else:
                cand.problems.append(skill_problem(root, folder, rel, issue.line,
                                                   f"{issue.message} (keeping the last good version)"))
        out.append(cand)
    return out


def _missing_skill_md(root: Root, seen: set[str]) -> list[Problem]:
    """A warning for each folder of `root` that is not a skill because it has no SKILL.md (a
    `skill.md`, a README only …), naming a near miss when there is one. Not for the folders that
    gave a skill or a problem of their own (`seen`), hidden ones, `__pycache__` and the like, or
    files (`skills/README.md`)."""
    try:
        entries = sorted(os.scandir(root.path), key=lambda e: e.name)
    except OSError:
        return []
    out: list[Problem] = []
    for entry in entries:
        name = entry.name
        if name in seen or name.startswith(".") or name in IGNORED_DIRS or ignored_name(name):
            continue
        try:
            if not entry.is_dir():
                continue
            names = sorted(os.listdir(entry.path))
        except OSError:
            continue
        if "SKILL.md" in names:
            continue  # there, but not in the snapshot yet (or reported by the snapshot)
        hint = ""
        files = {n.lower(): n for n in names if os.path.isfile(os.path.join(entry.path, n))}
        close = difflib.get_close_matches("skill.md", list(files), n=1, cutoff=0.7)  # skill.md, SKILLS.md …
        if close:
            hint = f"; found {files[close[0]]} — did you mean SKILL.md?"
        else:
            nested = [n for n in names if os.path.isfile(os.path.join(entry.path, n, "SKILL.md"))]
            if nested:
                hint = (f"; found {nested[0]}/SKILL.md — a skill folder sits directly in the skills folder, "
                        "it is not nested")
        display = f"{root.snapshot_prefix}/{name}" if root.snapshot_prefix else compact_home(Path(entry.path))
        out.append(skill_problem(root, name, display, None,
                                 f"no SKILL.md, so it is not loaded as a skill (a skill folder needs one{hint})",
                                 severity="warning"))
    return out


# --------------------------------------------------------------------------- building

class LastValid:
    """The last valid SKILL.md per workspace path: an edit that parses but breaks a rule (a bad
    name, an empty description) keeps the previous good version in force, like a YAML error does.
    Owned by the workspace; it holds only files the current snapshot still has."""

    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}
        self._lock = threading.Lock()

    def get(self, rel: str) -> Document | None:
        with self._lock:
            return self._docs.get(rel)

    def remember(self, rel: str, doc: Document) -> None:
        with self._lock:
            self._docs[rel] = doc

    def keep_only(self, rels: Iterable[str]) -> None:
        """Forget skills that are gone (deleted, renamed): the memo never outgrows the workspace."""
        wanted = set(rels)
        with self._lock:
            for rel in [r for r in self._docs if r not in wanted]:
                del self._docs[rel]

    def __len__(self) -> int:
        with self._lock:
            return len(self._docs)


@dataclass(frozen=True)
class _Checked:
    """What a SKILL.md's text alone decides: its problems, requirements and description."""

    problems: tuple[Problem, ...]
    requires: Mapping[str, tuple[str, ...]]
    description: str


class SkillMemo:
    """Each skill's checked SKILL.md and scan verdict, kept across snapshot versions: the catalog
    is rebuilt for every new version (a SOUL.md edit makes one), and this is what lets that
    rebuild check and scan only the skills whose files changed. A checked SKILL.md is found by
    its text; a scan (and a SKILL.md read from disk, outside the workspace) by its folder's
    FolderStamp. Readiness and trust are decided again on every build (PATH, the environment
    and the trust store can change without a file of the skill changing). Owned by the
    workspace; it holds only skills the last build saw. `parsed`, `scanned` and `read` count the
    work done (for tests and benchmarks)."""

    def __init__(self) -> None:
        self._checked: dict[tuple[str, str, str], _Checked] = {}  # (display, folder, text) ->
        self._scans: dict[str, tuple[FolderStamp, ScanResult]] = {}  # skill folder ->
        self._docs: dict[str, tuple[FolderStamp, Document]] = {}  # SKILL.md outside the workspace ->
        self._lock = threading.Lock()
        self.parsed = self.scanned = self.read = 0

    def checked(self, cand: _Candidate, doc: Document) -> _Checked:
        key = (cand.display, cand.folder, doc.text)
        with self._lock:
            hit = self._checked.get(key)
        if hit is not None:
            return hit
        problems = tuple(
            replace(p, details={"skill": cand.folder, "source": cand.root.source})
            for p in validate_skill(doc.meta, doc.body, folder=cand.folder, text=doc.text, size=doc.size,
                                    path=cand.display)
        )
        found = _Checked(problems, requirements(doc.meta), description_of(doc.meta, doc.body))
        with self._lock:
            self._checked[key] = found
            self.parsed += 1
        return found

    def scan(self, skill_dir: Path, caches: ScanCaches, cache: ScanCache, skill_md: Document | None = None) -> ScanResult:
        key = os.fspath(skill_dir)
        with self._lock:
            hit = self._scans.get(key)
        if hit is not None and hit[0].unchanged():
            return hit[1]
        saved = caches.saved(skill_dir, cache)  # another process's scan, when the folder is as it was
        if saved is not None:
            with self._lock:
                self._scans[key] = saved
            return saved[1]
        walked = inventory(skill_dir)  # stamped before reading: a change during the scan shows next time
        result = caches.scan(skill_dir, cache, walked, skill_md)
        with self._lock:
            self._scans[key] = (walked.stamp, result)
            self.scanned += 1
        return result

    def disk_doc(self, skill_md: Path) -> Document | None:
        with self._lock:
            hit = self._docs.get(os.fspath(skill_md))
        return hit[1] if hit is not None and hit[0].unchanged() else None

    def remember_disk_doc(self, skill_md: Path, stamp: FolderStamp, doc: Document) -> None:
        with self._lock:
            self._docs[os.fspath(skill_md)] = (stamp, doc)
            self.read += 1

    def keep_only(self, used: Iterable[tuple[_Candidate, Document]]) -> None:
        """Forget what the last build did not use (skills deleted, renamed, their text replaced)."""
        pairs = list(used)
        checked = {(c.display, c.folder, d.text) for c, d in pairs}
        dirs = {os.fspath(c.dir) for c, _ in pairs}
        with self._lock:
            for key in [k for k in self._checked if k not in checked]:
                del self._checked[key]
            for key in [k for k in self._scans if k not in dirs]:
                del self._scans[key]
            for key in [k for k in self._docs if os.path.dirname(k) not in dirs]:
                del self._docs[key]


class ScanCaches:
    """The two scan caches: `.kit/cache/skill-scan.json` for skills inside the workspace,
    `$XDG_CACHE_HOME/kit/skill-scan.json` for the others (user, bundled, home folders). Owned by
    the workspace, so a scan done under `read_only()` (doctor) is written by the next build that
    may write."""

    FILE = "skill-scan.json"

    def __init__(self, ws: WorkspaceCore):
        self.root = ws.root
        self.workspace = ScanCache(ws.kit_dir / "cache" / self.FILE)
        self.user = ScanCache(user_cache_dir() / self.FILE)
        self._lock = threading.Lock()

    def for_root(self, root: Root) -> ScanCache:
        """Decided per root, not per skill: resolving each skill folder's path cost a cold
        `kit prompt` ~0.2 ms a skill."""
        inside = root.snapshot_prefix is not None or is_within(self.root, root.path)
        return self.workspace if inside else self.user

    def saved(self, skill_dir: Path, cache: ScanCache) -> tuple[FolderStamp, ScanResult] | None:
        with self._lock:  # builds on other threads share the caches
            return cache.folder(skill_dir)

    def scan(self, skill_dir: Path, cache: ScanCache, walked: Inventory, skill_md: Document | None = None) -> ScanResult:
        with self._lock:
            result = scan_skill(skill_dir, cache, walked, skill_md)
            cache.remember_folder(skill_dir, walked.stamp, result)
            return result

    def save(self, read_only: bool = False) -> None:
        if not read_only:  # doctor never writes
            with self._lock:
                self.workspace.save()
                self.user.save()


def _build_skill(cand: _Candidate, doc: Document, store: TrustStore, env: Mapping[str, str],
                 memo: SkillMemo, scans: ScanCaches, cache: ScanCache,
                 config: Any = None) -> tuple[Skill | None, list[Problem]]:
    checked = memo.checked(cand, doc)
    problems = list(checked.problems)
    if any(p.severity == "error" for p in problems):
        return None, problems
    state, missing = readiness(checked.requires, which=shutil.which, environ=env, config=config)
    scan = memo.scan(cand.dir, scans, cache, doc)
    name = str(doc.meta.get("name") or cand.folder)  # a missing name is the folder's
    trusted = cand.root.source == "bundled" or (
        bool(scan.critical) and store.is_trusted(TRUST_KIND, name, scan.digest)
    )
    skill = Skill(
        name=name,
        description=checked.description,
        source=cand.root.source,
        dir=cand.dir,
        location=cand.display,
        meta=doc.meta,
        body=doc.body,
        body_line=doc.body_line,
        requires=MappingProxyType(checked.requires),
        readiness=state,
        missing=MappingProxyType(missing),
        scan=scan,
        trusted=trusted,
        warnings=of_severity(problems, "warning"),
    )
    return skill, problems


def build_catalog(ws: WorkspaceCore, *, trust_store: TrustStore | None = None, environ: Mapping[str, str] | None = None) -> SkillCatalog:
    """Load every root, validate, resolve precedence. Never raises for a bad skill. Only skills
    whose files changed since the workspace's last build are checked and scanned (SkillMemo)."""
    store = trust_store or TrustStore()
    env = os.environ if environ is None else environ
    roots = skill_roots(ws)
    scans = ws.owned("skills.scan_caches", lambda: ScanCaches(ws))
    memo = ws.owned("skills.memo", SkillMemo)
    last_valid = ws.owned("skills.last_valid", LastValid)
    seen: list[str] = []
    used: list[tuple[_Candidate, Document]] = []
    chosen: dict[str, Skill] = {}
    problems: list[Problem] = []
    for root in roots:
        candidates = _snapshot_candidates(ws, root) if root.snapshot_prefix else _disk_candidates(root, memo)
        cache = scans.for_root(root) if candidates else None
        for cand in candidates:
            problems.extend(cand.problems)
            if cand.doc is None:
                continue
            used.append((cand, cand.doc))
            skill, found = _build_skill(cand, cand.doc, store, env, memo, scans, cache, ws.config)
            previous = last_valid.get(cand.display) if root.snapshot_prefix else None
            if root.snapshot_prefix:
                seen.append(cand.display)
            if skill is None and previous is not None:
                used.append((cand, previous))
                skill, _ = _build_skill(cand, previous, store, env, memo, scans, cache, ws.config)
                found = [replace(p, message=f"{p.message} (keeping the last good version)") for p in found]
            elif skill is not None and root.snapshot_prefix:
                last_valid.remember(cand.display, cand.doc)
            problems.extend(found)
            if skill is None:
                continue
            shadowed = chosen.get(skill.name)
            if shadowed is not None:
                skill = _with_overrides(skill, (*shadowed.overrides, shadowed.source))
            chosen[skill.name] = skill
        if root.source != "bundled":  # Kit's own folder holds only skills
            problems.extend(_missing_skill_md(root, {c.folder for c in candidates}))
    last_valid.keep_only(seen)
    memo.keep_only(used)
    scans.save(read_only=ws.is_read_only)
    ordered = {name: chosen[name] for name in sorted(chosen)}
    return SkillCatalog(MappingProxyType(ordered), tuple(problems), roots)


def _with_overrides(skill: Skill, overrides: Iterable[str]) -> Skill:
    return replace(skill, overrides=tuple(overrides))


def trust_stamp(store: TrustStore | None = None) -> str:
    """Changes whenever the trust store file changes: part of every cache key that trust affects."""
    store = store or TrustStore()
    try:
        st = store.path.stat()
    except OSError:
        return "none"
    return f"{st.st_mtime_ns}:{st.st_size}"


def catalog_for(ws: WorkspaceCore) -> SkillCatalog:
    """The workspace's skill catalog, rebuilt when the snapshot version or the trust store changes."""
    store = TrustStore()
    return ws.cached(f"skills.catalog:{trust_stamp(store)}", lambda: build_catalog(ws, trust_store=store))


def doctor_checks(ws: WorkspaceCore) -> list[Problem]:
    """Invalid skills (error), skill warnings, and skills blocked by untrusted critical findings."""
    catalog = catalog_for(ws)
    out = [replace(p, details={}) for p in catalog.problems]  # doctor's JSON: the same keys for every area
    path, line = ws.config.where("skills.extra_dirs")  # the file and line that set the list
    for root in catalog.roots:
        if root.source == "extra" and not root.path.is_dir():
            out.append(Problem(area="skills", severity="warning", path=path or CONFIG_FILE, line=line,
                               message=f"skills.extra_dirs entry {root.path} is not a folder"))
    for skill in catalog:
        first = skill.blocked_by
        if first is not None:
            out.append(Problem(
                area="skills", severity="warning", path=skill.location,
                message=f"skill '{skill.name}' is kept out of the prompt: {first.message} ({first.path}:{first.line})"
                        + ("" if skill.scan.untrustable else f"; {skill.unblock_hint}"),
            ))
        elif skill.readiness != "available":
            what = ", ".join(f"{k}: {', '.join(v)}" for k, v in skill.missing.items())
            out.append(Problem(area="skills", severity="info", path=skill.location,
                               message=f"skill '{skill.name}' is {skill.readiness} ({what})"))
    return out
