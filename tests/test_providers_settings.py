"""Generation settings (max_tokens, temperature, top_p, stop): per agent, per provider and per
model in kit.yaml, per run; what reaches the server; a reply the cap cut, marked and handled."""

from __future__ import annotations

import json
import textwrap

import pytest

from helpers_agent import agent_for, recorded_calls, set_config, write_script
from helpers_openai_server import FakeLLMServer, text_reply
from kit.config import load_config
from kit.errors import ConfigError
from kit.providers.base import GenerationSettings
from kit.providers.failover import FailoverClient
from kit.providers.registry import generation_for, settings_for
from kit.workspace import Workspace

HI = [{"role": "user", "content": "hi"}]
QUIET = "memory:\n  active_recall: {enabled: false}\n"


def cfg(text: str):
    return load_config("/nonexistent-ws", workspace_text=textwrap.dedent(text), environ={})


def test_defaults_cap_hosted_and_local_models_differently():
    config = cfg("providers:\n  lab: {type: openai, base_url: 'http://10.0.0.5:8000/v1'}\n"
                 "  box: {type: openai, base_url: 'http://127.0.0.1:8080/v1'}\n")
    assert generation_for("openai/gpt-4o-mini", config) == GenerationSettings(max_tokens=4096)
    assert generation_for("anthropic/claude-x", config).max_tokens == 4096
    assert generation_for("lab/qwen", config).max_tokens == 4096  # another machine
    assert generation_for("ollama/llama3.2", config).max_tokens == 1024  # this machine
    assert generation_for("box/smollm2", config).max_tokens == 1024  # a loopback base_url
    assert settings_for("box", config).local and not settings_for("lab", config).local


def test_the_most_specific_setting_wins():
    config = cfg("""\
        agent:
          max_tokens: 2000
          temperature: 0.7
          top_p: 0.9
          stop: ["###"]
        providers:
          lab:
            type: openai
            base_url: http://10.0.0.5:8000/v1
            temperature: 0.3
            max_tokens: 1500
            models:
              qwen2.5-7b: {max_tokens: 800, stop: ["</s>"]}
        """)
    assert generation_for("openai/gpt-4o", config) == GenerationSettings(2000, 0.7, 0.9, ("###",))
    assert generation_for("lab/llama", config) == GenerationSettings(1500, 0.3, 0.9, ("###",))
    # a model name with dots is one key; its settings win over the provider's
    assert generation_for("lab/qwen2.5-7b", config) == GenerationSettings(800, 0.3, 0.9, ("</s>",))
    # the run's flags win over everything
    run = GenerationSettings(max_tokens=8, temperature=0.0)
    assert generation_for("lab/qwen2.5-7b", config, run) == GenerationSettings(8, 0.0, 0.9, ("</s>",))


def test_model_settings_merge_across_layers(tmp_path):
    user = tmp_path / "user.yaml"
    user.write_text("providers:\n  lab:\n    type: openai\n    models:\n      a: {max_tokens: 100, temperature: 0.1}\n"
                    "      b: {max_tokens: 200}\n")
    config = load_config("/nonexistent", user_file=user, environ={},
                         workspace_text="providers:\n  lab:\n    models:\n      a: {max_tokens: 150}\n")
    assert config.get("providers.lab.models") == {"a": {"max_tokens": 150, "temperature": 0.1},
                                                  "b": {"max_tokens": 200}}


@pytest.mark.parametrize("text,message,line", [
    ("agent:\n  max_tokens: 0\n", "'agent.max_tokens' must be at least 1, not 0", 2),
    ("agent:\n  temperature: 2.5\n", "'agent.temperature' must be at most 2, not 2.5", 2),
    ("providers:\n  lab:\n    type: openai\n    top_p: 1.5\n", "'providers.lab.top_p' must be at most 1, not 1.5", 4),
    ("providers:\n  lab:\n    type: openai\n    models:\n      m: {max_tokenz: 5}\n",
     "unknown key 'providers.lab.models.m.max_tokenz' (did you mean 'max_tokens'?)", 4),
    ("providers:\n  lab:\n    type: openai\n    models:\n      m: 5\n",
     "'providers.lab.models.m' must be a mapping of max_tokens, temperature, top_p, stop", 4),
    ("agent:\n  retry: {max_attempts: 0}\n", "'agent.retry.max_attempts' must be at least 1, not 0", 2),
])
def test_bad_settings_name_the_key_and_line(text, message, line):
    with pytest.raises(ConfigError) as info:
        load_config("/nonexistent", workspace_text=text, environ={})
    assert (info.value.message, info.value.path, info.value.line) == (message, "kit.yaml", line)


