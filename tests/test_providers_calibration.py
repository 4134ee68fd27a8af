"""What Kit learns from a model's replies (state.db `model_stats`): the token factor that
calibrates its estimate against the server's prompt_tokens, and whether the server's chat
template renders the tools — with a one-time warning naming the fix when it drops them."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import run_kit
from helpers_openai_server import FakeLLMServer, llama_apply_template, text_reply, tool_reply
from kit.providers.calibration import ALPHA
from kit.providers.events import Notice
from kit.providers.failover import FailoverClient
from kit.tokens import messages_tokens, tools_tokens
from kit.workspace import Workspace

T0 = "2026-05-07T09:00:00+00:00"
TOOLS = [{"type": "function", "function": {
    "name": "memory_search", "description": "Search the notes " + "in detail " * 60,
    "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "words " * 40}}}}}]
MESSAGES = [{"role": "system", "content": "You are Kit. " * 40}, {"role": "user", "content": "hi"}]


@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def ws(ws_path, server, kit_now):
    kit_now(T0)
    (ws_path / "kit.yaml").write_text(textwrap.dedent(f"""\
        agent: {{model: box/smollm2}}
        providers:
          box: {{type: openai, base_url: "{server.url}"}}
        memory:
          active_recall: {{enabled: false}}
        """))
    return Workspace.open(ws_path)


def test_the_estimate_learns_the_servers_count_and_keeps_it(ws, server):
    raw = messages_tokens(MESSAGES) + tools_tokens(TOOLS)
    server.extra_post = llama_apply_template(renders_tools=True)
    server.push(text_reply("a", prompt_tokens=500), text_reply("b", prompt_tokens=560))
    client = FailoverClient(ws)
    assert client.estimate_tokens(MESSAGES, TOOLS) == raw  # nothing learned yet

    first = client.complete(MESSAGES, TOOLS)
    assert first.estimated_prompt_tokens == raw  # what Kit thought before sending
    stats = client.stats.get("box/smollm2")
    assert (stats.samples, stats.token_factor) == (1, pytest.approx(500 / raw))
    assert client.estimate_tokens(MESSAGES, TOOLS) == 500

    # a new client (a new process) starts from what state.db kept; a second sample moves the factor
    again = FailoverClient(ws)
    second = again.complete(MESSAGES, TOOLS)
    assert second.estimated_prompt_tokens == 500
    factor = (1 - ALPHA) * (500 / raw) + ALPHA * (560 / raw)
    assert again.stats.get("box/smollm2").token_factor == pytest.approx(factor)


def test_kit_run_json_reports_the_estimate_and_its_error(ws_path, ws, server):
    server.extra_post = llama_apply_template(renders_tools=True)
    server.push(text_reply("hello", prompt_tokens=900), text_reply("hello again", prompt_tokens=900))
    env = {"KIT_NOW": T0}
    first = json.loads(run_kit("run", "--json", "hi", cwd=ws_path, env=env).stdout)["usage"]
    second = json.loads(run_kit("run", "--json", "hi", cwd=ws_path, env=env).stdout)["usage"]
    assert first["prompt_tokens"] == second["prompt_tokens"] == 900
    assert first["estimate_error"] == round((first["estimated_prompt_tokens"] - 900) / 900, 3)
    assert abs(first["estimate_error"]) > 0.3  # the raw rule is far from this server's count
    assert abs(second["estimate_error"]) < 0.01  # calibrated by the first run (same prompt)
    assert abs(second["context_tokens"] - 900) < 0.05 * 900


def test_dropped_tools_warn_once_naming_the_fix(ws, server):
    server.extra_post = llama_apply_template(renders_tools=False)  # llama.cpp with SmolLM2's own template
    server.push(text_reply("It is sunny.", prompt_tokens=300), text_reply("Still sunny.", prompt_tokens=300))
    events = list(FailoverClient(ws).stream(MESSAGES, TOOLS))
    [notice] = [e for e in events if isinstance(e, Notice)]
    assert notice.code == "tools_dropped" and notice.target == "box/smollm2"
    assert notice.line == (
        "warning: box/smollm2: the server's chat template dropped the tool list (the model answered as if "
        "no tools were sent), so it cannot use Kit's tools. To fix: serve it with a chat template that "
        "renders tools (llama.cpp: start the server with `--jinja`, and `--chat-template-file` with a tools "
        "template if the model's own has none), or use a model whose template supports tools")
    stats = FailoverClient(ws).stats.get("box/smollm2")
    assert (stats.tools_rendered, stats.tools_warned) == (False, True)
    # the tools are out of the estimate for this model: its factor describes the messages alone
    assert stats.token_factor == pytest.approx(300 / messages_tokens(MESSAGES))
    # one time: the next process does not warn again
    assert not any(isinstance(e, Notice) for e in FailoverClient(ws).stream(MESSAGES, TOOLS))


def test_a_template_that_renders_tools_gives_no_warning(ws, server):
    server.extra_post = llama_apply_template(renders_tools=True)
    server.push(text_reply("Sure.", prompt_tokens=800))
    events = list(FailoverClient(ws).stream(MESSAGES, TOOLS))
    assert not any(isinstance(e, Notice) for e in events)
    assert FailoverClient(ws).stats.get("box/smollm2").tools_rendered is True


def test_without_apply_template_the_usage_tells(ws, server):
    """A server without llama.cpp's /apply-template: its prompt_tokens against Kit's estimate
    with and without the tools (the tools are most of this request)."""
    messages, tools = messages_tokens(MESSAGES), tools_tokens(TOOLS)
    assert tools >= 0.5 * messages
    server.push(text_reply("no tools here", prompt_tokens=messages))
    assert any(isinstance(e, Notice) for e in FailoverClient(ws).stream(MESSAGES, TOOLS))
    server.push(text_reply("tools counted", prompt_tokens=messages + tools))
    ws.open_state().execute("DELETE FROM model_stats")
    assert not any(isinstance(e, Notice) for e in FailoverClient(ws).stream(MESSAGES, TOOLS))
    assert FailoverClient(ws).stats.get("box/smollm2").tools_rendered is True


def test_a_tool_call_is_proof_enough(ws, server):
    probes = []

    def apply_template(path, body):
        probes.append(path)
        return None

    server.extra_post = apply_template
    server.push(tool_reply("memory_search", {"query": "x"}), text_reply("found it"), text_reply("again"))
    client = FailoverClient(ws)
    client.complete(MESSAGES, TOOLS)
    client.complete(MESSAGES, TOOLS)
    assert probes == ["/apply-template"]  # asked once, before the first request: no answer there
    assert client.stats.get("box/smollm2").tools_rendered is True  # the tool call proved it
    FailoverClient(ws).complete(MESSAGES, TOOLS)
    assert probes == ["/apply-template"]  # a new process need not ask again


def test_the_warning_comes_before_the_reply_text(ws, server):
    """The template is asked before the request, so the Notice precedes the model call and every
    text delta (it used to come at the end of the reply, after its text had been shown)."""
    server.extra_post = llama_apply_template(renders_tools=False)
    server.push(text_reply("It is sunny today.", prompt_tokens=300))
    kinds = [e.type for e in FailoverClient(ws).stream(MESSAGES, TOOLS)]
    assert kinds[:2] == ["notice", "model_call"] and kinds.count("notice") == 1
    assert kinds.index("notice") < kinds.index("text_delta")


def test_without_apply_template_the_warning_follows_the_text(ws, server):
    """Only the reply's usage can tell: the Notice comes after its text, before the Reply."""
    server.push(text_reply("no tools here", prompt_tokens=messages_tokens(MESSAGES)))
    kinds = [e.type for e in FailoverClient(ws).stream(MESSAGES, TOOLS)]
    last_text = len(kinds) - 1 - kinds[::-1].index("text_delta")
    assert kinds.index("notice") > last_text and kinds[-1] == "reply"


