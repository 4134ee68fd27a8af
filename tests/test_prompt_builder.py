"""Prompt assembly (§4): run kinds, layout, stability, caching, template, bootstrap hooks."""

from __future__ import annotations

import pytest

from helpers_skills import set_file, write_config
from kit.errors import KitError
from kit.prompt.builder import BootstrapFile, build_prompt, doctor_checks, heartbeat_is_empty
from kit.tokens import estimate_tokens
from kit.tools import builtin_registry
from kit.workspace import Workspace

ALL = ["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md", "MEMORY.md"]


def reasons(result) -> dict[str, str | None]:
    return {f.name: f.reason for f in result.files}


def test_fresh_workspace_default_prompt_is_under_2000_tokens(workspace, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    result = build_prompt(workspace)
    assert result.est_tokens == estimate_tokens(result.prompt) < 2000
    assert [f.name for f in result.files] == ALL
    assert all(f.reason is None and not f.truncated for f in result.files)
    assert result.skills.format == "full" and result.skills.in_prompt == 2  # the bundled skills
    assert result.warnings == ()


def test_default_layout_stable_parts_then_memory_then_dynamic_tail(workspace, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    prompt = build_prompt(workspace).prompt
    order = ["## Tools", "## Skills", "# AGENTS.md", "# SOUL.md", "# TOOLS.md", "# IDENTITY.md",
             "# USER.md", "# HEARTBEAT.md", "# BOOTSTRAP.md", "# MEMORY.md", "# Current time"]
    positions = [prompt.index(marker) for marker in order]
    # the dynamic tail is a section of its own, not a subsection of MEMORY.md (a new user read
    # "## Current time" under "# MEMORY.md" as part of the memory)
    assert "\n# Current time\n" in prompt and "## Current time" not in prompt
    assert positions == sorted(positions)
    assert prompt.rstrip().endswith("Thursday, 2026-05-07 09:00 (UTC+00:00)")
    for tool in builtin_registry():
        assert f"- {tool.name}: {tool.summary}" in prompt
    assert builtin_registry().names == ("memory_search", "memory_get", "memory_write", "session_search",
                                     "skills_list", "skill_view", "read_file", "write_file", "edit_file", "exec")


@pytest.mark.parametrize(
    ("kind", "included"),
    [
        ("default", ALL),
        ("subagent", ["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md"]),
        ("cron", ["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md"]),
        ("heartbeat", ["HEARTBEAT.md"]),
        ("shared", ["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md"]),
    ],
)
def test_run_kinds_choose_files(workspace, kind, included):
    result = build_prompt(workspace, kind)
    got = reasons(result)
    assert sorted(got) == sorted(ALL)  # every present file is reported
    assert [n for n in got if got[n] is None] == included  # in prompt order
    assert sorted(n for n in got if got[n] == "excluded_by_kind") == sorted(set(ALL) - set(included))
    for entry in result.files:
        if entry.reason == "excluded_by_kind":
            assert entry.injected_chars == 0 and entry.truncated is False and entry.raw_chars > 0
            assert f"# {entry.name}\n" not in result.prompt
        else:
            assert f"# {entry.name}\n" in result.prompt


def test_heartbeat_goes_in_the_tail_and_empty_heartbeat_is_flagged(workspace):
    empty = build_prompt(workspace, "heartbeat")
    assert empty.heartbeat_empty is True
    set_file(workspace, "HEARTBEAT.md", "# Heartbeat checklist\n\n- Check today's note for follow-ups.\n")
    result = build_prompt(workspace, "heartbeat")
    assert result.heartbeat_empty is False
    prompt = result.prompt
    assert prompt.index("# Current time") < prompt.index("# HEARTBEAT.md") < prompt.index("- Check today's note")
    assert "HEARTBEAT_OK" in prompt
    assert heartbeat_is_empty("# H\n\n<!-- tasks here\n- x -->\n\n") is True
    assert heartbeat_is_empty("# H\n- water the plants\n") is False


def test_missing_files_are_skipped(ws_path):
    (ws_path / "BOOTSTRAP.md").unlink()
    (ws_path / "USER.md").unlink()
    result = build_prompt(Workspace.open(ws_path))
    assert [f.name for f in result.files] == [n for n in ALL if n not in ("BOOTSTRAP.md", "USER.md")]


def test_unknown_kind_is_an_error(workspace):
    with pytest.raises(KitError, match="unknown run kind 'nightly'"):
        build_prompt(workspace, "nightly")


def test_two_builds_from_one_snapshot_are_byte_identical_and_cached(workspace, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    first = build_prompt(workspace)
    second = build_prompt(workspace)
    assert first.prompt.encode() == second.prompt.encode()
    assert first.files is second.files  # the assembly came from ws.cached
    # a later clock only changes the tail
    kit_now("2026-05-08T10:30:00+00:00")
    later = build_prompt(workspace)
    cut = first.prompt.index("# Current time")
    assert later.prompt[:cut] == first.prompt[:cut]
    assert "Friday, 2026-05-08 10:30" in later.prompt[cut:]


def test_a_new_snapshot_version_rebuilds(workspace):
    before = build_prompt(workspace)
    set_file(workspace, "SOUL.md", "# Soul\n\nYou answer in haiku.\n")
    after = build_prompt(workspace)
    assert after.version == before.version + 1
    assert "You answer in haiku." in after.prompt and "You answer in haiku." not in before.prompt
    # an unchanged save does not bump the version, so the cache holds
    workspace.reload(["SOUL.md"])
    assert build_prompt(workspace).files is after.files


def test_workspace_template_override_replaces_the_layout(workspace, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    set_file(workspace, "templates/system.md.j2",
             "CUSTOM {{ kind }}\n{% for f in files %}[{{ f.name }}]{% endfor %}\n{{ memory.name }} {{ now.date }}\n")
    result = build_prompt(workspace)
    assert result.template == "templates/system.md.j2"
    # trim_blocks is on: the newline after a block tag is dropped, as in the built-in template
    assert result.prompt == (
        "CUSTOM default\n[AGENTS.md][SOUL.md][TOOLS.md][IDENTITY.md][USER.md][HEARTBEAT.md][BOOTSTRAP.md]"
        "MEMORY.md 2026-05-07\n"
    )


def test_template_syntax_error_names_file_and_line_and_keeps_last_good(workspace):
    set_file(workspace, "templates/system.md.j2", "GOOD {{ kind }}\n")
    assert build_prompt(workspace).prompt == "GOOD default\n"
    set_file(workspace, "templates/system.md.j2", "line one\nline two\n{% if %}\n")
    result = build_prompt(workspace)
    assert result.prompt == "GOOD default\n"  # the last good template stays in force
    assert result.template == "templates/system.md.j2 (last good)"
    assert result.template_issue.path == "templates/system.md.j2" and result.template_issue.line == 3
    assert any(w.startswith("templates/system.md.j2:3: template syntax error") for w in result.warnings)
    findings = [f for f in doctor_checks(workspace) if f.path == "templates/system.md.j2"]
    assert findings and findings[0].severity == "error" and findings[0].line == 3


def test_strict_undefined_render_error_falls_back_to_builtin_with_line(workspace):
    set_file(workspace, "templates/system.md.j2", "a\nb\n{{ no_such_variable }}\n")
    result = build_prompt(workspace)
    assert result.template == "builtin"
    assert result.template_issue.line == 3
    assert "'no_such_variable' is undefined" in result.template_issue.message
    assert "# SOUL.md" in result.prompt  # the built-in layout


def test_bootstrap_hooks_add_remove_and_rewrite_before_budgeting(ws_path):
    write_config(ws_path, "bootstrap:\n  max_chars_per_file: 500\n")
    ws = Workspace.open(ws_path)
    seen = {}

    def hook(files, *, kind, workspace, version, **context):
        seen.update(kind=kind, workspace=workspace, version=version, names=[f.name for f in files])
        out = [f for f in files if f.name != "USER.md"]
        out = [BootstrapFile(f.name, "# Soul\n\nRewritten soul.\n") if f.name == "SOUL.md" else f for f in out]
        return [*out, ("TEAM.md", "team " * 200)]  # added files are budgeted like the others

    def in_place(files, **context):
        files.append({"name": "EXTRA.md", "content": "extra text"})

    result = build_prompt(ws, bootstrap_hooks=[hook, in_place])
    assert seen == {"kind": "default", "workspace": ws.root, "version": ws.version, "names": ALL}
    names = [f.name for f in result.files]
    assert "USER.md" not in names and "# USER.md" not in result.prompt
    assert names == ["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md",
                     "TEAM.md", "EXTRA.md", "MEMORY.md"]  # MEMORY.md keeps its place after the persona files
    assert result.prompt.index("# EXTRA.md") < result.prompt.index("# MEMORY.md")
    assert "Rewritten soul." in result.prompt
    team = next(f for f in result.files if f.name == "TEAM.md")
    assert team.truncated and team.reason == "max_per_file" and team.allowance == 500
    assert "extra text" in result.prompt


def test_a_failing_bootstrap_hook_is_reported_and_the_prompt_still_builds(workspace):
    def broken(files, **context):
        raise RuntimeError("boom")

    result = build_prompt(workspace, bootstrap=broken)
    assert [f.name for f in result.files] == ALL
    assert any("failed: boom" in w for w in result.warnings)


def test_doctor_reports_budget_pressure(ws_path):
    write_config(ws_path, "bootstrap:\n  max_chars_per_file: 1000\n")
    (ws_path / "MEMORY.md").write_text("m " * 2000, encoding="utf-8")
    ws = Workspace.open(ws_path)
    findings = doctor_checks(ws)
    assert len(findings) == 1
    assert findings[0].path == "MEMORY.md" and findings[0].severity == "warning"
    # the file name comes from the finding's path, once; the numbers match the budget table
    assert str(findings[0]) == (
        "MEMORY.md: cut to an allowance of 1,000 of 4,000 characters (per-file limit): the first 676 and last "
        "193 are kept, 1,000 injected with the marker; the model sees only its head and tail. Trim the file or "
        "raise bootstrap.max_chars_per_file"
    )
    memory = next(f for f in build_prompt(ws).files if f.name == "MEMORY.md")
    assert (memory.allowance, memory.injected_chars, memory.kept_head, memory.kept_tail) == (1000, 1000, 676, 193)
    assert memory.to_json()["allowance"] == 1000


def test_load_problems_are_warnings_and_say_what_the_prompt_uses(ws_path):
    """A bootstrap file that fails to load is never left out silently (§1 principles 5 and 6)."""
    (ws_path / "kit.yaml").write_text("bootstrap:\n  warnign: once\n")
    (ws_path / "SOUL.md").write_text("---\nx: [\n---\nYou are brief.\n")
    ws = Workspace.open(ws_path)
    result = build_prompt(ws)
    # the rejected file still has a row: no budget cut (reason stays in the spec's enum), a problem
    soul = next(f for f in result.files if f.name == "SOUL.md")
    assert soul.to_json() == {
        "name": "SOUL.md", "raw_chars": 0, "injected_chars": 0, "truncated": False, "reason": None,
        "allowance": 0,
        "problem": "SOUL.md:2: invalid frontmatter YAML: expected the node content, but found '<stream end>'; "
                   "it is left out of the prompt",
    }
    assert [f.name for f in result.files if f.problem] == ["SOUL.md"]
    assert result.warnings == (
        "kit.yaml:2: unknown key 'bootstrap.warnign' (did you mean 'warning'?) "
        "(ignored until fixed; no kit.yaml setting applies)",
        "SOUL.md:2: invalid frontmatter YAML: expected the node content, but found '<stream end>'; "
        "it is left out of the prompt",
    )
    (ws_path / "kit.yaml").write_text("bootstrap:\n  warning: once\n")
    (ws_path / "SOUL.md").write_text("# Soul\n\nYou are brief.\n")
    ws.reload(["kit.yaml", "SOUL.md"])
    assert build_prompt(ws).warnings == ()
    (ws_path / "SOUL.md").write_bytes(b"\x00\x01binary")
    ws.reload(["SOUL.md"])
    result = build_prompt(ws)
    assert "You are brief." in result.prompt
    [warning] = result.warnings
    assert warning.startswith("SOUL.md: ") and warning.endswith("; the prompt uses its last good version")
    soul = next(f for f in result.files if f.name == "SOUL.md")
    assert soul.problem == warning and soul.reason is None and soul.injected_chars == soul.raw_chars > 0
    # a heartbeat run does not load SOUL.md: its problem is not this prompt's, but the row names it
    heartbeat = build_prompt(ws, "heartbeat")
    assert heartbeat.warnings == ()
    soul = next(f for f in heartbeat.files if f.name == "SOUL.md")
    assert soul.reason == "excluded_by_kind" and soul.problem == warning.removesuffix(
        "; the prompt uses its last good version")


def test_common_prefix_ends_at_the_start_of_the_first_differing_line():
    import random

    from kit.prompt.builder import _common_prefix

    def naive(a: str, b: str) -> int:
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        return a.rfind("\n", 0, i) + 1

    assert _common_prefix("same\nThursday", "same\nTuesday") == 5
    assert _common_prefix("abc\ndef", "abc\ndef") == 4  # identical: up to the last line's start
    assert _common_prefix("", "x") == 0
    rng = random.Random(7)
    for _ in range(500):
        a = "".join(rng.choice("ab\n") for _ in range(rng.randrange(0, 40)))
        b = a[: rng.randrange(0, len(a) + 1)] + "".join(rng.choice("ab\n") for _ in range(rng.randrange(0, 5)))
        assert _common_prefix(a, b) == naive(a, b), (a, b)



def test_a_build_with_the_inputs_of_the_last_renders_nothing(workspace, kit_now, monkeypatch):
    # the same snapshot, tools, warning and minute: the last result, without rendering the template
    # (twice) again; any of them changed: rendered again
    from kit.templating import Templates
    from kit.tools import ToolRegistry

    renders = []
    real = Templates.render
    monkeypatch.setattr(Templates, "render", lambda self, name, /, **ctx: renders.append(name) or real(self, name, **ctx))
    kit_now("2026-05-07T09:00:10+00:00")
    first = build_prompt(workspace)
    assert renders.count("system.md.j2") == 2  # the prompt and its other moment (the stable prefix)
    renders.clear()
    kit_now("2026-05-07T09:00:50+00:00")  # the same minute
    assert build_prompt(workspace) is first and renders == []
    kit_now("2026-05-07T09:01:00+00:00")
    later = build_prompt(workspace)
    assert "09:01" in later.prompt and "09:00" not in later.prompt and renders.count("system.md.j2") == 2
    renders.clear()
    fewer = build_prompt(workspace, tools=ToolRegistry(list(builtin_registry())[:1]))
    assert renders and fewer.prompt != later.prompt
    renders.clear()
    set_file(workspace, "SOUL.md", "# Soul\n\nA new soul line.\n")
    edited = build_prompt(workspace)
    assert renders and "A new soul line." in edited.prompt
    assert build_prompt(workspace) is edited


@pytest.mark.parametrize("kind", ["default", "subagent", "heartbeat", "shared"])
def test_a_file_that_fails_to_load_keeps_its_place_in_the_report(ws_path, kind):
    """Regression (new-user report): a SOUL.md with broken frontmatter moved to the end of
    `files` (AGENTS, TOOLS, …, MEMORY, SOUL); the report keeps the documented order always."""
    (ws_path / "SOUL.md").write_text("---\nx: [\n---\nYou are brief.\n")
    result = build_prompt(Workspace.open(ws_path), kind)
    assert [f.name for f in result.files] == ALL
    assert [f.name for f in result.files if f.problem] == ["SOUL.md"]


def test_a_file_left_out_by_the_kind_keeps_its_place_in_the_report(workspace):
    # heartbeat: HEARTBEAT.md alone goes in (at the tail), the other rows stay where they belong
    result = build_prompt(workspace, "heartbeat")
    assert [f.name for f in result.files] == ALL
    assert [f.name for f in result.files if f.reason is None] == ["HEARTBEAT.md"]


def test_persona_frontmatter_is_metadata_and_not_sent_to_the_model(ws_path, kit_now):
    """Regression (new-user report): SOUL.md's ---/title/--- block went into the prompt."""
    kit_now("2026-05-07T09:00:00+00:00")
    (ws_path / "SOUL.md").write_text("---\ntitle: My soul\n---\n# Soul\nBe kind.\n")
    (ws_path / "HEARTBEAT.md").write_text("---\nsummary: checklist\n---\n# Heartbeat\n")
    ws = Workspace.open(ws_path)
    result = build_prompt(ws)
    assert "# SOUL.md\n\n# Soul\nBe kind.\n\n# TOOLS.md" in result.prompt
    assert "title: My soul" not in result.prompt and "summary: checklist" not in result.prompt
    soul = next(f for f in result.files if f.name == "SOUL.md")
    assert (soul.raw_chars, soul.injected_chars) == (len("# Soul\nBe kind.\n"),) * 2
    # a heartbeat file with only frontmatter and a heading has no tasks: its frontmatter is no task
    assert build_prompt(ws, "heartbeat").heartbeat_empty is True
    # the frontmatter stays the file's metadata
    assert dict(ws.snapshot.get("SOUL.md").meta) == {"title": "My soul"}


def test_the_prompt_has_lf_line_endings_whatever_the_files_have(ws_path, kit_now):
    """Regression (new-user report): a CRLF SOUL.md kept \\r on its inner lines (the template
    trimmed the last), so the prompt had mixed line endings."""
    kit_now("2026-05-07T09:00:00+00:00")
    (ws_path / "SOUL.md").write_bytes(b"---\r\ntitle: My soul\r\n---\r\n# Soul\r\nBe kind.\r\nAnd brief.\r\n")
    (ws_path / "USER.md").write_bytes(b"# User\rOld Mac line ends.\r")

    def crlf_hook(files, **context):
        return [*files, BootstrapFile("TEAM.md", "# Team\r\nAdded by a hook.\r\n")]

    result = build_prompt(Workspace.open(ws_path), bootstrap=crlf_hook)
    assert "\r" not in result.prompt
    assert "# SOUL.md\n\n# Soul\nBe kind.\nAnd brief.\n\n# TOOLS.md" in result.prompt
    assert "# USER.md\n\n# User\nOld Mac line ends.\n\n" in result.prompt
    assert "# TEAM.md\n\n# Team\nAdded by a hook.\n\n" in result.prompt
    by_name = {f.name: f for f in result.files}
    assert by_name["SOUL.md"].raw_chars == len("# Soul\nBe kind.\nAnd brief.\n") == by_name["SOUL.md"].injected_chars
    assert "\r" not in by_name["TEAM.md"].text
