"""Hot reload reaches the prompt: with the real Watcher running, editing SOUL.md or a SKILL.md
changes the next build, and a broken edit keeps the previous good version (§1 principle 6)."""

from __future__ import annotations

import pytest

from helpers_skills import make_skill
from kit.prompt.builder import build_prompt
from kit.skills.catalog import catalog_for
from kit.workspace import Workspace

watch = pytest.importorskip("kit.watch")
WAIT = 20.0  # generous: the machine is shared; the wait ends as soon as the change is there


def test_editing_soul_changes_the_next_prompt(workspace):
    before = build_prompt(workspace)
    with watch.Watcher(workspace, debounce_ms=50, backend="polling", poll_interval=0.2) as watcher:
        (workspace.root / "SOUL.md").write_text("# Soul\n\nYou speak like a ship's captain.\n")
        assert watcher.wait_until(lambda w: "ship's captain" in build_prompt(workspace).prompt, WAIT)
    after = build_prompt(workspace)
    assert after.version > before.version and "You are a calm, precise assistant" not in after.prompt


def test_editing_a_skill_md_changes_the_next_prompt_and_a_broken_edit_keeps_the_last_good(ws_path):
    skill_dir = make_skill(ws_path / "skills", "brewing", "Brew tea the first way.")
    ws = Workspace.open(ws_path)
    assert "- brewing: Brew tea the first way." in build_prompt(ws).prompt
    with watch.Watcher(ws, debounce_ms=50) as watcher:
        make_skill(ws_path / "skills", "brewing", "Brew tea the second way.")
        assert watcher.wait_until(lambda w: "Brew tea the second way." in build_prompt(ws).prompt, WAIT)
        # broken YAML: the snapshot keeps the last good SKILL.md, the catalog reports the error
        (skill_dir / "SKILL.md").write_text("---\nname: brewing\ndescription: [broken\n---\nbody\n")
        assert watcher.wait_until(lambda w: catalog_for(ws).problems_for("brewing"), WAIT)
        prompt = build_prompt(ws).prompt
        assert "- brewing: Brew tea the second way." in prompt
        [problem] = catalog_for(ws).problems_for("brewing")
        assert problem.path == "skills/brewing/SKILL.md" and problem.line == 3
        assert "keeping the last good version" in problem.message
        # a rule violation (empty description) also keeps the last valid version in force
        make_skill(ws_path / "skills", "brewing", "")
        assert watcher.wait_until(
            lambda w: any("'description' is required" in p.message for p in catalog_for(ws).problems), WAIT)
        assert "- brewing: Brew tea the second way." in build_prompt(ws).prompt
        # fixing it clears the problem
        make_skill(ws_path / "skills", "brewing", "Brew tea the third way.")
        assert watcher.wait_until(lambda w: "Brew tea the third way." in build_prompt(ws).prompt, WAIT)
        assert not catalog_for(ws).problems_for("brewing")


def test_a_broken_template_edit_keeps_the_last_good_template(workspace):
    with watch.Watcher(workspace, debounce_ms=50) as watcher:
        (workspace.root / "templates" / "system.md.j2").write_text("V1 {{ kind }}\n")
        assert watcher.wait_until(lambda w: build_prompt(workspace).prompt == "V1 default\n", WAIT)
        (workspace.root / "templates" / "system.md.j2").write_text("V2 {{ kind \n")
        assert watcher.wait_until(lambda w: build_prompt(workspace).template_issue is not None, WAIT)
        result = build_prompt(workspace)
        assert result.prompt == "V1 default\n" and result.template_issue.line == 1