def test_kit_run_prints_the_warning_on_stderr_once(ws_path, ws, server):
    server.extra_post = llama_apply_template(renders_tools=False)
    server.push(text_reply("hello", prompt_tokens=700), text_reply("hello", prompt_tokens=700))
    env = {"KIT_NOW": T0}
    first = run_kit("run", "hi", cwd=ws_path, env=env)
    second = run_kit("run", "hi", cwd=ws_path, env=env)
    assert first.returncode == second.returncode == 0
    assert "kit: warning: box/smollm2: the server's chat template dropped the tool list" in first.stderr
    assert "chat template" not in second.stderr


def test_stream_json_has_the_warning_before_the_first_text(ws_path, ws, server):
    server.extra_post = llama_apply_template(renders_tools=False)
    server.push(text_reply("It is sunny today, as far as I know.", prompt_tokens=700))
    done = run_kit("run", "--stream-json", "weather?", cwd=ws_path, env={"KIT_NOW": T0})
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [(e["type"], e.get("kind")) for e in events]
    first_text = kinds.index(("text_delta", None))
    assert kinds.index(("status", "notice")) < first_text and kinds.count(("status", "notice")) == 1
    [notice] = [e for e in events if e.get("kind") == "notice"]
    assert notice["code"] == "tools_dropped" and notice["target"] == "box/smollm2"
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "It is sunny today, as far as I know."


