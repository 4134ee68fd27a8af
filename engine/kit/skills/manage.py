"""Changing skills: scaffold a new one (`kit skills new`) and trust one's code (`kit skills trust`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kit.core import WorkspaceCore
from kit.errors import ConflictError, KitError
from kit.fsutil import safe_join
from kit.skills.catalog import TRUST_KIND, catalog_for
from kit.skills.validate import MAX_DESCRIPTION, name_problem, placeholder_description
from kit.trust import TrustStore

SKILL_TEMPLATE = """\
---
name: {name}
description: {description}
---

# {title}

## When to use

Describe the situations where this skill applies, in a sentence or two.

## Steps

1. First step, concrete enough that a small model can follow it.
2. Next step. Point to files in this folder when they help, e.g. `references/notes.md`
   (read them with `skill_view("{name}", "references/notes.md")`).

## Done when

Say how to tell the task is finished.
"""


@dataclass(frozen=True)
class NewSkill:
    name: str
    path: str  # workspace-relative SKILL.md
    placeholder: bool = False  # the description is the placeholder: `kit skills check` warns until edited

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path}


def new_skill(ws: WorkspaceCore, name: str, description: str | None = None) -> NewSkill:
    """Create `skills/<name>/SKILL.md` in the workspace from a template that passes validation.

    Without a description it writes a placeholder, which `kit skills check` reports as a warning
    until it is edited."""
    problem = name_problem(name)
    if problem:
        raise KitError(problem)
    description = " ".join((description or placeholder_description(name)).split())
    if not description or len(description) > MAX_DESCRIPTION:
        raise KitError(f"the description must be 1-{MAX_DESCRIPTION} characters")
    rel = f"skills/{name}/SKILL.md"
    if safe_join(ws.root, rel).parent.exists():
        raise KitError(f"{rel.rsplit('/', 1)[0]}/ already exists; pick another name or edit it")
    title = name.replace("-", " ").capitalize()
    # a JSON string is valid YAML: any description stays valid frontmatter
    quoted = json.dumps(description, ensure_ascii=False)
    try:  # create only: a SKILL.md that appeared meanwhile (another `kit skills new`, an editor) is kept
        ws.write_text(rel, SKILL_TEMPLATE.format(name=name, description=quoted, title=title), expected=None)
    except ConflictError:
        raise KitError(f"{rel} already exists; pick another name or edit it") from None
    return NewSkill(name, rel, description == placeholder_description(name))


@dataclass(frozen=True)
class TrustResult:
    name: str
    digest: str
    critical: int
    location: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "digest": self.digest, "critical": self.critical, "location": self.location}


def trust_skill(ws: WorkspaceCore, name: str, store: TrustStore | None = None) -> TrustResult:
    """Record the skill's current code hash as trusted; a later change needs trusting again."""
    store = store or TrustStore()
    skill = catalog_for(ws).get(name)
    if skill.scan.untrustable:  # a hash of the skill cannot pin what lies outside it, or past its cap
        raise KitError(f"skill '{skill.name}' cannot be trusted: {skill.block_reason}; {skill.unblock_hint}")
    store.trust(TRUST_KIND, skill.name, skill.scan.digest, str(skill.dir))
    return TrustResult(skill.name, skill.scan.digest, len(skill.scan.critical), skill.location)