def test_settings_reach_the_server(ws_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    with FakeLLMServer() as server:
        (ws_path / "kit.yaml").write_text(textwrap.dedent(f"""\
            agent: {{model: box/smollm2, temperature: 0.2, stop: ["<|im_end|>"]}}
            providers:
              box: {{type: openai, base_url: "{server.url}", top_p: 0.8}}
            """))
        ws = Workspace.open(ws_path)
        server.push(text_reply("one"), text_reply("two"))
        FailoverClient(ws).complete(HI)
        FailoverClient(ws, generation=GenerationSettings(max_tokens=16)).complete(HI)
        bodies = [r["body"] for r in server.requests]
    pick = ("max_tokens", "temperature", "top_p", "stop")
    assert [{k: b.get(k) for k in pick} for b in bodies] == [
        {"max_tokens": 1024, "temperature": 0.2, "top_p": 0.8, "stop": ["<|im_end|>"]},
        {"max_tokens": 16, "temperature": 0.2, "top_p": 0.8, "stop": ["<|im_end|>"]},
    ]


# ---------------------------------------------------------------------------- cut by the cap


@pytest.fixture
def ws(ws_path):
    set_config(ws_path, QUIET)
    return Workspace.open(ws_path)


def test_a_cut_text_reply_is_marked(ws, tmp_path):
    from kit.agent.loop import cut_marker

    script = write_script(tmp_path, [{"text": "Once upon a time there", "finish_reason": "length"}])
    result = agent_for(ws, script).turn("tell me a story")
    assert (result.reply, result.finish_reason, result.stopped) == ("Once upon a time there", "length", None)
    assert result.to_json()["finish_reason"] == "length"
    assert cut_marker(result) == ("[reply cut: it reached the max_tokens cap (4096 tokens); raise "
                                  "agent.max_tokens or pass --max-tokens]")


def test_a_cut_tool_call_is_not_run_and_the_model_is_told(ws, tmp_path):
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "write_file", "arguments_raw": '{"path": "notes.md", "content": "a lo'}],
         "finish_reason": "length"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "short"}}]},
        {"text": "Saved."},
    ])
    agent = agent_for(ws, script)
    result = agent.turn("write my notes")
    assert result.reply == "Saved." and result.stopped is None
    assert [t.name for t in result.tool_calls] == ["write_file"]  # only the complete call ran
    assert (ws.root / "notes.md").read_text() == "short"
    calls = recorded_calls(script)
    told = calls[1]["messages"][-1]
    assert told["role"] == "user" and told["content"].startswith("[kit note] Your reply reached the max_tokens "
                                                                 "cap (4096) while you were writing the tool call(s) write_file")
    # the user's conversation (what hooks and the session archive see) has no Kit note in it
    assert [m["content"] for m in agent.conversation() if m["role"] == "user"] == ["write my notes"]


def test_a_tool_call_cut_twice_stops_the_turn(ws, tmp_path):
    cut = {"tool_calls": [{"name": "write_file", "arguments_raw": '{"path": "x'}], "finish_reason": "length"}
    script = write_script(tmp_path, [cut, cut])
    result = agent_for(ws, script).turn("write it")
    assert result.stopped == "cut_tool_call" and result.tool_calls == ()
    assert result.reply.startswith("Stopped: the max_tokens cap (4096) cut the model's tool call (write_file) twice.")


def test_complete_calls_before_the_cap_run_and_the_model_hears_the_rest_was_lost(ws, tmp_path):
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "SOUL.md"}}], "finish_reason": "length"},
        {"text": "Done."},
    ])
    agent = agent_for(ws, script)
    agent.turn("read my soul")
    last = recorded_calls(script)[1]["messages"][-1]
    assert last["role"] == "tool" and last["content"].endswith(
        "[kit note] Your reply reached the max_tokens cap (4096) after this call: anything you meant to "
        "write after it was lost.")


def test_kit_run_max_tokens_flag_reaches_the_request_and_marks_the_cut(ws_path, tmp_path, cli):
    set_config(ws_path, QUIET)
    script = write_script(tmp_path, [{"text": "Once upon", "finish_reason": "length"}])
    result = cli("run", "a story", "-w", ws_path, "--model", f"script:{script}", "--max-tokens", "8",
                 "--temperature", "0.5")
    assert result.exit_code == 0, result.output
    assert "[reply cut: it reached the max_tokens cap (8 tokens)" in result.stdout
    assert recorded_calls(script)[0]["generation"] == {"max_tokens": 8, "temperature": 0.5, "top_p": None,
                                                       "stop": []}
    result = cli("run", "--json", "a story", "-w", ws_path, "--model", f"script:{script}", "--max-tokens", "0")
    assert result.exit_code == 2 and "--max-tokens" in result.stderr


def test_kit_run_json_says_length(ws_path, tmp_path, cli):
    set_config(ws_path, QUIET)
    script = write_script(tmp_path, [{"text": "Once upon", "finish_reason": "length"}])
    result = cli("run", "--json", "a story", "-w", ws_path, "--model", f"script:{script}")
    data = json.loads(result.stdout)
    assert (data["reply"], data["finish_reason"]) == ("Once upon", "length")
