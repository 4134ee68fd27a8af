"""The script provider: a clearly labelled test/offline provider that replays YAML turns."""

from __future__ import annotations

import json

import pytest

from helpers_agent import write_script
from kit.errors import ConfigError
from kit.providers.base import ProviderError
from kit.providers.registry import resolve
from kit.providers.script import LABEL, ScriptPositions, ScriptProvider


def test_replays_turns_in_order_and_records(tmp_path):
    path = write_script(tmp_path, [
        {"tool_calls": [{"name": "memory_search", "arguments": {"query": "deploy checklist"}}]},
        {"text": "The checklist is in your notes from Tuesday.", "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
    ])
    positions = ScriptPositions()  # a workspace owns one (kit.providers.script.positions_for)
    provider, model = resolve(f"script:{path}", None, positions=positions)
    assert isinstance(provider, ScriptProvider) and model == str(path)
    assert "test/offline provider" in LABEL
    tools = [{"type": "function", "function": {"name": "memory_search", "parameters": {}}}]
    first = provider.complete([{"role": "user", "content": "hi"}], tools, model=model)
    assert first.text is None and first.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_1_1", "memory_search", {"query": "deploy checklist"})]
    second = ScriptProvider(path, positions).complete([{"role": "user", "content": "hi"}], tools)  # shared
    assert positions.get(path) == 2
    assert ScriptProvider(path).complete([], tools).tool_calls, "positions of its own: starts at turn 1"
    assert second.text == "The checklist is in your notes from Tuesday."
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (9, 3)
    assert second.model == "script:script.yaml"
    with pytest.raises(ProviderError) as err:
        provider.complete([], tools)
    assert err.value.kind == "format"
    assert str(err.value) == (f"script {path} has only 2 turns but the run asked for turn 3; "
                              "add more turns to the script")
    recorded = [json.loads(line) for line in (tmp_path / "script.yaml.calls.jsonl").read_text().splitlines()]
    assert [r["turn"] for r in recorded] == [1, 2, 1]
    assert recorded[0]["tools"] == ["memory_search"]


def test_scripted_errors(tmp_path):
    path = write_script(tmp_path, [{"error": {"kind": "rate_limit", "message": "slow down"}}])
    with pytest.raises(ProviderError) as err:
        ScriptProvider(path).complete([], [])
    assert (err.value.kind, err.value.message, err.value.retryable) == ("rate_limit", "slow down", True)


@pytest.mark.parametrize(("text", "message", "line"), [
    # an unclosed bracket is reported where it opened, as for kit.yaml and frontmatter (kit.yamlsafe)
    ("turns: [\n  {text: ok\n", "invalid YAML", 2),
    ("steps: []\n", "needs a top-level `turns:` list", None),
    # regression (a new-user pass): an empty list ran, then failed "has only 0 turns" (exit 1, not a usage error)
    ("# a script\nturns: []\n", "`turns:` is empty; a script needs at least one turn", 2),
    ("turns:\n  - {say: hi}\n", "turn 1 has an unknown key 'say'", 2),  # the turn's line
    ("turns:\n  - {}\n", "turn 1 needs `text`, `tool_calls` or `error`", 2),
])
def test_bad_scripts_are_config_errors(tmp_path, text, message, line):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        ScriptProvider(path)
    assert message in err.value.message
    assert err.value.path == str(path)
    assert err.value.line == line


def test_missing_script_file(tmp_path):
    with pytest.raises(ConfigError) as err:
        ScriptProvider(tmp_path / "nope.yaml")
    assert "no such script file" in str(err.value)


def test_a_relative_script_path_is_the_workspaces_in_kit_yaml_and_the_library(tmp_path, monkeypatch):
    """kit.yaml's `model: script:turns.yaml` and `ws.agent(model="script:turns.yaml")` name the
    workspace's file whatever the current directory (it was the current directory's, so a run
    from anywhere else failed at its first turn)."""
    from helpers_agent import set_config
    from kit import ConfigError as PublicConfigError
    from kit import Workspace
    from kit.init import init_workspace

    root = tmp_path / "agent"
    init_workspace(root)
    set_config(root, "agent: {model: 'script:turns.yaml'}\nmemory:\n  active_recall: {enabled: false}\n")
    write_script(root, [{"text": "From kit.yaml."}, {"text": "From the library."}], name="turns.yaml", record=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    ws = Workspace.open(root)
    ws.check_model("script:turns.yaml")  # the workspace's file: no error
    for options, reply in (({}, "From kit.yaml."), ({"model": "script:turns.yaml"}, "From the library.")):
        agent = ws.agent(**options)
        try:
            assert agent.turn("hi").reply == reply
        finally:
            agent.close()
    for call in (lambda: ws.check_model("script:missing.yaml"), lambda: ws.agent(model="script:missing.yaml")):
        with pytest.raises(PublicConfigError) as caught:  # at once, naming the file looked for
            call()
        assert str(caught.value) == f"script provider: no such script file {root.resolve() / 'missing.yaml'}"


@pytest.mark.parametrize(("body", "line", "problem"), [
    ("turns: [{txt: hello}]", 1, "turn 1 has an unknown key 'txt' (did you mean 'text'?)"),
    ("turns:\n  - text: hi\n  - text: there\n    usgae: {prompt_tokens: 3}", 3,
     "turn 2 has an unknown key 'usgae' (did you mean 'usage'?)"),
    ("turns:\n  - tool_calls: [{name: memory_search, args: {query: x}}]", 2,
     "turn 1 tool call 1 has an unknown key 'args' (did you mean 'arguments'?)"),
    ("turns: [{text: hi, colour: blue}]", 1,
     "turn 1 has an unknown key 'colour' (known: text, tool_calls, error, usage, finish_reason, delay_s)"),
])
def test_a_mistyped_key_in_a_script_is_named(tmp_path, body, line, problem):
    """Regression (new user): `txt:` for `text:` said only 'needs `text`, `tool_calls` or `error`'."""
    path = tmp_path / "s.yaml"
    path.write_text(body + "\n")
    with pytest.raises(ConfigError) as caught:
        ScriptProvider(path)
    assert str(caught.value) == f"{path.resolve()}:{line}: script provider: {problem}"
