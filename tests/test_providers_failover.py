"""Providers and failover against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers_openai_server import FakeLLMServer, error_reply, text_reply, tool_reply
from kit.providers.base import NoModelAvailable, ProviderError
from kit.providers.failover import COOLDOWN_STEPS, FailoverClient, cooldown_seconds
from kit.workspace import Workspace

T0 = "2026-05-07T09:00:00+00:00"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a workspace file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}]


@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


def configure(ws_path: Path, server: FakeLLMServer, model: str, fallbacks: list[str] = (), extra: str = "",
              attempts: int = 1) -> Workspace:
    """The failover tests ask each model once (`attempts=1`): what happens between models is
    under test here; retries of one model are in test_providers_retry.py."""
    (ws_path / "kit.yaml").write_text(
        textwrap.dedent(f"""\
            agent:
              model: {model}
              fallbacks: {json.dumps(list(fallbacks))}
              retry: {{max_attempts: {attempts}, backoff_s: 0}}
            providers:
              local:
                type: openai
                base_url: "{server.url}"
                api_key_env: KIT_TEST_KEY
              backup:
                type: openai
                base_url: "{server.url}"
                api_key_env: KIT_TEST_KEY
            """) + extra
    )
    return Workspace.open(ws_path)


@pytest.fixture
def keyed(monkeypatch, kit_now):
    monkeypatch.setenv("KIT_TEST_KEY", "sk-test-123")
    kit_now(T0)


def test_full_tool_using_exchange(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-main")
    server.push(tool_reply("read_file", {"path": "SOUL.md"}))
    server.push(text_reply("Your soul file says to be kind."))
    client = FailoverClient(ws)
    messages = [{"role": "system", "content": "You are Kit."}, {"role": "user", "content": "What does SOUL.md say?"}]

    first = client.complete(messages, TOOLS)
    assert first.text is None
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("read_file", {"path": "SOUL.md"})]
    assert first.finish_reason == "tool_calls"
    assert first.model == "local/gpt-main"
    assert first.usage.prompt_tokens == 11 and first.usage.completion_tokens == 7

    call = first.tool_calls[0]
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "Be kind."},
    ]
    second = client.complete(messages, TOOLS)
    assert second.text == "Your soul file says to be kind."
    assert second.tool_calls == ()

    # what went over the wire: the model name, the tool schema, the tool result, the key
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2
    body = server.requests[1]["body"]
    assert body["model"] == "gpt-main"
    assert body["tools"][0]["function"]["name"] == "read_file"
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": call.id, "content": "Be kind."}
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test-123"
    assert client.cooldowns.all() == []


def test_rate_limit_records_cooldown_and_uses_fallback(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    server.push(error_reply(429, "Rate limit reached"), model="gpt-a")
    server.push(text_reply("from the fallback"), model="gpt-b")
    client = FailoverClient(ws)

    response = client.complete([{"role": "user", "content": "hi"}])
    assert response.text == "from the fallback"
    assert response.model == "backup/gpt-b"
    assert [(a.target, a.outcome) for a in client.last_attempts] == [("local/gpt-a", "rate_limit"), ("backup/gpt-b", "ok")]
    [cool] = client.cooldowns.all()
    assert (cool.target, cool.kind, cool.failures) == ("local/gpt-a", "rate_limit", 1)
    assert cool.remaining() == pytest.approx(30.0)
    assert len(server.requests_for("gpt-a")) == 1  # the SDK's own retries are off (Kit's: attempts=1)

    # while cooling down the primary is skipped: no request reaches it
    server.push(text_reply("fallback again"), model="gpt-b")
    assert client.complete([{"role": "user", "content": "again"}]).text == "fallback again"
    assert len(server.requests_for("gpt-a")) == 1
    assert client.last_attempts[0].outcome == "cooldown"


def test_cooldown_escalates_and_success_clears_it(ws_path, server, keyed, kit_now):
    assert [cooldown_seconds(n) for n in (1, 2, 3, 4)] == [30.0, 60.0, 300.0, 300.0]
    assert COOLDOWN_STEPS == (30.0, 60.0, 300.0)
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    client = FailoverClient(ws)
    for minute, expected in ((0, 30.0), (1, 60.0), (3, 300.0)):
        kit_now(f"2026-05-07T09:{minute:02d}:00+00:00")  # each after the previous cooldown ran out
        server.push(error_reply(503, "overloaded"), model="gpt-a")
        server.push(text_reply("ok"), model="gpt-b")
        client.complete([{"role": "user", "content": "hi"}])
        assert client.cooldowns.get("local/gpt-a").remaining() == pytest.approx(expected)
        assert client.cooldowns.get("local/gpt-a").kind == "overloaded"
    kit_now("2026-05-07T09:09:00+00:00")
    server.push(text_reply("primary is back"), model="gpt-a")
    assert client.complete([{"role": "user", "content": "hi"}]).text == "primary is back"
    assert client.cooldowns.get("local/gpt-a") is None


def test_auth_error_is_not_retried_and_gets_no_cooldown(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a")
    server.push(error_reply(401, "Incorrect API key provided", code="invalid_api_key"), model="gpt-a")
    client = FailoverClient(ws)
    with pytest.raises(NoModelAvailable) as info:
        client.complete([{"role": "user", "content": "hi"}])
    assert len(server.requests_for("gpt-a")) == 1
    assert [(a.target, a.outcome) for a in client.last_attempts] == [("local/gpt-a", "auth")]
    assert client.cooldowns.all() == []
    message = str(info.value)
    assert "Incorrect API key provided" in message
    # api_key_env holds the variable's name: the advice must not steer the key into kit.yaml
    assert message == ("no model available (local/gpt-a auth: local: HTTP 401: Incorrect API key provided). "
                       "To fix: set the environment variable KIT_TEST_KEY (providers.local.api_key_env) to a valid "
                       "key; or set agent.model / agent.fallbacks to a model you can reach (e.g. ollama/llama3.2 "
                       "with Ollama running).")


def test_auth_error_moves_on_to_fallback(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    server.push(error_reply(401, "bad key"), model="gpt-a")
    server.push(text_reply("backup answered"), model="gpt-b")
    client = FailoverClient(ws)
    assert client.complete([{"role": "user", "content": "hi"}]).text == "backup answered"
    assert client.cooldowns.all() == []


def test_context_overflow_is_raised_to_the_caller(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    server.push(error_reply(400, "This model's maximum context length is 8192 tokens", code="context_length_exceeded"),
                model="gpt-a")
    client = FailoverClient(ws)
    with pytest.raises(ProviderError) as info:
        client.complete([{"role": "user", "content": "hi"}])
    assert info.value.kind == "context_overflow"
    assert server.requests_for("gpt-b") == []  # another model would overflow too: not tried


def test_cooldown_survives_a_new_process(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    server.push(error_reply(429, "slow down"), model="gpt-a")
    server.push(text_reply("fallback"), model="gpt-b")
    FailoverClient(ws).complete([{"role": "user", "content": "hi"}])
    server.push(text_reply("fallback in the new process"), model="gpt-b")

    script = textwrap.dedent(f"""\
        import json
        from kit.providers.failover import FailoverClient
        from kit.workspace import Workspace
        client = FailoverClient(Workspace.open({str(ws_path)!r}))
        response = client.complete([{{"role": "user", "content": "hi"}}])
        print(json.dumps({{"text": response.text, "attempts": [[a.target, a.outcome] for a in client.last_attempts]}}))
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["text"] == "fallback in the new process"
    assert result["attempts"] == [["local/gpt-a", "cooldown"], ["backup/gpt-b", "ok"]]
    assert len(server.requests_for("gpt-a")) == 1


