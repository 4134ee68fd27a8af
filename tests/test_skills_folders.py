"""A folder in a skills root without SKILL.md is reported (a new-user pass: `skills/nofile/` with a
README, or a `skill.md` typo, appeared nowhere), while folders that are clearly not skills are not."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers_skills import make_skill
from kit.doctor import run_checks
from kit.prompt.builder import build_prompt
from kit.skills.catalog import catalog_for
from kit.workspace import Workspace


def _warnings(catalog) -> list[tuple]:
    return [(p.severity, p.path, p.line, p.message, p.details["skill"], p.details["source"]) for p in catalog.problems]


def test_a_folder_without_skill_md_is_a_warning(ws_path, cli, monkeypatch):
    # the prompt has the time in it: a real clock failed this when its two prompts were a minute apart
    monkeypatch.setenv("KIT_NOW", "2026-05-06T10:59:59+00:00")
    prompt_before = build_prompt(Workspace.open(ws_path)).prompt
    skills = ws_path / "skills"
    (skills / "nofile").mkdir()
    (skills / "nofile" / "README.md").write_text("hi\n")
    (skills / "typo").mkdir()
    (skills / "typo" / "skill.md").write_text("---\nname: typo\ndescription: A typo.\n---\nSteps.\n")
    (skills / "plural").mkdir()
    (skills / "plural" / "SKILLS.md").write_text("---\nname: plural\ndescription: One S too many.\n---\n")
    make_skill(skills / "group", "inner")  # nested one level too deep
    # not skills, and not warned about: hidden folders, caches, files, real skills
    for folder in (".drafts", "__pycache__", "node_modules"):
        (skills / folder).mkdir()
        (skills / folder / "README.md").write_text("x\n")
    make_skill(skills, "fine")
    ws = Workspace.open(ws_path)
    catalog = catalog_for(ws)
    need = "no SKILL.md, so it is not loaded as a skill (a skill folder needs one"
    assert _warnings(catalog) == [
        ("warning", "skills/group", None,
         f"{need}; found inner/SKILL.md — a skill folder sits directly in the skills folder, it is not nested)",
         "group", "workspace"),
        ("warning", "skills/nofile", None, f"{need})", "nofile", "workspace"),
        ("warning", "skills/plural", None, f"{need}; found SKILLS.md — did you mean SKILL.md?)", "plural", "workspace"),
        ("warning", "skills/typo", None, f"{need}; found skill.md — did you mean SKILL.md?)", "typo", "workspace"),
    ]
    assert sorted(catalog.skills) == ["daily-notes", "fine", "skill-authoring"]
    # `kit skills check` (all, or the folder by name) shows it and passes; doctor reports it
    check = cli("skills", "check", "-w", ws_path)
    assert check.exit_code == 0
    assert "warning  skills/typo: no SKILL.md, so it is not loaded as a skill (a skill folder needs one; found " \
           "skill.md — did you mean SKILL.md?)" in check.output.splitlines()
    assert check.output.splitlines()[-1] == "✓ 3 skills OK (4 warnings)"
    one = cli("skills", "check", "nofile", "-w", ws_path, "--json")
    assert one.exit_code == 0
    assert json.loads(one.output) == {"ok": True, "skills": [], "problems": [{
        "path": "skills/nofile", "line": None, "message": f"{need})", "severity": "warning", "area": "skills",
        "skill": "nofile", "source": "workspace"}]}
    doctor = [(p.severity, p.area, str(p)) for p in run_checks(ws) if p.path == "skills/nofile"]
    assert doctor == [("warning", "skills", f"skills/nofile: {need})")]
    # the prompt is what it was: only the real skill is added
    prompt = build_prompt(ws).prompt
    assert prompt.replace("- fine: Use fine for tests. (skills/fine/SKILL.md)\n", "") == prompt_before


def test_other_roots_are_checked_too_but_not_kits_own(ws_path):
    user_root = Path(os.environ["XDG_DATA_HOME"]) / "kit" / "skills"
    (user_root / "half-done").mkdir(parents=True)
    (user_root / "half-done" / "Skill.md").write_text("---\nname: half-done\ndescription: d\n---\n")
    catalog = catalog_for(Workspace.open(ws_path))
    assert _warnings(catalog) == [
        ("warning", "~/.local/share/kit/skills/half-done", None,
         "no SKILL.md, so it is not loaded as a skill (a skill folder needs one; found Skill.md — did you mean "
         "SKILL.md?)", "half-done", "user")]
