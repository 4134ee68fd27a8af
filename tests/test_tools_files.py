"""File tools are confined to the workspace: `..`, absolute paths and symlinks out are refused."""

from __future__ import annotations

import os

import pytest

from kit.tools import ToolContext, builtin_registry, execute_tool


@pytest.fixture
def ctx(workspace):
    return ToolContext(workspace, session_id="t1")


def test_schemas_are_object_schemas():
    for schema in builtin_registry().schemas():
        fn = schema["function"]
        assert schema["type"] == "function"
        assert fn["parameters"]["type"] == "object"
        assert set(fn["parameters"]["required"]) <= set(fn["parameters"]["properties"])


def test_write_read_edit_roundtrip(ctx, workspace):
    out = execute_tool(ctx, "write_file", {"path": "notes/plan.md", "content": "alpha\nbeta\ngamma\n"})
    assert out.ok and not out.blocked
    assert out.result == "created notes/plan.md (17 chars)"
    assert (workspace.root / "notes/plan.md").read_text() == "alpha\nbeta\ngamma\n"

    read = execute_tool(ctx, "read_file", {"path": "notes/plan.md", "start": 2, "lines": 1})
    assert read.ok and read.result == "beta\n"

    edit = execute_tool(ctx, "edit_file", {"path": "notes/plan.md", "old_text": "beta", "new_text": "BETA"})
    assert edit.ok and edit.result == "edited notes/plan.md: 1 replacement"
    assert (workspace.root / "notes/plan.md").read_text() == "alpha\nBETA\ngamma\n"

    missing = execute_tool(ctx, "edit_file", {"path": "notes/plan.md", "old_text": "delta", "new_text": "x"})
    assert not missing.ok
    assert "old_text was not found in notes/plan.md" in missing.result


def test_edit_refuses_ambiguous_match_unless_replace_all(ctx, workspace):
    (workspace.root / "a.md").write_text("x x x")
    out = execute_tool(ctx, "edit_file", {"path": "a.md", "old_text": "x", "new_text": "y"})
    assert not out.ok and "occurs 3 times" in out.result
    out = execute_tool(ctx, "edit_file", {"path": "a.md", "old_text": "x", "new_text": "y", "replace_all": True})
    assert out.ok and (workspace.root / "a.md").read_text() == "y y y"


@pytest.mark.parametrize(("path", "why"), [
    ("../outside.md", "'..' is not allowed in paths"),
    ("notes/../../outside.md", "'..' is not allowed in paths"),
    ("/tmp/kit-outside.md", "absolute paths are not allowed"),
    ("~/x.md", "absolute paths are not allowed"),
])
@pytest.mark.parametrize("tool", ["write_file", "read_file", "edit_file"])
def test_escapes_are_refused(ctx, workspace, tool, path, why):
    (workspace.root.parent / "outside.md").write_text("a secret outside\n", encoding="utf-8")
    args = {"path": path, "content": "pwned", "old_text": "a", "new_text": "b"}
    out = execute_tool(ctx, tool, args)
    assert (out.ok, out.blocked, out.result) == (False, False, f"error: {why}: {path}")
    assert (workspace.root.parent / "outside.md").read_text(encoding="utf-8") == "a secret outside\n"
    assert not os.path.exists("/tmp/kit-outside.md")


