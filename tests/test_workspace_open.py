"""Workspace.open, the snapshot, bad input, last-good reloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kit.errors import WorkspaceError
from kit.workspace import Workspace, find_workspace


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_open_loads_bootstrap_documents(workspace):
    snap = workspace.snapshot
    assert snap.version == 1
    for name in ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md",
                 "BOOTSTRAP.md", "MEMORY.md", "DREAMS.md"):
        assert name in snap.documents, name
    assert snap.get("SOUL.md").text.startswith("# Soul")
    assert snap.issues == ()
    with pytest.raises(TypeError):
        snap.documents["X.md"] = None  # read-only view


def test_missing_path_is_a_clear_error(tmp_path: Path):
    with pytest.raises(WorkspaceError) as info:
        Workspace.open(tmp_path / "nope")
    assert "does not exist" in str(info.value) and "kit init" in str(info.value)


def test_file_instead_of_folder(tmp_path: Path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(WorkspaceError, match="is not a directory"):
        Workspace.open(f)


def test_folder_without_kit_yaml(tmp_path: Path):
    with pytest.raises(WorkspaceError, match="has no kit.yaml"):
        Workspace.open(tmp_path)


def test_find_workspace_walks_up(ws_path: Path, monkeypatch):
    deep = ws_path / "memory" / "a" / "b"
    deep.mkdir(parents=True)
    assert find_workspace(deep) == ws_path.resolve()
    monkeypatch.setenv("KIT_WORKSPACE", "/somewhere")
    assert find_workspace(deep) == Path("/somewhere")


def test_find_workspace_error_says_how_to_create(tmp_path: Path):
    with pytest.raises(WorkspaceError, match="kit init"):
        find_workspace(tmp_path)


@pytest.mark.parametrize(
    "make_bad, expected",
    [
        (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary"), "binary file"),
        (lambda p: p.write_text("x" * (5 * 1024 * 1024)), "over the 2 MiB limit"),
        (lambda p: (p.unlink(), p.mkdir()), "is a directory"),
        (lambda p: p.write_bytes(b"# Soul\n\xff\xfe bad utf8"), "not valid UTF-8"),
    ],
    ids=["binary", "5MB", "directory", "bad-utf8"],
)
def test_bad_soul_is_reported_and_others_load(ws_path: Path, make_bad, expected):
    make_bad(ws_path / "SOUL.md")
    before = tree(ws_path)
    ws = Workspace.open(ws_path)
    assert "SOUL.md" not in ws.snapshot.documents
    assert "AGENTS.md" in ws.snapshot.documents and "MEMORY.md" in ws.snapshot.documents
    [issue] = ws.snapshot.issues
    assert issue.path == "SOUL.md" and expected in issue.message
    assert tree(ws_path) == before  # nothing written


def test_broken_frontmatter_names_the_line(ws_path: Path):
    (ws_path / "USER.md").write_text("---\ntitle: ok\nname: [unclosed\nmore: x\n---\nbody\n")
    ws = Workspace.open(ws_path)
    [issue] = ws.snapshot.issues
    assert issue.path == "USER.md"
    assert issue.line == 3
    assert "invalid frontmatter YAML" in issue.message
    assert "SOUL.md" in ws.snapshot.documents


def test_unclosed_frontmatter(ws_path: Path):
    (ws_path / "USER.md").write_text("---\ntitle: ok\nbody without end\n")
    ws = Workspace.open(ws_path)
    assert [str(i) for i in ws.snapshot.issues] == ["USER.md:1: frontmatter starts with '---' but is never closed"]


def test_frontmatter_is_parsed(ws_path: Path):
    (ws_path / "USER.md").write_text("---\nname: Ada\n---\n# User\nAda.\n")
    doc = Workspace.open(ws_path).snapshot.get("USER.md")
    assert doc.meta["name"] == "Ada"
    assert doc.body == "# User\nAda.\n"
    assert doc.body_line == 4


def test_broken_edit_keeps_last_good_version(workspace):
    soul = workspace.root / "SOUL.md"
    soul.write_text("# Soul v2\n")
    r = workspace.reload(["SOUL.md"])
    assert r.changed == ("SOUL.md",) and r.version == 2
    soul.write_bytes(b"\x00\x01\x02")
    r = workspace.reload(["SOUL.md"])
    assert r.changed == ()
    assert [e.path for e in r.errors] == ["SOUL.md"]
    assert workspace.snapshot.get("SOUL.md").text == "# Soul v2\n"
    assert workspace.snapshot.version == 3  # the new error is news
    soul.write_text("# Soul v3\n")
    r = workspace.reload(["SOUL.md"])
    assert r.changed == ("SOUL.md",) and r.errors == ()
    assert workspace.snapshot.get("SOUL.md").text == "# Soul v3\n"


def test_invalid_config_keeps_last_good(workspace):
    cfg = workspace.root / "kit.yaml"
    cfg.write_text("agent:\n  model: openai/gpt-4o-mini\n")
    assert workspace.reload(["kit.yaml"]).changed == ("kit.yaml",)
    cfg.write_text("agent:\n  model: [oops\n")
    r = workspace.reload(["kit.yaml"])
    assert workspace.config["agent.model"] == "openai/gpt-4o-mini"
    assert len(r.errors) == 1 and r.errors[0].path == "kit.yaml" and r.errors[0].line == 2
    cfg.write_text("agent:\n  model: anthropic/claude-x\n")
    r = workspace.reload(["kit.yaml"])
    assert r.errors == ()
    assert workspace.config["agent.model"] == "anthropic/claude-x"


def test_first_load_with_bad_config_runs_on_defaults_and_says_so(ws_path: Path):
    (ws_path / "kit.yaml").write_text("agent: {max_iterations: lots}\n")
    ws = Workspace.open(ws_path)
    assert ws.config["agent.max_iterations"] == 25
    assert [str(i) for i in ws.snapshot.issues] == [
        "kit.yaml:1: 'agent.max_iterations' must be an integer, not 'lots'"
    ]


def test_unchanged_reload_keeps_version(workspace):
    assert workspace.reload(["SOUL.md"]).version == 1
    assert workspace.reload().version == 1


def test_deleted_document_leaves_snapshot(workspace):
    (workspace.root / "BOOTSTRAP.md").unlink()
    r = workspace.reload(["BOOTSTRAP.md"])
    assert r.changed == ("BOOTSTRAP.md",)
    assert "BOOTSTRAP.md" not in workspace.snapshot.documents


def test_untracked_paths_are_passed_to_listeners(workspace):
    seen = []
    workspace.subscribe(lambda result, snap: seen.append((result.changed, snap.version)))
    (workspace.root / "memory" / "2026-05-07.md").write_text("- a fact\n")
    workspace.reload(["memory/2026-05-07.md"])
    assert seen == [(("memory/2026-05-07.md",), 2)]


def test_symlink_out_of_workspace_is_refused(ws_path: Path, tmp_path: Path):
    secret = tmp_path / "secret.md"
    secret.write_text("top secret")
    (ws_path / "USER.md").unlink()
    os.symlink(secret, ws_path / "USER.md")
    ws = Workspace.open(ws_path)
    assert "USER.md" not in ws.snapshot.documents
    assert "outside the workspace" in ws.snapshot.issues[0].message


def test_own_write_is_applied_directly(workspace):
    r = workspace.write_text("MEMORY.md", "# Memory\n- new\n")
    assert r.changed == ("MEMORY.md",)
    assert workspace.snapshot.get("MEMORY.md").text == "# Memory\n- new\n"
    assert workspace.expected_hash("MEMORY.md") == workspace.snapshot.get("MEMORY.md").hash


def test_cached_is_per_version(workspace):
    calls = []
    build = lambda: calls.append(1) or len(calls)  # noqa: E731
    assert workspace.cached("k", build) == 1
    assert workspace.cached("k", build) == 1
    workspace.write_text("SOUL.md", "# changed\n")
    assert workspace.cached("k", build) == 2


def test_config_issues_from_every_layer_are_config_findings(ws_path: Path, monkeypatch):
    """Flags and KIT_* errors are config problems too (doctor and `kit config show` list them as such)."""
    from kit.doctor import doctor_checks

    (ws_path / "USER.md").write_text("---\nname: [x\n---\n")
    monkeypatch.setenv("KIT_HOOKS__TIMEOUT_S", "soon")
    ws = Workspace.open(ws_path, flags={"agent.max_iterations": 0})
    assert [(i.path, i.message) for i in ws.snapshot.config_issues] == [
        ("environment variable KIT_HOOKS__TIMEOUT_S", "'hooks.timeout_s' must be a number, not 'soon'"),
        ("command-line flags", "'agent.max_iterations' must be at least 1, not 0"),
    ]
    assert [(f.area, f.path) for f in doctor_checks(ws)] == [
        ("config", "environment variable KIT_HOOKS__TIMEOUT_S"),
        ("config", "command-line flags"),
        ("documents", "USER.md"),
    ]


def test_first_load_keeps_every_valid_value(ws_path: Path, monkeypatch):
    """One typo must not throw away the rest: the valid keys of every layer still apply."""
    (ws_path / "kit.yaml").write_text("agent:\n  model: openai/gpt-4o-mini\n  max_iterations: lots\n")
    monkeypatch.setenv("KIT_WATCH__DEBOUNCE_MS", "40")
    ws = Workspace.open(ws_path)
    assert ws.config["agent.model"] == "openai/gpt-4o-mini"
    assert ws.config.source("agent.model") == "workspace"
    assert ws.config["agent.max_iterations"] == 25
    assert ws.config["watch.debounce_ms"] == 40
    assert [str(i) for i in ws.snapshot.issues] == [
        "kit.yaml:3: 'agent.max_iterations' must be an integer, not 'lots'"
    ]


def test_first_load_with_an_invalid_combination_resets_that_pair(ws_path: Path):
    """A pair of settings that disagree takes its defaults; every other setting still applies."""
    (ws_path / "kit.yaml").write_text("agent:\n  model: x/y\nbootstrap:\n  head_ratio: 0.9\n  tail_ratio: 0.5\n")
    ws = Workspace.open(ws_path)
    assert ws.config["agent.model"] == "x/y"
    assert (ws.config["bootstrap.head_ratio"], ws.config["bootstrap.tail_ratio"]) == (0.7, 0.2)
    assert ws.config.source("bootstrap.head_ratio") == "default"
    assert ws.config_notices() == [
        "warning: kit.yaml:5: bootstrap.head_ratio + bootstrap.tail_ratio must not exceed 1 "
        "(ignored until fixed; the valid settings apply)"
    ]


def test_one_bad_mcp_server_or_provider_costs_only_itself(ws_path: Path):
    """Found by a new user: an MCP server with both `command` and `url` made Kit ignore the whole
    kit.yaml (the model, the search settings, the good servers)."""
    (ws_path / "kit.yaml").write_text(
        "agent: {model: openai/gpt-4o-mini}\n"
        "memory: {search: {max_results: 3}}\n"
        "mcp:\n"
        "  servers:\n"
        "    time: {command: mcp-server-time}\n"
        "    both: {command: foo, url: 'http://127.0.0.1:9/mcp'}\n"
        "    neither: {policy: allow}\n"
        "    ftp: {url: 'ftp://127.0.0.1/mcp'}\n"
        "providers:\n"
        "  vllm: {base_url: 'http://127.0.0.1:8000/v1'}\n"
        "  local: {type: openai, base_url: 'http://127.0.0.1:8001/v1'}\n")
    ws = Workspace.open(ws_path)
    assert ws.config["agent.model"] == "openai/gpt-4o-mini"
    assert ws.config["memory.search.max_results"] == 3
    assert sorted(ws.config["mcp.servers"]) == ["time"]
    assert ws.config["mcp.servers.time.command"] == "mcp-server-time"
    assert sorted(ws.config["providers"]) == ["anthropic", "local", "ollama", "openai"]  # vllm left out
    assert ws.config_notices() == [
        f"warning: kit.yaml:{line}: {message} (ignored until fixed; the valid settings apply)" for line, message in [
            (6, "MCP server 'both' needs either 'command' (stdio) or 'url' (streamable HTTP), not both"),
            (7, "MCP server 'neither' needs either 'command' (stdio) or 'url' (streamable HTTP)"),
            (8, "'mcp.servers.ftp.url' must be an http:// or https:// URL, not 'ftp://127.0.0.1/mcp'"),
            (10, "provider 'vllm' needs 'type: openai|anthropic|ollama'"),
        ]]


def test_what_is_in_force_after_a_config_problem_is_said_as_it_is(ws_path: Path):
    """One wording (`kit.snapshot.config_in_force`) for every command, the prompt report and a
    session, true to the case: a first load keeps every valid setting of kit.yaml; a broken edit
    that a reload sees (kit serve, kit watch, an agent writing kit.yaml) keeps the last good
    configuration, so "the valid settings apply" would be false there."""
    from kit.prompt.builder import build_prompt

    cfg = ws_path / "kit.yaml"
    typo = "kit.yaml:3: unknown key 'agent.modle' (did you mean 'model'?)"

    def said(ws) -> list[str]:
        notices = ws.config_notices()
        assert [f"warning: {w}" for w in build_prompt(ws).warnings] == notices  # the prompt says it alike
        return notices

    cfg.write_text("agent:\n  model: openai/gpt-4o-mini\n  modle: x\n")
    ws = Workspace.open(ws_path)
    assert ws.config["agent.model"] == "openai/gpt-4o-mini"
    assert said(ws) == [f"warning: {typo} (ignored until fixed; the valid settings apply)"]
    ws.reload(["kit.yaml"])  # saved unchanged: its valid settings are still what is in force
    assert said(ws) == [f"warning: {typo} (ignored until fixed; the valid settings apply)"]
    cfg.write_text("agent:\n  model: anthropic/claude-x\n  modle: x\n")  # a valid change beside the typo
    ws.reload(["kit.yaml"])
    assert ws.config["agent.model"] == "openai/gpt-4o-mini"  # not applied: the config from before stays
    assert said(ws) == [f"warning: {typo} (ignored until fixed; the configuration from before this edit "
                        "stays in force)"]
    cfg.write_text("agent:\n  model: anthropic/claude-x\n")
    ws.reload(["kit.yaml"])
    assert ws.config["agent.model"] == "anthropic/claude-x" and said(ws) == []
    cfg.write_text("agent:\n  model: ollama/qwen\n  modle: x\n")
    version = ws.reload(["kit.yaml"]).version
    assert ws.config["agent.model"] == "anthropic/claude-x"
    assert said(ws) == [f"warning: {typo} (ignored until fixed; the last good configuration stays in force)"]
    cfg.write_text("agent:\n  model: ollama/qwen\n  modle: x\n  temperature: 2\n")
    assert ws.reload(["kit.yaml"]).version == version  # the same problem, the same news: no new version
    assert said(ws) == [f"warning: {typo} (ignored until fixed; the last good configuration stays in force)"]
