"""Every text Kit sends to a model is a template under kit/templates/, rendered in one environment,
overridable from the workspace's templates/; a broken override falls back and says where it broke."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jinja2.sandbox import SandboxedEnvironment

import kit
from helpers_agent import agent_for, recorded_calls, set_config, write_script
from kit.agent import compaction as cp
from kit.templating import SPECS, environment, templates_for
from kit.tools import builtin_registry
from kit.workspace import Workspace

ENGINE = Path(kit.__file__).parent
QUIET = "memory:\n  active_recall: {enabled: false}\n"


def test_one_folder_one_environment():
    builtin = {p.name for p in (ENGINE / "templates").glob("*.j2")}
    assert builtin == set(SPECS)
    env = environment()
    assert env.undefined.__name__ == "StrictUndefined" and env.trim_blocks and env.lstrip_blocks
    assert isinstance(env, SandboxedEnvironment)  # bounded too (kit.jinja_bounds builds the sandbox)
    sources = {p.relative_to(ENGINE).as_posix(): p.read_text(encoding="utf-8") for p in ENGINE.rglob("*.py")}
    makers = sorted(rel for rel, text in sources.items()
                    if re.search(r"\bEnvironment\(|from_string\(|from_code\(", text))
    assert makers == ["jinja_bounds.py", "templating.py"]
    assert sorted(rel for rel, text in sources.items() if "jinja_bounds.environment(" in text) == ["templating.py"]


def test_the_built_in_texts_are_what_kit_sent_before(workspace):
    """The texts moved out of the code byte for byte (a template file ends with a newline; a piece
    of a message does not)."""
    t = templates_for(workspace)

    def text(template, /, **context):
        rendered = t.render(template, **context)
        assert rendered.source == "builtin" and rendered.problem is None
        return rendered.text

    # the notes: Kit adds the "[kit note] " marker (it recognises its own notes by it)
    assert text("repeat-note.md.j2", name="exec", count=3) == (
        "You have made this exact call (exec with the same arguments) 3 times in a row and the "
        "result will not change. Change approach: use different arguments, another tool, or answer with "
        "what you have.")
    assert text("cut-call-note.md.j2", cap=1024, names="write_file, exec") == (
        "Your reply reached the max_tokens cap (1024) while you were writing the tool call(s) write_file, "
        "exec; the arguments were incomplete, so nothing was run. Call again with shorter arguments (write "
        "a large file in parts), or answer without the tool.")
    assert text("cut-after-calls-note.md.j2", cap="the server's") == (
        "Your reply reached the max_tokens cap (the server's) after this call: anything you meant to write "
        "after it was lost.")
    assert text("heartbeat-request.md.j2") == "Heartbeat: go through HEARTBEAT.md now."
    assert text("memory-flush.md.j2", percent=71, window=8000, today="2026-05-07") == (
        "[kit: pre-compaction memory flush — silent, the user does not see this turn]\n"
        "The conversation is close to the context limit (71% of 8000 tokens); older turns\n"
        "will soon be summarised and their details lost. Write what matters to today's daily note\n"
        "(memory/2026-05-07.md) with `memory_write`, one fact per call: decisions, facts about the user,\n"
        "open tasks and questions, names, identifiers and file names. Do not repeat what is already in\n"
        "MEMORY.md. When done (or if nothing needs saving) reply with exactly NO_REPLY.")
    assert text("compaction-request.md.j2", count=4, cut=0, focus="", transcript="[user]\nhi\n") == (
        "Summarise this earlier part of the conversation (4 messages):\n\n[user]\nhi\n")
    assert text("compaction-request.md.j2", count=4, cut=99, focus="", transcript="x") == (
        "Summarise this earlier part of the conversation (4 messages, the oldest\n99 characters omitted):\n\nx")
    assert text("compaction-request.md.j2", count=4, cut=0, focus="the deploy", transcript="x") == (
        "Summarise this earlier part of the conversation (4 messages):\n\n"
        "The user asked the summary to focus on: the deploy\n\nx")
    assert text("compaction-system.md.j2").endswith("Do not invent anything.")
    hits = [{"path": "MEMORY.md", "start_line": 1, "end_line": 2, "snippet": "one", "day": ""},
            {"path": "memory/2026-05-01.md", "start_line": 5, "end_line": 5, "snippet": "two", "day": "2026-05-01"}]
    assert text("memory-context.md.j2", hits=hits) == "<memory-context>\n- one\n- two (2026-05-01)\n</memory-context>"
    assert text("kind-note.md.j2", kind="default") == ""
    assert text("kind-note.md.j2", kind="cron") == (
        "This is a scheduled run with no one watching: do the task, write down what matters with "
        "memory_write, and keep the reply short.")
    assert text("truncation-warning.md.j2", cuts=["SOUL.md: cut"]) == (
        "# Truncated workspace files\n\nThese files were cut to fit the prompt budget; read them in full "
        "with read_file when their contents matter:\n- SOUL.md: cut")
    for spec in SPECS.values():  # every built-in renders with the context doctor checks overrides with
        t.render(spec.name, **spec.sample)


def _override(ws, name, text):
    (ws.root / "templates").mkdir(exist_ok=True)
    (ws.root / "templates" / name).write_text(text, encoding="utf-8")
    ws.reload([f"templates/{name}"])


def test_overrides_change_what_the_model_receives(ws_path, tmp_path):
    ws = Workspace.open(ws_path)
    ws.memory.write("The deploy window is Friday at 16:00.")
    _override(ws, "memory-context.md.j2", "[RECALLED {{ hits | length }}]{% for h in hits %} {{ h.path }}"
                                         "{% endfor %}\n")
    _override(ws, "kind-note.md.j2", "Kind: {{ kind }}. Be terse.\n")
    _override(ws, "repeat-note.md.j2", "STOP REPEATING {{ name }} ({{ count }})\n")
    same = {"name": "read_file", "arguments": {"path": "SOUL.md"}}
    script = write_script(tmp_path, [{"tool_calls": [same]}, {"tool_calls": [same]}, {"tool_calls": [same]},
                                     {"text": "done"}])
    statuses = []
    result = agent_for(ws, script, kind="subagent", status=statuses.append).turn("when is the deploy window?")
    assert result.reply == "done" and statuses == []
    calls = recorded_calls(script)
    system, user = calls[0]["messages"][0]["content"], calls[0]["messages"][1]["content"]
    assert "\n\nKind: subagent. Be terse.\n\n## Tools" in system
    assert user.startswith("[RECALLED 1] memory/") and user.endswith("\n\nwhen is the deploy window?")
    third_result = calls[3]["messages"][-1]["content"]
    assert third_result.endswith("\n\n[kit note] STOP REPEATING read_file (3)")
    assert calls[2]["messages"][-1]["content"].count("STOP REPEATING") == 0  # the second call: no note yet


BIG = "".join(f"row {i:04d}: launch checklist item for release 7.3\n" for i in range(120))
TURN2 = "Now plan the rollout. " + "the rollout covers eu-west and us-east regions. " * 90


def test_compaction_texts_come_from_the_workspace(ws_path, tmp_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    set_config(ws_path, QUIET)
    (ws_path / "small.txt").write_text("release 7.3 owner: dana\n")
    ws = Workspace.open(ws_path)
    _override(ws, "memory-flush.md.j2", "FLUSH NOW ({{ percent }}% of {{ window }}), note memory/{{ today }}.md\n")
    _override(ws, "compaction-system.md.j2", "SUMMARISE TERSELY\n")
    _override(ws, "compaction-request.md.j2", "{{ count }} OLD MESSAGES:\n{{ transcript }}\n")
    base = cp.context_tokens([{"role": "system", "content": ws.prompt().prompt}]) + cp.tools_tokens(
        builtin_registry().schemas())
    window = int((base + cp.estimate_tokens(BIG) + cp.estimate_tokens(TURN2) + 100) / 0.85)
    set_config(ws_path, QUIET + f"agent:\n  context_window: {window}\n")
    ws.reload(["kit.yaml"])
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "small.txt"}}]},
        {"text": "I read it."},
        {"text": "NO_REPLY"},
        {"text": "- the checklist of release 7.3"},
        {"text": "eu-west first."},
    ])
    agent = agent_for(ws, script)
    agent.turn("Please read small.txt; here is the checklist.\n" + BIG)  # the bulk is the user's: a summary
    result = agent.turn(TURN2)
    assert result.reply == "eu-west first." and [c.mode for c in result.compactions] == ["summary"]
    calls = recorded_calls(script)
    flush = calls[2]["messages"][-1]["content"]
    assert re.fullmatch(rf"FLUSH NOW \(\d+% of {window}\), note memory/2026-05-07.md", flush)
    summary = calls[3]["messages"]
    assert summary[0] == {"role": "system", "content": "SUMMARISE TERSELY"}
    assert summary[1]["content"].startswith("4 OLD MESSAGES:\n[user]\nPlease read small.txt")


def test_a_broken_override_falls_back_and_says_where(ws_path, tmp_path):
    set_config(ws_path, QUIET)
    ws = Workspace.open(ws_path)
    _override(ws, "repeat-note.md.j2", "again: {{ name }}\n")
    same = {"name": "read_file", "arguments": {"path": "SOUL.md"}}
    turn = [{"tool_calls": [same]}] * 3 + [{"text": "ok"}]
    script = write_script(tmp_path, turn + turn)
    agent = agent_for(ws, script, status=(statuses := []).append)
    agent.turn("read it three times")
    calls = recorded_calls(script)
    assert calls[3]["messages"][-1]["content"].endswith("\n\n[kit note] again: read_file") and statuses == []
    # broken: a misspelt variable on line 2 — the last version that rendered stays in force
    _override(ws, "repeat-note.md.j2", "again:\n{{ nmae }}\n")
    agent.turn("and again")
    assert statuses[-1] == ("templates/repeat-note.md.j2:2: template error: 'nmae' is undefined; "
                            "using the last good template")
    assert recorded_calls(script)[-1]["messages"][-1]["content"].endswith("\n\n[kit note] again: read_file")
    # a fresh workspace has no last good version: the built-in text is used
    fresh = Workspace.open(ws_path)
    rendered = templates_for(fresh).render("repeat-note.md.j2", name="exec", count=3)
    assert rendered.source == "builtin" and rendered.text.startswith("You have made this exact call")
    assert str(rendered.problem) == "templates/repeat-note.md.j2:2: template error: 'nmae' is undefined"
    # doctor names every broken or unknown override with file and line
    _override(fresh, "memory-flush.md.j2", "{% if %}\n")
    _override(fresh, "memroy-flush.md.j2", "typo in the name\n")
    found = {p.path: p for p in fresh.doctor() if p.path and p.path.startswith("templates/")}
    assert str(found["templates/repeat-note.md.j2"]) == str(rendered.problem)
    assert (found["templates/memory-flush.md.j2"].line, found["templates/memory-flush.md.j2"].severity) == (1, "error")
    assert found["templates/memory-flush.md.j2"].message.startswith("template syntax error:")
    assert found["templates/memroy-flush.md.j2"].severity == "warning"
    assert "Kit uses no template named 'memroy-flush.md.j2'" in found["templates/memroy-flush.md.j2"].message


def test_a_broken_kind_note_is_a_prompt_warning(workspace):
    _override(workspace, "kind-note.md.j2", "{{ kind }} {{ undefined_thing }}\n")
    result = workspace.prompt("cron")
    assert "This is a scheduled run with no one watching" in result.prompt
    assert ("templates/kind-note.md.j2:1: template error: 'undefined_thing' is undefined; "
            "using the built-in template") in result.warnings


def test_the_llm_diary_instructions_are_a_template(workspace, monkeypatch, tmp_path):
    from test_dream_cli import seed

    script = tmp_path / "diary.yaml"
    script.write_text("record: seen.jsonl\nturns:\n  - text: \"A quiet night.\"\n")
    workspace.write_text("kit.yaml", f"agent:\n  model: 'script:{script}'\ndreaming:\n  diary: llm\n")
    _override(workspace, "diary-llm-system.md.j2", "Retell it as a haiku.\n")
    monkeypatch.setenv("KIT_NOW", seed(workspace))
    result = workspace.dream()
    assert result.notes == ()
    seen = json.loads((tmp_path / "seen.jsonl").read_text().splitlines()[0])
    assert seen["messages"][0] == {"role": "system", "content": "Retell it as a haiku."}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_template_is_overridable(workspace, name):
    _override(workspace, name, "OVERRIDDEN\n")
    rendered = templates_for(workspace).render(name, **SPECS[name].sample)
    assert (rendered.source, rendered.problem) == (f"templates/{name}", None)
    assert rendered.text == ("OVERRIDDEN\n" if SPECS[name].document else "OVERRIDDEN")


@pytest.fixture
def compiles(monkeypatch):
    """The sources Jinja2 compiled to Python (every environment's `compile`, counted)."""
    import jinja2

    from helpers_spy import spy

    return spy(monkeypatch, jinja2.Environment, "compile", lambda env, source, *args, **kwargs: source)


def _jinja_cache() -> Path:
    import os

    return Path(os.environ["XDG_CACHE_HOME"]) / "kit" / "jinja"


def test_compiled_templates_are_kept_for_the_next_process(ws_path, compiles, kit_now):
    """A cold `kit prompt` compiled its templates to Python every time (most of its start-up);
    the compiled code is kept in $XDG_CACHE_HOME/kit/jinja, checked against the source."""
    kit_now("2026-05-07T09:00:00+00:00")  # the prompt has the time in it: two prompts a minute apart differ
    first = Workspace.open(ws_path).prompt("cron")
    assert len(compiles) == 2  # the system prompt and the kind note
    assert sorted(p.suffix for p in _jinja_cache().iterdir()) == [".cache", ".cache"]
    compiles.clear()
    again = Workspace.open(ws_path).prompt("cron")  # a new workspace object: nothing in memory
    assert compiles == [] and again.prompt == first.prompt
    # an override is compiled once, then comes from the cache too; an edit of it compiles again
    _override(fresh := Workspace.open(ws_path), "kind-note.md.j2", "Kind {{ kind }}.\n")
    assert "\n\nKind cron.\n\n" in fresh.prompt("cron").prompt and compiles == ["Kind {{ kind }}.\n"]
    assert "\n\nKind cron.\n\n" in Workspace.open(ws_path).prompt("cron").prompt and len(compiles) == 1
    _override(ws := Workspace.open(ws_path), "kind-note.md.j2", "Kind: {{ kind }}!\n")
    assert "\n\nKind: cron!\n\n" in ws.prompt("cron").prompt and compiles[1:] == ["Kind: {{ kind }}!\n"]


def test_a_cached_template_still_reports_its_error_line(ws_path, compiles):
    _override(Workspace.open(ws_path), "repeat-note.md.j2", "again:\n\n{{ nmae }}\n")
    for expected_compiles in (1, 1):  # compiled, then from the cache: the line survives the cache
        rendered = templates_for(Workspace.open(ws_path)).render("repeat-note.md.j2", name="exec", count=3)
        assert str(rendered.problem) == "templates/repeat-note.md.j2:3: template error: 'nmae' is undefined"
        assert sum(s.startswith("again:") for s in compiles) == expected_compiles


def test_a_torn_or_unusable_cache_is_compiled_afresh(ws_path, compiles, monkeypatch, tmp_path):
    monkeypatch.setenv("KIT_NOW", "2026-05-07T09:00:00+00:00")  # the prompts compared have the time in them
    expected = Workspace.open(ws_path).prompt("cron").prompt
    for entry in _jinja_cache().iterdir():  # a write cut short: the header and half a code object
        entry.write_bytes(entry.read_bytes()[:60])
    compiles.clear()
    assert Workspace.open(ws_path).prompt("cron").prompt == expected and len(compiles) == 2
    compiles.clear()
    assert Workspace.open(ws_path).prompt("cron").prompt == expected and compiles == []  # rewritten
    # no usable cache folder at all (XDG_CACHE_HOME is a file): compiled every time, never an error
    (blocked := tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert Workspace.open(ws_path).prompt("cron").prompt == expected and len(compiles) == 2


def test_the_cache_key_holds_every_compile_time_setting(ws_path, compiles, monkeypatch):
    """Code compiled under other settings (whitespace control, the sandbox's intercepted operators,
    another Jinja2) must never be reused: each is part of the signature in the cache's key."""
    import kit.templating
    from kit.templating import compile_signature

    def untrimmed():
        env = environment()
        env.trim_blocks = env.lstrip_blocks = False
        return env

    monkeypatch.setattr(kit.templating, "environment", untrimmed)
    loose = Workspace.open(ws_path).prompt().prompt
    monkeypatch.setattr(kit.templating, "environment", environment)
    compiles.clear()
    assert Workspace.open(ws_path).prompt().prompt != loose and len(compiles) == 2  # not the loose code

    env = environment()
    base = compile_signature(env)
    assert base == compile_signature(environment())
    for change in ({"trim_blocks": False}, {"lstrip_blocks": False}, {"keep_trailing_newline": False},
                   {"variable_start_string": "[["}, {"intercepted_binops": frozenset({"*"})}):
        other = environment()
        for key, value in change.items():
            setattr(other, key, value)
        assert compile_signature(other) != base, change