def test_cooldown_expires_with_the_clock(ws_path, server, keyed, kit_now):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    server.push(error_reply(429, "slow down"), model="gpt-a")
    server.push(text_reply("fallback"), model="gpt-b")
    FailoverClient(ws).complete([{"role": "user", "content": "hi"}])
    kit_now("2026-05-07T09:00:31+00:00")
    server.push(text_reply("primary"), model="gpt-a")
    assert FailoverClient(ws).complete([{"role": "user", "content": "hi"}]).text == "primary"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_reachable_says_what_to_set(ws_path, monkeypatch, kit_now):
    kit_now(T0)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    port = free_port()  # nothing listens here
    (ws_path / "kit.yaml").write_text(
        f"agent: {{model: ollama/llama3.2, fallbacks: [openai/gpt-4o-mini]}}\n"
        f"providers:\n  ollama: {{base_url: 'http://127.0.0.1:{port}/v1'}}\n"
    )
    ws = Workspace.open(ws_path)
    client = FailoverClient(ws)
    with pytest.raises(NoModelAvailable) as info:
        client.complete([{"role": "user", "content": "hi"}])
    message = str(info.value)
    assert message.count("\n") == 0
    assert f"start Ollama at http://127.0.0.1:{port}" in message
    assert "set the environment variable OPENAI_API_KEY (providers.openai.api_key_env) to a valid key" in message
    assert "agent.model" in message
    assert [(a.target, a.outcome) for a in client.last_attempts] == [
        ("ollama/llama3.2", "unreachable"), ("openai/gpt-4o-mini", "auth")]
    # unreachable is retryable: Ollama is on cooldown now; a missing key is not
    assert [c.target for c in client.cooldowns.all()] == ["ollama/llama3.2"]


