"""Progressive disclosure (§5): the three levels the agent's tools call.

    skills_list(ws)               → name, description, readiness, source root — nothing else
    skill_view(ws, name)          → SKILL.md body, frontmatter and the linked files by folder
    skill_view(ws, name, path)    → one file inside the skill folder

Model-facing calls (`for_model=True`, the default) hide skills with `disable-model-invocation`
and refuse skills blocked by an untrusted critical scan finding. `skill_view(name, path)` raises
PathEscapeError for absolute paths, `..` and anything resolving outside the folder (symlinks
included); a missing file answers `ok=False` with the files that do exist; a binary file answers
with its name and size instead of its content.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.core import WorkspaceCore
from kit.errors import KitError, NotFoundError, PathEscapeError
from kit.fsutil import looks_binary, safe_join
from kit.ignore import IGNORED_DIRS
from kit.skills.catalog import Skill, catalog_for

FOLDERS = ("references", "templates", "scripts", "assets")
MAX_VIEW_BYTES = 256_000  # one file returned to the model; larger text files are cut with a note
MAX_LISTED = 500


@dataclass(frozen=True)
class SkillSummary:
    name: str
    description: str
    readiness: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "readiness": self.readiness, "source": self.source}


@dataclass(frozen=True)
class SkillList:
    skills: tuple[SkillSummary, ...]
    hint: str = "Call skill_view(name) for a skill's instructions and files."

    def to_json(self) -> dict[str, Any]:
        return {"skills": [s.to_json() for s in self.skills], "count": len(self.skills), "hint": self.hint}


@dataclass(frozen=True)
class SkillView:
    name: str
    description: str
    source: str
    location: str
    readiness: str
    missing: dict[str, list[str]]
    frontmatter: dict[str, Any]
    body: str
    files: dict[str, list[str]]  # folder → relative paths ("other" for the rest)
    hint: str = "To read a linked file call skill_view(name, path), e.g. 'references/guide.md'."
    # the user's view: why the security scan keeps the skill from the model and what to do ("" when
    # it does not); None in the model's view, which never shows a blocked skill
    blocked: str | None = None

    def to_json(self) -> dict[str, Any]:
        shown = {} if self.blocked is None else {"blocked": bool(self.blocked), "block_reason": self.blocked}
        return {
            "ok": True,
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "location": self.location,
            "readiness": self.readiness,
            "missing": self.missing,
            "frontmatter": self.frontmatter,
            "body": self.body,
            "files": self.files,
            "hint": self.hint,
            **shown,
        }


@dataclass(frozen=True)
class SkillFile:
    name: str  # the skill
    path: str  # relative to the skill folder
    ok: bool
    content: str | None = None
    size: int = 0
    is_binary: bool = False
    truncated: bool = False
    error: str | None = None
    available_files: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "name": self.name, "path": self.path}
        if self.ok:
            out.update({"content": self.content, "size": self.size, "is_binary": self.is_binary,
                        "truncated": self.truncated})
        else:
            out.update({"error": self.error, "available_files": self.available_files})
        return out


def _visible(skill: Skill, for_model: bool) -> bool:
    return not for_model or skill.model_invocable


def skills_list(ws: WorkspaceCore, *, for_model: bool = True) -> SkillList:
    """Level 1: the catalog as name, description, readiness and source (sorted by name)."""
    catalog = catalog_for(ws)
    items = tuple(
        SkillSummary(s.name, s.description, s.readiness, s.source)
        for s in catalog
        if _visible(s, for_model) and not (for_model and s.blocked)
    )
    return SkillList(items)


def linked_files(skill_dir: Path) -> dict[str, list[str]]:
    """Files in the skill folder (not SKILL.md) grouped by references/templates/scripts/assets/other.

    Symlinks that lead outside the folder are not listed (they could not be read anyway).
    """
    groups: dict[str, list[str]] = {}
    base = skill_dir.resolve()
    count = 0
    for dirpath, dirnames, filenames in os.walk(skill_dir):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath, name)
            rel = path.relative_to(skill_dir).as_posix()
            if rel == "SKILL.md" or name.startswith("."):
                continue
            resolved = path.resolve()
            if resolved != base and base not in resolved.parents:
                continue
            top = rel.split("/", 1)[0] if "/" in rel else ""
            groups.setdefault(top if top in FOLDERS else "other", []).append(rel)
            count += 1
            if count >= MAX_LISTED:
                return groups
    return {k: groups[k] for k in (*FOLDERS, "other") if k in groups}


def _get(ws: WorkspaceCore, name: str, for_model: bool) -> Skill:
    skill = catalog_for(ws).get(name)
    if not _visible(skill, for_model):
        raise NotFoundError(f"skill '{name}' can only be invoked by the user (disable-model-invocation)")
    first = skill.blocked_by if for_model else None
    if first is not None:
        raise KitError(f"skill '{name}' is blocked by the security scan ({first.details['rule']} in "
                       f"{first.path}:{first.line}); the user can {skill.unblock_hint}")
    return skill


def skill_view(ws: WorkspaceCore, name: str, path: str | None = None, *, for_model: bool = True,
               arguments: str | None = None) -> SkillView | SkillFile:
    """Level 2 (no path) or level 3 (one file inside the skill). The body has `{baseDir}` (and
    `${CLAUDE_SKILL_DIR}`) filled in, and `$ARGUMENTS`, `$N` … when `arguments` is given."""
    from kit.skills.arguments import argument_names, substitute

    skill = _get(ws, name, for_model)
    if path is None or path in ("", "SKILL.md"):
        if path == "SKILL.md":
            return _read_file(skill, "SKILL.md")
        return SkillView(
            name=skill.name,
            description=skill.description,
            source=skill.source,
            location=skill.location,
            readiness=skill.readiness,
            missing={k: list(v) for k, v in skill.missing.items()},
            frontmatter=_plain(dict(skill.meta)),
            body=substitute(skill.body, skill_dir=skill.dir, arguments=arguments,
                            names=argument_names(skill.meta.get("arguments"))),
            files=linked_files(skill.dir),
            blocked=None if for_model else (f"{skill.block_reason}; {skill.unblock_hint}" if skill.blocked else ""),
        )
    return _read_file(skill, path)


def user_skill_view(ws: WorkspaceCore, name: str, arguments: str = "") -> SkillView:
    """What `/skill NAME` in the REPL loads: refuses skills with `user-invocable: false`, and skills
    whose code is blocked by the security scan until trusted (the user's way in is no back door)."""
    skill = catalog_for(ws).get(name)
    if not skill.user_invocable:
        raise KitError(f"skill '{name}' is not user-invocable (user-invocable: false); the model uses it on its own")
    first = skill.blocked_by
    if first is not None:
        raise KitError(f"skill '{name}' is blocked: {skill.block_reason}; {skill.unblock_hint}")
    view = skill_view(ws, name, for_model=False, arguments=arguments)  # /skill NAME args: filled in
    assert isinstance(view, SkillView)
    return view


def _read_file(skill: Skill, path: str) -> SkillFile:
    rel = path.replace("\\", "/")
    if os.path.isabs(rel) or rel.startswith("~"):
        raise PathEscapeError(f"absolute paths are not allowed in skill_view: {path}")
    if ".." in Path(rel).parts:
        raise PathEscapeError(f"'..' is not allowed in skill_view paths: {path}")
    try:
        target = safe_join(skill.dir, rel)
    except PathEscapeError:
        raise PathEscapeError(f"{path} resolves outside the skill '{skill.name}' (symlink?)") from None
    if not target.is_file():
        kind = "is a folder" if target.is_dir() else "not found"
        files = linked_files(skill.dir)
        hint = "use one of the files listed" if files else "it has no files besides SKILL.md"
        return SkillFile(skill.name, rel, False, error=f"'{rel}' {kind} in skill '{skill.name}'; {hint}",
                         available_files=files)
    size = target.stat().st_size
    with open(target, "rb") as handle:
        raw = handle.read(MAX_VIEW_BYTES + 1)
    if looks_binary(raw):
        return SkillFile(skill.name, rel, True, content=f"[binary file {target.name}, {size:,} bytes]",
                         size=size, is_binary=True)
    truncated = len(raw) > MAX_VIEW_BYTES
    text = raw[:MAX_VIEW_BYTES].decode("utf-8", errors="replace")
    if truncated:
        text += f"\n[… cut at {MAX_VIEW_BYTES:,} of {size:,} bytes]"
    return SkillFile(skill.name, rel, True, content=text, size=size, truncated=truncated)


def _plain(value: Any) -> Any:
    """Frontmatter as JSON-safe values (YAML dates become ISO strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