# ---------------------------------------------------------------------------- kit doctor


def test_doctor_asks_each_base_url_and_the_template(ws_path, server, cli, kit_now):
    import socket

    kit_now(T0)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound, not listening
    dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    try:
        (ws_path / "kit.yaml").write_text(textwrap.dedent(f"""\
            agent: {{model: box/smollm2, fallbacks: [dead/x, ollama/llama3.2]}}
            providers:
              box: {{type: openai, base_url: "{server.url}"}}
              dead: {{type: openai, base_url: "{dead}"}}
              ollama: {{base_url: "{dead}"}}
            """))
        server.extra_post = llama_apply_template(renders_tools=False)
        data = json.loads(cli("doctor", "--json", "-w", ws_path).stdout)
        agent = [(f["severity"], f["message"]) for f in data["findings"] if f["area"] == "agent"]
        assert agent == [
            ("warning", "model box/smollm2: box/smollm2: the server's chat template dropped the tool list (the model "
                        "answered as if no tools were sent), so it cannot use Kit's tools. To fix: serve it with a "
                        "chat template that renders tools (llama.cpp: start the server with `--jinja`, and "
                        "`--chat-template-file` with a tools template if the model's own has none), or use a model "
                        "whose template supports tools"),
            ("warning", f"model dead/x: {dead} does not answer (connection refused); check "
                        f"providers.dead.base_url ({dead}) is reachable"),
            ("warning", f"model ollama/llama3.2: {dead} does not answer (connection refused); start Ollama at "
                        f"{dead.removesuffix('/v1')}"),
        ]
        assert server.requests == []  # GET /models and /apply-template only: no completion asked
        # --offline asks nothing (and nothing is known yet about these servers)
        server.extra_post = lambda path, body: pytest.fail("--offline asked a server")
        offline = json.loads(cli("doctor", "--json", "--offline", "-w", ws_path).stdout)
        assert [f for f in offline["findings"] if f["area"] == "agent"] == []
    finally:
        sock.close()


def test_doctor_offline_reports_what_replies_taught(ws_path, ws, server, cli):
    server.extra_post = llama_apply_template(renders_tools=False)
    server.push(text_reply("hi", prompt_tokens=300))
    FailoverClient(ws).complete(MESSAGES, TOOLS)
    offline = json.loads(cli("doctor", "--json", "--offline", "-w", ws_path).stdout)
    [finding] = [f for f in offline["findings"] if f["area"] == "agent"]
    assert finding["severity"] == "warning" and "dropped the tool list" in finding["message"]