def test_ollama_provider_speaks_openai_at_its_base_url(ws_path, server, kit_now):
    kit_now(T0)
    (ws_path / "kit.yaml").write_text(f"agent: {{model: ollama/llama3.2}}\nproviders:\n  ollama: {{base_url: '{server.url}'}}\n")
    server.push(text_reply("hello from llama"))
    response = FailoverClient(Workspace.open(ws_path)).complete([{"role": "user", "content": "hi"}])
    assert (response.text, response.model) == ("hello from llama", "ollama/llama3.2")
    assert server.requests[0]["body"]["model"] == "llama3.2"


def test_timeout_is_classified_and_cooled_down(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"],
                   extra="")
    (ws_path / "kit.yaml").write_text((ws_path / "kit.yaml").read_text().replace(
        "api_key_env: KIT_TEST_KEY\n  backup", "api_key_env: KIT_TEST_KEY\n    timeout_s: 1\n  backup", 1))
    ws = Workspace.open(ws_path)
    server.push(text_reply("too late", delay=3), model="gpt-a")
    server.push(text_reply("in time"), model="gpt-b")
    client = FailoverClient(ws)
    assert client.complete([{"role": "user", "content": "hi"}]).text == "in time"
    assert client.cooldowns.get("local/gpt-a").kind == "timeout"


