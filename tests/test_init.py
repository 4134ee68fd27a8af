"""`kit init`: every file, short templates, never overwriting, --git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kit.errors import WorkspaceError
from kit.init import init_workspace
from kit.workspace import Workspace

SPEC_FILES = ["kit.yaml", "AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md",
              "BOOTSTRAP.md", "MEMORY.md", "DREAMS.md", ".gitignore"]


def test_creates_every_file_of_the_layout(tmp_path: Path):
    result = init_workspace(tmp_path / "a")
    root = tmp_path / "a"
    for name in SPEC_FILES:
        assert (root / name).is_file(), name
        assert name in result.created
    for folder in ("memory", "skills", "hooks", "templates"):
        assert (root / folder).is_dir()
    assert ".kit/" in (root / ".gitignore").read_text().splitlines()
    assert result.skipped == () and result.overwritten == ()


def test_templates_are_short(tmp_path: Path):
    init_workspace(tmp_path)
    for name in SPEC_FILES:
        if name != "kit.yaml":
            assert len((tmp_path / name).read_text()) < 1500, name


def test_never_overwrites_without_force(tmp_path: Path):
    init_workspace(tmp_path)
    (tmp_path / "SOUL.md").write_text("mine\n")
    result = init_workspace(tmp_path)
    assert (tmp_path / "SOUL.md").read_text() == "mine\n"
    assert "SOUL.md" in result.skipped and result.created == ()
    (tmp_path / "MEMORY.md").write_text("# Memory\n- precious\n")
    result = init_workspace(tmp_path, force=True)
    assert (tmp_path / "SOUL.md").read_text().startswith("# Soul")
    assert "SOUL.md" in result.overwritten
    # memory is the agent's history, not a template: --force keeps it
    assert (tmp_path / "MEMORY.md").read_text() == "# Memory\n- precious\n"
    assert {"MEMORY.md", "DREAMS.md"} <= set(result.skipped)


def test_init_keeps_user_files_it_does_not_know(tmp_path: Path):
    (tmp_path / "notes.md").write_text("keep me")
    init_workspace(tmp_path, force=True)
    assert (tmp_path / "notes.md").read_text() == "keep me"


def test_git_makes_the_first_commit_and_enables_autocommit(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("KIT_NOW", "2026-11-20T10:00:00+00:00")
    result = init_workspace(tmp_path, git=True)
    assert (result.committed, result.first_commit, result.autocommit, result.updated) == (True, True, True, ())
    log = subprocess.run(["git", "log", "--format=%s|%aI|%cI"], cwd=tmp_path, capture_output=True, text=True).stdout
    # dated by Kit's clock (KIT_NOW), as a dream's commits are
    assert log.strip() == "Kit workspace: initial files|2026-11-20T10:00:00+00:00|2026-11-20T10:00:00+00:00"
    tracked = subprocess.run(["git", "ls-files"], cwd=tmp_path, capture_output=True, text=True).stdout.split()
    assert "SOUL.md" in tracked and not any(t.startswith(".kit") for t in tracked)
    assert Workspace.open(tmp_path).config["git.autocommit"] is True


def test_init_on_a_file_fails_clearly(tmp_path: Path):
    f = tmp_path / "x"
    f.write_text("")
    with pytest.raises(WorkspaceError, match="not a directory"):
        init_workspace(f)


def test_cli_init_and_json(cli, tmp_path: Path):
    result = cli("init", tmp_path / "w", "--json")
    assert result.exit_code == 0
    import json

    data = json.loads(result.output)
    assert "SOUL.md" in data["created"] and data["committed"] is False
    again = cli("init", tmp_path / "w")
    assert again.exit_code == 0 and "kept         SOUL.md" in again.output
    # regression (a new-user pass): MEMORY.md read "(exists; --force overwrites)", and --force never does
    assert "  kept         SOUL.md (exists; --force overwrites)" in again.output.splitlines()
    assert "  kept         MEMORY.md (memory is never overwritten)" in again.output.splitlines()


def test_init_failures_write_nothing_and_files_get_normal_modes(tmp_path: Path):
    root = tmp_path / "w"
    (root / "SOUL.md").mkdir(parents=True)  # a folder where a template file belongs
    with pytest.raises(WorkspaceError, match="is a directory where a file belongs"):
        init_workspace(root)
    assert [p.relative_to(root).as_posix() for p in root.rglob("*")] == ["SOUL.md"]
    fresh = init_workspace(tmp_path / "fresh")
    probe = tmp_path / "probe"
    probe.write_text("x")  # what a plain open() gives under this umask
    assert {(fresh.root / rel).stat().st_mode & 0o777 for rel in fresh.created} == {probe.stat().st_mode & 0o777}


@pytest.mark.parametrize("where", ["file-parent", "proc"])
def test_uncreatable_path_is_one_line(cli, tmp_path: Path, where: str):
    """Regression: a parent that is a file, or a path under /proc, raised a traceback."""
    if where == "file-parent":
        (tmp_path / "afile").write_text("x")
        target = tmp_path / "afile" / "sub"
    else:
        target = Path("/proc/kit-test-nope")
    result = cli("init", target)
    assert result.exit_code == 1
    assert result.output.startswith(f"kit: cannot create {target}: ")
    assert "Traceback" not in result.output


def test_git_on_an_existing_repository_commits_only_what_init_wrote(tmp_path: Path):
    """Regression: `kit init --git --force` on a used workspace committed every untracked file
    (notes, drafts) as 'initial files'."""
    init_workspace(tmp_path, git=True)
    git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, capture_output=True, text=True).stdout  # noqa: E731
    git("rm", "-q", "AGENTS.md")
    git("-c", "user.name=U", "-c", "user.email=u@x", "commit", "-q", "-m", "no agents file")
    (tmp_path / "memory" / "2026-05-07.md").write_text("- a note\n")
    (tmp_path / "draft.md").write_text("mine\n")
    git("add", "draft.md")
    (tmp_path / "SOUL.md").write_text("edited\n")
    result = init_workspace(tmp_path, git=True)
    assert result.committed and result.created == ("AGENTS.md",) and not result.first_commit
    assert git("log", "--format=%s").splitlines() == [
        "Kit workspace: files from kit init", "no agents file", "Kit workspace: initial files"]
    assert git("show", "--name-only", "--format=", "HEAD").split() == ["AGENTS.md"]
    assert (tmp_path / "SOUL.md").read_text() == "edited\n"
    assert "A  draft.md" in git("status", "--porcelain")  # the user's staging is left alone


def test_git_on_a_workspace_made_without_it_turns_autocommit_on(tmp_path: Path, cli):
    """Regression (a new-user pass): `kit init` then `kit init --git` kept kit.yaml, so autocommit
    stayed off, and said it "committed the files kit init wrote" (it wrote none: it committed all)."""
    init_workspace(tmp_path)
    before = (tmp_path / "kit.yaml").read_text()
    out = cli("init", tmp_path, "--git")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "  updated      kit.yaml (git.autocommit: true added at its end)" in lines
    assert "  git          first commit of the workspace (every file in it)" in lines
    assert ("  git          git.autocommit is on: a dream (or a verify) that changes MEMORY.md commits the files it "
            "changed") in lines
    assert (tmp_path / "kit.yaml").read_text() == before + "\ngit:\n  autocommit: true\n"  # every byte kept
    assert Workspace.open(tmp_path).config["git.autocommit"] is True
    committed = subprocess.run(["git", "show", "--name-only", "--format=", "HEAD"], cwd=tmp_path,
                               capture_output=True, text=True).stdout.split()
    assert "kit.yaml" in committed and "SOUL.md" in committed
    # run again: on already, nothing more to add or say
    again = init_workspace(tmp_path, git=True)
    assert (again.updated, again.autocommit, again.notes, again.committed) == ((), True, (), False)
    assert (tmp_path / "kit.yaml").read_text() == before + "\ngit:\n  autocommit: true\n"


def test_git_never_rewrites_a_git_section_the_person_wrote(tmp_path: Path):
    init_workspace(tmp_path)
    cfg = tmp_path / "kit.yaml"
    cfg.write_text("agent:\n  model: openai/gpt-4o-mini\ngit:\n  autocommit: false\n")
    result = init_workspace(tmp_path, git=True)
    assert (result.updated, result.autocommit) == ((), False)
    assert result.notes == ("kit.yaml kept: its git section does not turn autocommit on; set git.autocommit: true in it",)
    assert cfg.read_text() == "agent:\n  model: openai/gpt-4o-mini\ngit:\n  autocommit: false\n"
    cfg.write_text("agent: [\n")
    assert init_workspace(tmp_path, git=True).notes == (
        "kit.yaml kept as it is (it does not load): set git.autocommit: true in it yourself",)
    assert cfg.read_text() == "agent: [\n"


@pytest.mark.parametrize("text", ["agent:\n  model: x/y\ngit:\n", "git: ~\n", "{agent: {model: x/y}}\n",
                                  "agent:\n  model: x/y\n...\n"])
def test_git_never_breaks_a_kit_yaml_that_loads(tmp_path: Path, text: str):
    """Regression (a review): an empty `git:` read as no section and got a second one, and an
    addition after a flow mapping or a `...` end marker made the file unloadable — and committed."""
    init_workspace(tmp_path)
    cfg = tmp_path / "kit.yaml"
    cfg.write_text(text)
    result = init_workspace(tmp_path, git=True)
    assert cfg.read_text() == text
    assert (result.updated, result.autocommit) == ((), False)
    assert len(result.notes) == 1 and "set git.autocommit: true in it" in result.notes[0]
    assert not Workspace.open(tmp_path).snapshot.config_issues  # still loads
