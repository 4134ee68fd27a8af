"""Retry before failover, against a real HTTP server on 127.0.0.1: a retryable error is asked
again of the same model (tenacity: backoff with jitter, Retry-After honoured, a count and a total
wait), only then cooldown and fallback; every retry and failover is an event, and `kit run` prints
them on stderr. A connection that drops mid-stream is retried while nothing was shown, else the
partial reply is kept."""

from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path

import pytest

from helpers_openai_server import FakeLLMServer, error_reply, text_reply
from kit.providers.base import NoModelAvailable, StreamInterrupted
from kit.providers.events import Failover, ModelCall, Reply, Retry, TextDelta
from kit.providers.failover import FailoverClient
from kit.workspace import Workspace

T0 = "2026-05-07T09:00:00+00:00"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def keyed(monkeypatch, kit_now):
    monkeypatch.setenv("KIT_TEST_KEY", "sk-test-123")
    kit_now(T0)


def configure(ws_path: Path, server: FakeLLMServer, *, fallbacks=("backup/gpt-b",), attempts=3,
              max_wait=30, backoff=1.0, extra: str = "") -> Workspace:
    (ws_path / "kit.yaml").write_text(textwrap.dedent(f"""\
        agent:
          model: local/gpt-a
          fallbacks: {json.dumps(list(fallbacks))}
          retry: {{max_attempts: {attempts}, max_wait_s: {max_wait}, backoff_s: {backoff}}}
        providers:
          local: {{type: openai, base_url: "{server.url}", api_key_env: KIT_TEST_KEY}}
          backup: {{type: openai, base_url: "{server.url}", api_key_env: KIT_TEST_KEY}}
        """) + extra)
    return Workspace.open(ws_path)