def test_model_argument_overrides_config(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a")
    server.push(text_reply("chosen"), model="gpt-z")
    client = FailoverClient(ws, model="backup/gpt-z", fallbacks=[])
    assert client.candidates == ["backup/gpt-z"]
    assert client.complete([{"role": "user", "content": "x"}]).model == "backup/gpt-z"


def test_doctor_reports_missing_keys_and_active_cooldowns(ws_path, server, keyed, monkeypatch):
    from kit.doctor import run_checks

    ws = configure(ws_path, server, "local/gpt-a", ["openai/gpt-4o-mini"])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.push(error_reply(429, "Rate limit reached"), model="gpt-a")
    with pytest.raises(NoModelAvailable):
        FailoverClient(ws).complete([{"role": "user", "content": "hi"}])
    agent = [(f.severity, f.message) for f in run_checks(ws) if f.area == "agent"]
    assert ("warning", "model openai/gpt-4o-mini: OPENAI_API_KEY is not set") in agent
    assert ("info", "local/gpt-a is cooling down for 30s after rate_limit (1 consecutive): local: HTTP 429: "
            "Rate limit reached") in agent


def test_doctor_asks_a_base_url_with_a_password_as_httpx_does_and_never_shows_the_password(ws_path, server):
    """Regression (fuzz pass): urllib took `user:pw@host` for a host name, so doctor said "Name or
    service not known" of a server that answers; and every message repeated the password."""
    import base64

    from kit.doctor import run_checks

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    (ws_path / "kit.yaml").write_text(
        f"providers:\n  lab:\n    type: openai\n    base_url: http://ada:s3cret@127.0.0.1:{server.port}/v1\n"
        f"  gone:\n    type: openai\n    base_url: http://ada:s3cret@127.0.0.1:{dead}/v1\n"
        "agent:\n  model: lab/x\n  fallbacks: [gone/y]\n")
    agent = [(f.severity, f.message) for f in run_checks(Workspace.open(ws_path)) if f.area == "agent"]
    assert agent == [("warning", f"model gone/y: http://…@127.0.0.1:{dead}/v1 does not answer (connection refused); "
                                 f"check providers.gone.base_url (http://…@127.0.0.1:{dead}/v1) is reachable")]
    assert ("/v1/models", "Basic " + base64.b64encode(b"ada:s3cret").decode()) in server.gets


def test_config_reload_rebuilds_providers(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a")
    client = FailoverClient(ws)
    server.push(text_reply("one"))
    client.complete([{"role": "user", "content": "hi"}])
    with FakeLLMServer() as other:
        (ws_path / "kit.yaml").write_text((ws_path / "kit.yaml").read_text().replace(server.url, other.url))
        ws.reload(["kit.yaml"])
        other.push(text_reply("from the new base_url"))
        assert client.complete([{"role": "user", "content": "hi"}]).text == "from the new base_url"
    assert len(server.requests) == 1


def test_script_spec_goes_through_failover(ws_path, server, keyed, tmp_path):
    script = tmp_path / "turns.yaml"
    script.write_text("turns:\n  - error: {kind: rate_limit, message: simulated 429}\n  - text: scripted hello\n")
    ws = configure(ws_path, server, f"script:{script}", ["local/gpt-b"])
    server.push(text_reply("real fallback"), model="gpt-b")
    client = FailoverClient(ws)
    assert client.complete([{"role": "user", "content": "hi"}]).text == "real fallback"
    assert client.cooldowns.get(f"script:{script}").kind == "rate_limit"
    client.cooldowns.clear()
    response = client.complete([{"role": "user", "content": "hi"}])
    assert response.text == "scripted hello"


def test_retry_after_lengthens_the_cooldown(ws_path, server, keyed):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    server.push(error_reply(429, "slow down", headers={"Retry-After": "120"}), model="gpt-a")
    server.push(text_reply("fallback"), model="gpt-b")
    client = FailoverClient(ws)
    client.complete([{"role": "user", "content": "hi"}])
    assert client.cooldowns.get("local/gpt-a").remaining() == pytest.approx(120.0)


def test_escalation_starts_over_after_an_hour_of_quiet(ws_path, server, keyed, kit_now):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    client = FailoverClient(ws)
    for now in ("09:00:00", "09:01:00", "10:02:00"):
        kit_now(f"2026-05-07T{now}+00:00")
        server.push(error_reply(429, "slow"), model="gpt-a")
        server.push(text_reply("ok"), model="gpt-b")
        client.complete([{"role": "user", "content": "hi"}])
    cool = client.cooldowns.get("local/gpt-a")
    assert (cool.failures, cool.remaining()) == (1, pytest.approx(30.0))


def test_a_lone_model_on_cooldown_is_probed_not_refused(ws_path, server, keyed, kit_now):
    """With nothing else to try, a cooldown must not refuse a call without asking anyone (Ollama
    started a few seconds after a failed run answers the next one). A failed probe escalates."""
    ws = configure(ws_path, server, "local/gpt-a")
    client = FailoverClient(ws)
    server.push(error_reply(503, "overloaded"), model="gpt-a")
    with pytest.raises(NoModelAvailable):
        client.complete([{"role": "user", "content": "hi"}])
    assert client.cooldowns.get("local/gpt-a").failures == 1

    kit_now("2026-05-07T09:00:05+00:00")  # 25 s of cooldown left
    server.push(error_reply(503, "still overloaded"), model="gpt-a")
    with pytest.raises(NoModelAvailable, match="local/gpt-a overloaded"):
        client.complete([{"role": "user", "content": "hi"}])
    assert [(a.target, a.outcome) for a in client.last_attempts] == [("local/gpt-a", "overloaded")]
    cool = client.cooldowns.get("local/gpt-a")
    assert (cool.failures, cool.remaining()) == (2, pytest.approx(60.0))

    kit_now("2026-05-07T09:00:10+00:00")
    server.push(text_reply("back up"), model="gpt-a")
    assert client.complete([{"role": "user", "content": "hi"}]).text == "back up"
    assert len(server.requests_for("gpt-a")) == 3
    assert client.cooldowns.get("local/gpt-a") is None


def test_when_all_cool_down_the_one_ending_first_is_probed(ws_path, server, keyed, kit_now):
    ws = configure(ws_path, server, "local/gpt-a", ["backup/gpt-b"])
    client = FailoverClient(ws)
    client.cooldowns.record_failure("local/gpt-a", "rate_limit", "slow down")  # until 09:00:30
    kit_now("2026-05-07T09:00:10+00:00")
    client.cooldowns.record_failure("backup/gpt-b", "overloaded", "busy", at_least=5)  # until 09:00:40
    kit_now("2026-05-07T09:00:12+00:00")
    server.push(text_reply("the primary, probed"), model="gpt-a")
    assert client.complete([{"role": "user", "content": "hi"}]).text == "the primary, probed"
    assert [(a.target, a.outcome) for a in client.last_attempts] == [
        ("backup/gpt-b", "cooldown"), ("local/gpt-a", "ok")]
    assert server.requests_for("gpt-b") == []


def test_a_cooldown_still_says_what_to_fix(ws_path, monkeypatch):
    """The hint for a model skipped on cooldown names the fix for what started the cooldown."""
    from kit.providers.failover import Attempt, no_model_message

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    ws = Workspace.open(ws_path)
    message = no_model_message([
        Attempt("ollama/llama3.2", "cooldown", "cooling down 20s more after unreachable", cause="unreachable"),
        Attempt("openai/gpt-4o-mini", "auth", "openai: OPENAI_API_KEY is not set"),
    ], ws.config)
    assert message == (
        "no model available (ollama/llama3.2 cooldown: cooling down 20s more after unreachable; "
        "openai/gpt-4o-mini auth: openai: OPENAI_API_KEY is not set). To fix: start Ollama at "
        "http://127.0.0.1:11434 — it is retried when its cooldown ends (`kit doctor` lists cooldowns); "
        "set the environment variable OPENAI_API_KEY (providers.openai.api_key_env) to a valid key; or set "
        "agent.model / agent.fallbacks to a model you can reach (e.g. anthropic/claude-3-5-haiku-latest after "
        "exporting ANTHROPIC_API_KEY).")


def test_a_misconfigured_model_says_where_to_fix_it_once(ws_path, monkeypatch):
    """Regression (new user): every attempt a config error gave 'To fix: fix agent.model /
    agent.fallbacks in kit.yaml; or set agent.model / agent.fallbacks to a model you can reach'."""
    from kit.providers.failover import Attempt, no_model_message

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    message = no_model_message([Attempt("script:missing.yaml", "config", "script provider: no such script file "
                                        "/w/missing.yaml")], Workspace.open(ws_path).config)
    assert message == ("no model available (script:missing.yaml config: script provider: no such script file "
                       "/w/missing.yaml). To fix: fix agent.model / agent.fallbacks in kit.yaml (e.g. ollama/llama3.2 "
                       "with Ollama running).")


def test_doctor_checks_a_configured_script_file_and_names_the_kit_yaml_line(ws_path):
    """Regression (new user): `kit doctor` skipped script: models, so a missing or malformed
    script configured in kit.yaml was found only by `kit run`. Relative: the workspace's file."""
    from kit.doctor import run_checks

    (ws_path / "kit.yaml").write_text("# mine\nagent:\n  model: 'script:turns.yaml'\n"
                                      "  fallbacks: ['script:broken.yaml']\n")
    (ws_path / "broken.yaml").write_text("turns: [{txt: hello}]\n")
    agent = [(f.severity, str(f)) for f in run_checks(Workspace.open(ws_path), offline=True) if f.area == "agent"]
    assert agent == [
        ("error", f"kit.yaml:3: agent.model script:turns.yaml: script provider: no such script file "
                  f"{ws_path.resolve() / 'turns.yaml'}"),
        ("error", f"kit.yaml:4: agent.fallbacks script:broken.yaml: {ws_path.resolve() / 'broken.yaml'}:1: "
                  "script provider: turn 1 has an unknown key 'txt' (did you mean 'text'?)"),
    ]
    (ws_path / "turns.yaml").write_text("turns: [{text: hello}]\n")
    (ws_path / "broken.yaml").write_text("turns: [{text: hello}]\n")
    assert [f for f in run_checks(Workspace.open(ws_path), offline=True) if f.area == "agent"] == []


def test_preflight_fails_fast_only_when_no_candidate_can_answer(ws_path, server, monkeypatch, kit_now):
    """Before a turn's costly preparation: a missing key and a loopback port nobody listens on are
    certain; a listening server, a remote host, a proxy or the script provider are not."""
    kit_now(T0)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    port = free_port()

    def client(model, fallbacks=(), ollama_url=f"http://127.0.0.1:{port}/v1"):
        (ws_path / "kit.yaml").write_text(
            f"agent: {{model: {model}, fallbacks: {json.dumps(list(fallbacks))}}}\n"
            f"providers:\n  ollama: {{base_url: '{ollama_url}'}}\n"
            f"  local: {{type: openai, base_url: '{server.url}'}}\n")
        return FailoverClient(Workspace.open(ws_path))

    c = client("ollama/llama3.2", ["openai/gpt-4o-mini"])
    with pytest.raises(NoModelAvailable) as info:
        c.preflight()
    assert [(a.target, a.outcome, a.message) for a in c.last_attempts] == [
        ("ollama/llama3.2", "unreachable", f"ollama: cannot connect (nothing listens on 127.0.0.1:{port})"),
        ("openai/gpt-4o-mini", "auth", "openai: OPENAI_API_KEY is not set")]
    assert f"start Ollama at http://127.0.0.1:{port}" in str(info.value)
    assert c.cooldowns.all() == []  # a preflight records nothing

    client("ollama/llama3.2", ["local/gpt-b"]).preflight()  # the fallback listens
    client("ollama/llama3.2", ollama_url="http://10.255.255.1:11434/v1").preflight()  # remote: unknown
    client("ollama/llama3.2", ["script:turns.yaml"]).preflight()
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    client("ollama/llama3.2").preflight()  # a proxy may answer for it
    assert server.requests == []


# ---------------------------------------------------------------------------- found by a new user


def test_an_auth_failure_without_a_key_variable_says_to_name_one(ws_path, server, kit_now):
    """Regression: a 401 said `set providers.e401.api_key_env to a valid key`, steering the key
    itself into kit.yaml; api_key_env names the variable that holds it."""
    kit_now(T0)
    (ws_path / "kit.yaml").write_text(f"agent: {{model: e401/x}}\nproviders:\n  e401: {{type: openai, base_url: "
                                      f"'{server.url}'}}\n")
    server.push(error_reply(401, "missing key"))
    with pytest.raises(NoModelAvailable) as info:
        FailoverClient(Workspace.open(ws_path)).complete([{"role": "user", "content": "hi"}])
    assert str(info.value) == (
        "no model available (e401/x auth: e401: HTTP 401: missing key). To fix: put the key in an environment "
        "variable and name it with providers.e401.api_key_env; or set agent.model / agent.fallbacks to a model "
        "you can reach (e.g. ollama/llama3.2 with Ollama running).")


def _lab(ws_path: Path, url: str, fallback_url: str) -> Workspace:
    (ws_path / "kit.yaml").write_text(
        "agent: {model: lab/x, fallbacks: [backup/y], retry: {max_attempts: 1, backoff_s: 0}}\n"
        f"providers:\n  lab: {{type: openai, base_url: '{url}'}}\n"
        f"  backup: {{type: openai, base_url: '{fallback_url}'}}\n")
    return Workspace.open(ws_path)


def test_fixing_a_providers_base_url_clears_its_cooldown(ws_path, server, kit_now):
    """Regression: after a wrong base_url, fixing it still gave `lab/x cooling down, answered by
    backup/y` for up to 5 minutes. A cooldown belongs to the provider's configuration."""
    kit_now(T0)
    hi = [{"role": "user", "content": "hi"}]
    wrong = f"http://127.0.0.1:{free_port()}/v1"
    client = FailoverClient(_lab(ws_path, wrong, server.url))
    server.push(text_reply("from backup"), text_reply("from backup again"), model="y")
    assert client.complete(hi).text == "from backup"
    assert [(c.target, c.failures) for c in client.cooldowns.all()] == [("lab/x", 1)]
    assert client.complete(hi).text == "from backup again"
    assert [(a.target, a.outcome) for a in client.last_attempts] == [("lab/x", "cooldown"), ("backup/y", "ok")]

    # another wrong URL: a new configuration, whose failures count from one
    client = FailoverClient(_lab(ws_path, f"http://127.0.0.1:{free_port()}/v1", server.url))
    assert client.cooldowns.get("lab/x") is None
    server.push(text_reply("from backup"), model="y")
    client.complete(hi)
    assert [(c.target, c.failures) for c in client.cooldowns.all()] == [("lab/x", 1)]

    client = FailoverClient(_lab(ws_path, server.url, server.url))  # fixed
    server.push(text_reply("from lab"), model="x")
    assert client.complete(hi).text == "from lab"
    assert [(a.target, a.outcome) for a in client.last_attempts] == [("lab/x", "ok")]


def test_doctor_lists_only_cooldowns_of_providers_still_configured(ws_path, server, kit_now):
    """Regression: `kit doctor` listed the cooldown of a provider deleted from kit.yaml."""
    from kit.doctor import run_checks

    kit_now(T0)
    ws = _lab(ws_path, server.url, server.url)
    FailoverClient(ws).cooldowns.record_failure("lab/x", "overloaded", "busy")

    def cooling() -> list[str]:
        return [f.message for f in run_checks(Workspace.open(ws_path), offline=True) if "cooling" in f.message]

    assert cooling() == ["lab/x is cooling down for 30s after overloaded (1 consecutive): busy"]
    (ws_path / "kit.yaml").write_text("agent: {model: backup/y}\n"
                                      f"providers:\n  backup: {{type: openai, base_url: '{server.url}'}}\n")
    assert cooling() == []


def test_a_library_callers_model_gets_advice_without_command_line_flags(ws_path, monkeypatch, kit_now):
    """Regression: `ws.agent(model=...)` said `use a model you can reach with --model or agent.model
    in kit.yaml`. The CLI names its flag (it passes model_flag); a library caller gets neutral words."""
    kit_now(T0)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    ws = Workspace.open(ws_path)
    tried = ("no model available (openai/gpt-4o-mini auth: openai: OPENAI_API_KEY is not set). To fix: set the "
             "environment variable OPENAI_API_KEY (providers.openai.api_key_env) to a valid key; or ")
    agent = ws.agent(model="openai/gpt-4o-mini")
    with pytest.raises(NoModelAvailable) as info:
        agent.turn("hi")
    agent.close()
    assert str(info.value) == tried + ("choose a model you can reach (agent.model in kit.yaml, or the model you "
                                       "pass) (e.g. ollama/llama3.2 with Ollama running).")
    client = FailoverClient(ws, model="openai/gpt-4o-mini", model_flag="--model")
    with pytest.raises(NoModelAvailable) as info:
        client.preflight()
    assert str(info.value) == tried + ("use a model you can reach with --model or agent.model in kit.yaml "
                                       "(e.g. ollama/llama3.2 with Ollama running).")


def test_when_kit_yaml_does_not_load_the_advice_says_its_model_is_not_in_force(ws_path, monkeypatch, kit_now):
    """Regression: with a YAML error in kit.yaml the run went to the default model and then said
    `set agent.model …` although the user had set it."""
    kit_now(T0)
    port = free_port()
    monkeypatch.setenv("KIT_PROVIDERS__OLLAMA__BASE_URL", f"http://127.0.0.1:{port}/v1")  # this layer loads
    (ws_path / "kit.yaml").write_text("agent:\n  model: openai/gpt-4o-mini\nagent: [\n")
    ws = Workspace.open(ws_path)
    [problem] = ws.snapshot.config_issues
    assert str(problem).startswith("kit.yaml:4: invalid YAML: ")
    with pytest.raises(NoModelAvailable) as info:
        FailoverClient(ws).preflight()
    assert str(info.value) == (
        f"no model available (ollama/llama3.2 unreachable: ollama: cannot connect (nothing listens on "
        f"127.0.0.1:{port})). To fix: {problem} — the file did not load, so its agent.model is not in force "
        "(ollama/llama3.2 was asked instead); fix it and try again.")


def test_a_provider_left_out_by_a_config_error_says_which_line_to_fix(ws_path):
    """Not `unknown provider 'lab' … add providers.lab with a type to kit.yaml`: it is there."""
    from kit.doctor import run_checks

    (ws_path / "kit.yaml").write_text("agent:\n  model: lab/x\nproviders:\n  lab:\n    type: openai\n"
                                      "    base_url: notaurl\n")
    ws = Workspace.open(ws_path)
    why = ("provider 'lab' is left out until kit.yaml:6 is fixed: 'providers.lab.base_url' must be an http:// "
           "or https:// URL, not 'notaurl'")
    with pytest.raises(NoModelAvailable) as info:
        FailoverClient(ws).preflight()
    assert str(info.value) == f"no model available (lab/x config: {why}). To fix: fix kit.yaml:6."
    found = [(f.severity, str(f)) for f in run_checks(ws, offline=True) if f.area in ("agent", "config")]
    assert found == [
        ("error", "kit.yaml:6: 'providers.lab.base_url' must be an http:// or https:// URL, not 'notaurl'"),
        ("error", f"kit.yaml:2: agent.model lab/x: {why}"),
    ]


def test_url_errors_in_the_doctors_check_and_the_template_probe_are_answers_not_tracebacks(server):
    """Regression: `kit doctor` said `check failed: ValueError("unknown url type: 'notaurl/models'")`
    and `kit run` died in probe_template. kit.yaml's URLs are checked when it loads; these two
    still never raise for a URL urllib cannot send."""
    from kit.providers.failover import answers
    from kit.providers.toolcheck import probe_template

    assert answers("notaurl") == "not a URL Kit can ask (unknown url type: 'notaurl/models')"
    assert answers(f"{server.url} ").startswith("not a URL Kit can ask (URL can't contain control characters.")
    assert probe_template("notaurl") is None
    assert probe_template(f"{server.url} ") is None
    assert server.requests == []