def test_symlink_out_of_workspace_is_refused(ctx, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("top secret")
    os.symlink(outside, workspace.root / "link")
    os.symlink(secret, workspace.root / "secret-link.txt")

    for args in ({"path": "link/secret.txt"}, {"path": "secret-link.txt"}):
        out = execute_tool(ctx, "read_file", args)
        assert not out.ok and "outside" in out.result
        assert "top secret" not in out.result
    out = execute_tool(ctx, "write_file", {"path": "link/new.txt", "content": "x"})
    assert not out.ok and "outside" in out.result
    assert not (outside / "new.txt").exists()
    out = execute_tool(ctx, "write_file", {"path": "secret-link.txt", "content": "x"})
    assert not out.ok
    assert secret.read_text() == "top secret"


def test_machine_state_is_not_writable(ctx, workspace):
    out = execute_tool(ctx, "write_file", {"path": ".kit/state.db", "content": "x"})
    assert not out.ok and ".kit/ holds machine state" in out.result
    out = execute_tool(ctx, "write_file", {"path": ".git/config", "content": "x"})
    assert not out.ok and ".git/ holds machine state" in out.result


def test_the_agent_cannot_rewrite_its_own_permissions(ctx, workspace):
    """kit.yaml holds tools.exec: a model able to write it could set `mode: allow` for itself."""
    before = (workspace.root / "kit.yaml").read_text()
    for name, args in (("write_file", {"path": "kit.yaml", "content": "tools:\n  exec: {mode: allow}\n"}),
                       ("write_file", {"path": "./kit.yaml", "content": "x"}),
                       ("edit_file", {"path": "kit.yaml", "old_text": before[:20], "new_text": "x"})):
        out = execute_tool(ctx, name, args)
        assert not out.ok and "kit.yaml holds the agent's own permissions" in out.result, args
    assert (workspace.root / "kit.yaml").read_text() == before
    assert execute_tool(ctx, "read_file", {"path": "kit.yaml"}).ok  # reading it is fine


def test_binary_file_is_reported_not_dumped(ctx, workspace):
    (workspace.root / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    out = execute_tool(ctx, "read_file", {"path": "blob.bin"})
    assert not out.ok and "binary file (300 bytes)" in out.result


def test_unknown_tool_and_missing_argument(ctx):
    out = execute_tool(ctx, "teleport", {})
    assert not out.ok and out.result.startswith("error: unknown tool `teleport`")
    out = execute_tool(ctx, "write_file", {"path": "a.md"})
    assert not out.ok and out.result == "error: missing required argument `content`"


def test_write_file_updates_snapshot(ctx, workspace):
    before = workspace.version
    out = execute_tool(ctx, "write_file", {"path": "SOUL.md", "content": "# Soul\n\nA pirate.\n"})
    assert out.ok and out.result == "overwrote SOUL.md (18 chars)"
    assert workspace.version > before
    assert workspace.snapshot.get("SOUL.md").text == "# Soul\n\nA pirate.\n"


def test_non_object_arguments_are_an_error(ctx):
    out = execute_tool(ctx, "read_file", "SOUL.md")
    assert not out.ok and out.result == "error: arguments for `read_file` must be a JSON object, got str"


def test_skill_tools(ctx, workspace):
    folder = workspace.root / "skills" / "release-notes"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: release-notes\ndescription: Drafts release notes.\n---\n"
                                     "# Release notes\n\nGroup changes by area.\n")
    (folder / "references" / "style.md").write_text("Use past tense.\n")
    workspace.reload()
    listed = execute_tool(ctx, "skills_list", {})
    assert listed.ok and '"name": "release-notes"' in listed.result
    view = execute_tool(ctx, "skill_view", {"name": "release-notes"})
    assert view.ok
    meta, _, body = view.result.partition("\n--- SKILL.md ---\n")
    assert body == "# Release notes\n\nGroup changes by area.\n"
    assert "references/style.md" in meta
    one = execute_tool(ctx, "skill_view", {"name": "release-notes", "path": "references/style.md"})
    assert one.ok and one.result.endswith("\n--- references/style.md ---\nUse past tense.\n")
    missing = execute_tool(ctx, "skill_view", {"name": "release-notes", "path": "references/nope.md"})
    assert not missing.ok and "references/style.md" in missing.result
    escape = execute_tool(ctx, "skill_view", {"name": "release-notes", "path": "../../kit.yaml"})
    assert not escape.ok and "Kit configuration" not in escape.result