class Sleeps(list):
    """Records the pauses instead of waiting them."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_429_with_retry_after_is_retried_once_without_failover(ws_path, server):
    ws = configure(ws_path, server)
    server.push(error_reply(429, "slow down", headers={"Retry-After": "2"}), model="gpt-a")
    server.push(text_reply("second time lucky"), model="gpt-a")
    sleeps = Sleeps()
    client = FailoverClient(ws, sleep=sleeps)
    events = list(client.stream(HI))
    [retry] = [e for e in events if isinstance(e, Retry)]
    assert (retry.target, retry.attempt, retry.max_attempts, retry.kind) == ("local/gpt-a", 1, 3, "rate_limit")
    assert retry.wait_s >= 2.0  # never sooner than the server asked
    assert sleeps == [retry.wait_s]  # the pause comes after the event, so people see it first
    assert events.index(retry) < max(i for i, e in enumerate(events) if isinstance(e, ModelCall))
    assert retry.line.startswith("local/gpt-a rate-limited (local: HTTP 429: slow down); retrying in ")
    assert not any(isinstance(e, Failover) for e in events)
    response = events[-1].response
    assert (response.text, response.model) == ("second time lucky", "local/gpt-a")
    assert [(a.target, a.outcome) for a in response.attempts] == [("local/gpt-a", "rate_limit"), ("local/gpt-a", "ok")]
    assert response.attempts[0].wait_s == retry.wait_s
    assert server.requests_for("gpt-b") == []
    assert client.cooldowns.all() == []  # it answered: no cooldown


def test_503_n_times_then_failover_with_a_status_event(ws_path, server):
    ws = configure(ws_path, server, backoff=0.5)
    server.push(*[error_reply(503, "busy")] * 3, model="gpt-a")
    server.push(text_reply("from the backup"), model="gpt-b")
    sleeps = Sleeps()
    client = FailoverClient(ws, sleep=sleeps)
    events = list(client.stream(HI))
    retries = [e for e in events if isinstance(e, Retry)]
    assert [(r.attempt, r.kind) for r in retries] == [(1, "overloaded"), (2, "overloaded")]
    # exponential backoff with jitter: 0.5 s then 1 s, each plus up to 0.5 s
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 1.5
    [failover] = [e for e in events if isinstance(e, Failover)]
    assert failover.line == "local/gpt-a overloaded, answered by backup/gpt-b"
    # announced before the fallback's first text
    assert events.index(failover) < next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    response = events[-1].response
    assert response.model == "backup/gpt-b"
    assert [a.outcome for a in response.attempts] == ["overloaded", "overloaded", "overloaded", "ok"]
    assert len(server.requests_for("gpt-a")) == 3
    cool = client.cooldowns.get("local/gpt-a")
    assert (cool.kind, cool.failures) == ("overloaded", 1)  # one cooldown for the whole call


def test_a_retry_after_beyond_the_budget_fails_over_at_once(ws_path, server):
    ws = configure(ws_path, server, max_wait=10)
    server.push(error_reply(429, "come back in a minute", headers={"Retry-After": "60"}), model="gpt-a")
    server.push(text_reply("backup"), model="gpt-b")
    sleeps = Sleeps()
    client = FailoverClient(ws, sleep=sleeps)
    assert client.complete(HI).text == "backup"
    assert sleeps == [] and len(server.requests_for("gpt-a")) == 1
    assert client.cooldowns.get("local/gpt-a").remaining() == pytest.approx(60.0)  # the server's word


def test_a_refused_connection_fails_over_without_retrying(ws_path, server):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound, not listening: connect() is refused
    try:
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        ws = configure(ws_path, server, fallbacks=["backup/gpt-b"],
                       extra=f"  dead: {{type: openai, base_url: \"{dead}\"}}\n")
        (ws_path / "kit.yaml").write_text((ws_path / "kit.yaml").read_text().replace("local/gpt-a", "dead/gpt-a"))
        ws.reload(["kit.yaml"])
        server.push(text_reply("alive"), model="gpt-b")
        sleeps = Sleeps()
        events = list(FailoverClient(ws, sleep=sleeps).stream(HI))
    finally:
        sock.close()
    assert sleeps == [] and not any(isinstance(e, Retry) for e in events)
    [failover] = [e for e in events if isinstance(e, Failover)]
    assert failover.line == "dead/gpt-a unreachable, answered by backup/gpt-b"
    assert [a.outcome for a in events[-1].response.attempts] == ["unreachable", "ok"]


def test_a_timeout_is_retried(ws_path, server):
    ws = configure(ws_path, server, backoff=0)
    (ws_path / "kit.yaml").write_text((ws_path / "kit.yaml").read_text().replace(
        "api_key_env: KIT_TEST_KEY}\n  backup", "api_key_env: KIT_TEST_KEY, timeout_s: 1}\n  backup", 1))
    ws.reload(["kit.yaml"])
    server.push(text_reply("too late", delay=3), text_reply("in time"), model="gpt-a")
    response = FailoverClient(ws).complete(HI)
    assert response.text == "in time"
    assert [a.outcome for a in response.attempts] == ["timeout", "ok"]


def test_dropped_before_any_text_is_retried(ws_path, server):
    ws = configure(ws_path, server, backoff=0)
    server.push(text_reply("never sent", drop_after=1), model="gpt-a")  # only the role chunk
    server.push(text_reply("whole reply"), model="gpt-a")
    events = list(FailoverClient(ws).stream(HI))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "whole reply"
    assert [a.outcome for a in events[-1].response.attempts] == ["dropped", "ok"]


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_dropped_mid_stream_keeps_the_partial_and_does_not_repeat_it(ws_path, server, reset):
    ws = configure(ws_path, server, backoff=0)
    # role chunk, "The ", "door " … then the connection goes
    server.push(text_reply("The door code is ZEBRA-7431.", drop_after=3, reset=reset), model="gpt-a")
    client = FailoverClient(ws)
    seen = []
    with pytest.raises(StreamInterrupted) as info:
        for event in client.stream(HI):
            seen.append(event)
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == "The door "
    partial = info.value.partial
    assert (partial.text, partial.finish_reason, partial.model) == ("The door ", "interrupted", "local/gpt-a")
    assert [a.outcome for a in partial.attempts] == ["dropped"]
    assert info.value.kind == "interrupted"
    assert len(server.requests) == 1  # not retried, not failed over: that would repeat the text
    assert client.cooldowns.get("local/gpt-a").kind == "dropped"


def test_retries_spent_on_a_lone_model_say_so(ws_path, server):
    ws = configure(ws_path, server, fallbacks=[], backoff=0)
    server.push(*[error_reply(503, "busy")] * 3, model="gpt-a")
    client = FailoverClient(ws)
    with pytest.raises(NoModelAvailable, match="local/gpt-a overloaded"):
        client.complete(HI)
    assert [a.outcome for a in client.last_attempts] == ["overloaded"] * 3


# ---------------------------------------------------------------------------- what people see


def test_kit_run_prints_retries_and_the_failover_and_reports_them_in_json(ws_path, server):
    from conftest import run_kit

    configure(ws_path, server, backoff=0, extra="memory:\n  active_recall: {enabled: false}\n")
    server.push(error_reply(429, "slow down", headers={"Retry-After": "0"}), error_reply(503, "busy"),
                error_reply(503, "busy"), model="gpt-a")
    server.push(text_reply("answered by the backup", prompt_tokens=900, cache_read_tokens=640), model="gpt-b")
    done = run_kit("run", "--json", "hello", cwd=ws_path, env={"KIT_TEST_KEY": "sk-test-123", "KIT_NOW": T0})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("kit: ")]
    assert lines[0].startswith("kit: local/gpt-a rate-limited (local: HTTP 429: slow down); retrying in 0.0 s "
                               "(attempt 2 of 3)")
    assert lines[1].startswith("kit: local/gpt-a overloaded (local: HTTP 503: busy); retrying in 0.0 s (attempt 3 of 3)")
    assert "kit: local/gpt-a rate-limited, local/gpt-a overloaded, answered by backup/gpt-b" in lines
    data = json.loads(done.stdout)
    assert data["model"] == "backup/gpt-b"
    assert [(a["target"], a["outcome"]) for a in data["attempts"]] == [
        ("local/gpt-a", "rate_limit"), ("local/gpt-a", "overloaded"), ("local/gpt-a", "overloaded"),
        ("backup/gpt-b", "ok")]
    # the session record says who answered and how it got there
    transcript = next((ws_path / ".kit" / "sessions").glob("*.jsonl")).read_text().splitlines()
    assistant = json.loads(transcript[-1])
    assert assistant["model"] == "backup/gpt-b"
    assert [a["outcome"] for a in assistant["attempts"]] == ["rate_limit", "overloaded", "overloaded", "ok"]
    assert (data["usage"]["cache_read_tokens"], assistant["usage"]["cache_read_tokens"]) == (640, 640)
    shown = run_kit("sessions", "show", data["session"], cwd=ws_path, env={"KIT_NOW": T0})
    assert "(640 read from the prompt cache, 0 written)" in shown.stdout.splitlines()[0]
    assert "answered by the backup [answered by backup/gpt-b after 3 failed attempts]" in shown.stdout


def test_kit_run_keeps_a_reply_cut_mid_stream(ws_path, server):
    from conftest import run_kit

    configure(ws_path, server, fallbacks=[], backoff=0, extra="memory:\n  active_recall: {enabled: false}\n")
    server.push(text_reply("The door code is ZEBRA-7431.", drop_after=4), model="gpt-a")
    done = run_kit("run", "--json", "--session", "main", "the code?", cwd=ws_path,
                   env={"KIT_TEST_KEY": "sk-test-123", "KIT_NOW": T0})
    assert done.returncode == 1
    assert "the reply broke off; what arrived is kept" in done.stderr
    data = json.loads(done.stdout)
    assert (data["reply"], data["finish_reason"]) == ("The door code ", "interrupted")
    transcript = next((ws_path / ".kit" / "sessions").glob("*.jsonl")).read_text().splitlines()
    last = json.loads(transcript[-1])
    assert (last["role"], last["content"], last["finish_reason"]) == ("assistant", "The door code ", "interrupted")


def test_reply_event_carries_model_and_attempts(ws_path, server):
    ws = configure(ws_path, server)
    server.push(text_reply("hi"), model="gpt-a")
    reply = list(FailoverClient(ws).stream(HI))[-1]
    assert isinstance(reply, Reply)
    assert reply.to_json()["attempts"] == [{"target": "local/gpt-a", "outcome": "ok"}]


def test_stopping_early_closes_the_connection(ws_path, server):
    """Ctrl-C in the middle of a reply: the consumer stops iterating and closes the stream; the
    HTTP response is closed at once, so the server stops sending (and generating)."""
    ws = configure(ws_path, server)
    reply = text_reply(" ".join(f"word{i}" for i in range(400)), chunk_delay=0.01)
    server.push(reply, model="gpt-a")
    stream = FailoverClient(ws).stream(HI)
    for event in stream:
        if isinstance(event, TextDelta):
            break
    stream.close()
    assert reply.client_gone.wait(10)
