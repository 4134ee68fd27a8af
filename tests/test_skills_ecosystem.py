"""Skills as the ecosystem writes them (issue 11, deliver 4): a fixture set in the shapes of real
public skills (anthropics/skills, the Claude Code docs, openclaw/openclaw, NousResearch/hermes-agent,
the community `requires: {mcp: …}` automation skills, the Agent Skills spec) loads with warnings,
never rejections; OpenClaw/Hermes requirements count for readiness; `{baseDir}` and `$ARGUMENTS`
are filled in; `allowed-tools` holds while a skill is active."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from helpers_agent import agent_for, recorded_calls, set_config, write_script
from kit.skills.arguments import substitute
from kit.skills.catalog import build_catalog
from kit.skills.disclosure import skill_view, user_skill_view
from kit.workspace import Workspace

CLAUDE_API_DESCRIPTION = " ".join(["Reference for the Claude API / Anthropic SDK — models, messages, tools,"
                                   " streaming, batches and prompt caching."] * 10)  # 1,109 chars

SKILLS = {
    # anthropics/skills skills/claude-api: a block-scalar description over 1,024 chars, a license file
    "claude-api": f"""\
        ---
        name: claude-api
        description: |-
          {CLAUDE_API_DESCRIPTION}
        license: Complete terms in LICENSE.txt
        ---
        # Claude API
        Use the SDK.
        """,
    # Claude Code docs "Create your first skill": no name, dynamic context injection
    "summarize-changes": """\
        ---
        description: Summarizes uncommitted changes and flags anything risky. Use when the user asks what changed.
        ---

        ## Current changes

        !`git diff HEAD`
        """,
    # Claude Code docs: user-only skill with $ARGUMENTS
    "deploy": """\
        ---
        name: deploy
        description: Deploy the application to production
        disable-model-invocation: true
        argument-hint: "[environment]"
        ---
        Deploy $ARGUMENTS to production: run the tests, build, push.
        """,
    # Claude Code docs: positional arguments, 0-based
    "migrate-component": """\
        ---
        name: migrate-component
        description: Migrate a component from one framework to another
        arguments: [component, source, target]
        ---
        Migrate the $ARGUMENTS[0] component from $1 to $target. Costs \\$2.00, not $3. Home stays $HOME.
        """,
    # Claude Code docs: allowed-tools as permission rules
    "commit": """\
        ---
        name: commit
        description: Stage and commit the current changes
        disable-model-invocation: true
        allowed-tools: Bash(git add *) Bash(git commit *) Bash(git status *), Read
        ---
        Run git status, stage what belongs together, commit with a clear message.
        """,
    # openclaw/openclaw skills/1password: multi-line JSON5-ish metadata with trailing commas
    "1password": """\
        ---
        name: 1password
        description: Set up and use 1Password CLI (op). Use when installing the CLI or reading secrets.
        homepage: https://developer.1password.com/docs/cli/get-started/
        metadata:
          {
            "openclaw":
              {
                "emoji": "🔐",
                "requires": { "bins": ["op-kit-test-absent"] },
                "install":
                  [
                    {
                      "id": "brew",
                      "kind": "brew",
                      "formula": "1password-cli",
                      "bins": ["op"],
                      "label": "Install 1Password CLI (brew)",
                    },
                  ],
              },
          }
        ---
        # 1Password CLI
        See references/get-started.md.
        """,
    # openclaw/openclaw skills/nano-banana-pro: env + primaryEnv + {baseDir}
    "nano-banana-pro": """\
        ---
        name: nano-banana-pro
        description: Generate or edit images with Gemini 3 Pro Image (Nano Banana Pro).
        metadata: {"openclaw": {"emoji": "🍌", "requires": {"bins": ["sh"], "env": ["GEMINI_API_KEY"]}, "primaryEnv": "GEMINI_API_KEY"}}
        ---
        ```bash
        uv run {baseDir}/scripts/generate_image.py --prompt "a cat" --filename "output.png" --resolution 1K
        ```
        """,
    # primaryEnv alone (OpenClaw ties it to skills.entries.<name>.apiKey): still a required variable
    "openai-image-gen": """\
        ---
        name: openai-image-gen
        description: Batch-generate images via the OpenAI Images API.
        metadata: {"clawdbot": {"primaryEnv": "OPENAI_API_KEY"}}
        ---
        python3 {baseDir}/scripts/gen.py
        """,
    # a rebranded fork: single-line JSON under an unknown vendor key
    "nano-dna": """\
        ---
        name: nano-dna
        description: Generate images (fork).
        metadata: {"dna":{"emoji":"🍌","requires":{"bins":["uv"],"env":["GEMINI_API_KEY"]},"primaryEnv":"GEMINI_API_KEY"}}
        ---
        Run {baseDir}/scripts/run.sh.
        """,
    # NousResearch/hermes-agent skills/apple/apple-reminders: platforms + prerequisites
    "apple-reminders": """\
        ---
        name: apple-reminders
        description: "Apple Reminders via remindctl: add, list, complete."
        version: 1.0.0
        author: Hermes Agent
        license: MIT
        platforms: [macos]
        metadata:
          hermes:
            tags: [Reminders, tasks, todo, macOS, Apple]
        prerequisites:
          commands: [remindctl]
        ---
        Use remindctl.
        """,
    # sickn33/agentic-awesome-skills helpdesk-automation: requires.mcp and community keys
    "helpdesk-automation": """\
        ---
        name: helpdesk-automation
        description: "Helpdesk automation via Rube MCP: tickets, agents, SLAs."
        requires:
          mcp: [rube]
        risk: unknown
        source: community
        ---
        Call RUBE_SEARCH_TOOLS first.
        """,
    # agentskills.io specification, minimal
    "skill-name": """\
        ---
        name: skill-name
        description: A description of what this skill does and when to use it.
        ---
        Steps.
        """,
    # a "v2 frontmatter" variant: requires as a list of skill ids; booleans written yes/on
    "v2-shape": """\
        ---
        name: v2-shape
        description: Uses other skills.
        requires: [skill-name, deploy]
        user-invocable: yes
        disable-model-invocation: off
        openclaw-extra: {deep: {nested: [1, 2]}}
        ---
        Do it.
        """,
}


def write_skills(root: Path) -> None:
    for folder, text in SKILLS.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "SKILL.md").write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def ws(ws_path, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\ntools:\n  exec: {mode: allow}\n")
    write_skills(ws_path / "skills")
    return Workspace.open(ws_path)


def test_every_shape_loads_with_warnings_not_rejections(ws):
    catalog = build_catalog(ws)
    assert set(SKILLS) <= set(catalog.skills)
    assert [p for p in catalog.problems if p.severity == "error"] == []
    warned = {(p.details["skill"], p.message) for p in catalog.problems}
    assert ("claude-api", f"'description' is {len(CLAUDE_API_DESCRIPTION)} characters, over the 1024 limit: "
                          "loaded cut to 1024") in warned
    assert ("helpdesk-automation", "unknown frontmatter key 'risk' (ignored)") in warned
    assert ("v2-shape", "'requires' is not a mapping of bins, any_bins, env, os, mcp and/or config; ignored") in warned
    assert ("v2-shape", "unknown frontmatter key 'openclaw-extra' (ignored)") in warned
    # documented keys of Claude Code, OpenClaw and Hermes are not "unknown"
    assert not [m for s, m in warned if s in ("1password", "apple-reminders", "deploy") and "unknown" in m]
    api = catalog.get("claude-api")
    assert len(api.description) == 1024 and api.description.endswith("…")
    assert catalog.get("summarize-changes").name == "summarize-changes"  # the folder's name
    v2 = catalog.get("v2-shape")
    assert v2.user_invocable and v2.model_invocable and v2.readiness == "available"


def test_openclaw_and_hermes_requirements_count_for_readiness(ws, monkeypatch):
    catalog = build_catalog(ws, environ={})
    one = catalog.get("1password")
    assert (one.readiness, dict(one.missing)) == ("missing", {"bins": ["op-kit-test-absent"]})
    nano = catalog.get("nano-banana-pro")
    assert (nano.readiness, dict(nano.missing)) == ("missing", {"env": ["GEMINI_API_KEY"]})
    assert build_catalog(ws, environ={"GEMINI_API_KEY": "k"}).get("nano-banana-pro").readiness == "available"
    reminders = catalog.get("apple-reminders")
    assert (reminders.readiness, dict(reminders.missing)) == ("unsupported", {"os": ["macos"]})
    image = catalog.get("openai-image-gen")  # the older metadata.clawdbot key, primaryEnv only
    assert (image.readiness, dict(image.missing)) == ("missing", {"env": ["OPENAI_API_KEY"]})
    # an unknown vendor key (a fork's `dna`) is only metadata: nothing required
    assert catalog.get("nano-dna").readiness == "available"


def test_requires_mcp_is_ready_once_the_server_is_configured(ws):
    skill = build_catalog(ws).get("helpdesk-automation")
    assert (skill.readiness, dict(skill.missing)) == ("missing", {"mcp": ["rube"]})
    set_config(ws.root, "mcp:\n  servers:\n    rube: {command: rube-mcp}\n")
    ws.reload()
    if "mcp" not in ws.config.data:
        pytest.skip("mcp.servers is not in this build's config schema yet (the MCP client adds it)")
    assert build_catalog(ws).get("helpdesk-automation").readiness == "available"
    set_config(ws.root, "mcp:\n  servers:\n    rube: {command: rube-mcp, enabled: false}\n")
    ws.reload()
    assert build_catalog(ws).get("helpdesk-automation").readiness == "missing"


def test_requires_mcp_readiness_reads_the_configured_servers():
    from kit.skills.validate import readiness

    class Config:  # the shape of kit.config.Config.get over a kit.yaml with two servers
        def __init__(self, servers):
            self.servers = servers

        def get(self, key, default=None):
            return self.servers if key == "mcp.servers" else default

    requires = {"mcp": ("rube", "time")}
    config = Config({"rube": {"command": "rube"}, "time": {"command": "t", "enabled": False}})
    assert readiness(requires, which=lambda b: True, environ={}, config=config) == ("missing", {"mcp": ["time"]})
    config.servers["time"]["enabled"] = True
    assert readiness(requires, which=lambda b: True, environ={}, config=config) == ("available", {})


def test_requires_config_reads_kit_config(ws_path):
    (ws_path / "skills" / "browse").mkdir(parents=True)
    (ws_path / "skills" / "browse" / "SKILL.md").write_text(
        '---\nname: browse\ndescription: Browse.\nmetadata: {"openclaw": {"requires": '
        '{"config": ["browser.enabled", "hooks.enabled"]}}}\n---\nGo.\n')
    skill = build_catalog(Workspace.open(ws_path)).get("browse")
    assert dict(skill.missing) == {"config": ["browser.enabled"]}


def test_base_dir_and_arguments_in_skill_view_and_slash_skill(ws):
    nano = skill_view(ws, "nano-banana-pro")
    folder = ws.root / "skills" / "nano-banana-pro"
    assert f"uv run {folder}/scripts/generate_image.py" in nano.body and "{baseDir}" not in nano.body
    deploy = user_skill_view(ws, "deploy", arguments="staging")
    assert deploy.body.strip() == "Deploy staging to production: run the tests, build, push."
    migrate = skill_view(ws, "migrate-component", arguments='"Search Bar" React Vue')
    assert migrate.body.strip() == ("Migrate the Search Bar component from React to Vue. Costs $2.00, not $3. "
                                    "Home stays $HOME.")  # $3: no fourth argument
    # without arguments the model sees the placeholders as written
    assert "$ARGUMENTS[0]" in skill_view(ws, "migrate-component").body


def test_substitution_rules():
    d = Path("/s/x")
    assert substitute("a $ARGUMENTS b", skill_dir=d, arguments="") == "a  b"
    assert substitute("$0|$1|$2", skill_dir=d, arguments="one two") == "one|two|$2"  # missing index stays
    assert substitute("$who", skill_dir=d, arguments="", names=["who"]) == ""  # missing name is empty
    assert substitute("$0", skill_dir=d, arguments="'$1 literal'") == "$1 literal"  # never re-expanded
    assert substitute("${CLAUDE_SKILL_DIR}/run.sh", skill_dir=d, arguments=None) == "/s/x/run.sh"


def test_slash_skill_fills_arguments_for_the_model(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "deployed"}])
    agent = agent_for(ws, script)
    agent.turn(agent.skill_message("deploy", "staging"))
    user = [m for m in recorded_calls(script)[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert "Deploy staging to production" in user
    assert agent.conversation()[0]["content"] == "/skill deploy staging"


def test_allowed_tools_hold_while_the_skill_is_active(ws, tmp_path):
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "exec", "arguments": {"command": "git status --short"}}]},
        {"tool_calls": [{"name": "exec", "arguments": {"command": "rm -rf src"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "SOUL.md"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.md", "content": "x"}}]},
        {"text": "committed"},
        # next turn: no skill active, nothing limited
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "y.md", "content": "y"}}]},
        {"text": "written"},
    ])
    (ws.root / "src").mkdir()
    agent = agent_for(ws, script)
    result = agent.turn(agent.skill_message("commit", ""))
    status, rm, read, write = result.tool_calls
    assert not status.blocked and read.ok
    assert rm.blocked and (ws.root / "src").is_dir()
    assert rm.result == ("blocked: exec is not in the allowed-tools of the active skill 'commit' "
                         "(Bash(git add *) Bash(git commit *) Bash(git status *) Read)")
    assert write.blocked and not (ws.root / "x.md").exists()
    later = agent.turn("write y")
    assert later.tool_calls[0].ok and (ws.root / "y.md").read_text() == "y"


def test_skill_view_by_the_model_activates_allowed_tools(ws_path, tmp_path):
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    (ws_path / "skills" / "reader").mkdir(parents=True)
    (ws_path / "skills" / "reader" / "SKILL.md").write_text(
        "---\nname: reader\ndescription: Read only.\nallowed-tools: [Read, mcp__kit__memory_search]\n---\nRead.\n")
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "before.md", "content": "x"}}]},
        {"tool_calls": [{"name": "skill_view", "arguments": {"name": "reader"}}]},
        {"tool_calls": [{"name": "memory_search", "arguments": {"query": "x"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "after.md", "content": "x"}}]},
        {"text": "ok"},
    ])
    ws = Workspace.open(ws_path)
    result = agent_for(ws, script).turn("go")
    before, view, search, after = result.tool_calls
    assert before.ok and view.ok and not search.blocked
    assert after.blocked and "allowed-tools of the active skill 'reader' (Read mcp__kit__memory_search)" in after.result
