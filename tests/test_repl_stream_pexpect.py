"""The REPL on a real pseudo-terminal against a real HTTP server that streams: the reply's first
words are on the screen while the server still holds the rest back (it waits for the test to
have seen them), and a Ctrl-C in the middle of a reply keeps what arrived in the session, marked
interrupted, and brings the prompt back."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import threading

import pexpect

from helpers_openai_server import FakeLLMServer, text_reply

PROMPT = "you> "
T0 = "2026-05-07T09:00:00+00:00"


def test_repl_streams_and_ctrl_c_keeps_the_partial_reply(ws_path):
    held = threading.Event()
    # the second reply is never let through: only Ctrl-C ends it. The gates wait 120 s, not the
    # helper's 10 s: on a loaded machine the REPL can take longer than 10 s to draw the first words
    # and take the Ctrl-C, and the reply then completed before the interrupt (seen under load 15)
    never = threading.Event()
    with FakeLLMServer() as server:
        (ws_path / "kit.yaml").write_text(textwrap.dedent(f"""\
            agent:
              model: local/gpt-a
              retry: {{max_attempts: 1}}
            providers:
              local: {{type: openai, base_url: "{server.url}", api_key_env: KIT_TEST_KEY}}
            memory:
              active_recall: {{enabled: false}}
            """))
        first = text_reply("Streaming words arrive before the reply is complete.", gate=held, gate_after=3,
                          gate_timeout=120)
        second = text_reply("Counting slowly: one two three four five six seven.", gate=never, gate_after=4,
                           gate_timeout=120)
        server.push(first, second)
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="40", PYTHONUNBUFFERED="1",
                   KIT_TEST_KEY="sk-test", KIT_NOW=T0)
        # SIGINT at its default in the child, as a terminal starts it: a test run started in the
        # background of a non-interactive shell has SIGINT ignored, which the child would inherit
        # (Python then installs no KeyboardInterrupt handler and Ctrl-C does nothing)
        child = pexpect.spawn(sys.executable, ["-m", "kit", "run", "--session", "main"], cwd=str(ws_path),
                              env=env, encoding="utf-8", timeout=60, dimensions=(40, 100),
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            child.expect_exact(PROMPT)
            child.sendline("tell me")
            child.expect_exact("Streaming words")  # on screen while the server holds the rest
            assert not held.is_set()
            held.set()
            child.expect_exact("before the reply is complete.")
            child.expect_exact(PROMPT)
            assert first.gate_opened is True

            child.sendline("count")
            child.expect_exact("Counting slowly: one")
            child.sendintr()  # Ctrl-C mid-stream
            child.expect_exact("the partial reply is kept in the session")
            child.expect_exact(PROMPT)
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            held.set()
            never.set()
            child.close()
    assert child.exitstatus == 0
    [transcript] = (ws_path / ".kit" / "sessions").glob("*.jsonl")
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    said = [(m["role"], m["content"], m.get("finish_reason")) for m in lines if m.get("role") in ("user", "assistant")]
    assert said == [
        ("user", "tell me", None),
        ("assistant", "Streaming words arrive before the reply is complete.", "stop"),
        ("user", "count", None),
        ("assistant", "Counting slowly: one ", "interrupted"),
    ]


def test_the_tools_dropped_warning_is_on_screen_before_the_reply(ws_path):
    """A llama.cpp server whose chat template drops the tools: the REPL shows the one-time
    warning before the reply's first word, not in the middle of the streamed reply."""
    from helpers_openai_server import llama_apply_template

    with FakeLLMServer() as server:
        (ws_path / "kit.yaml").write_text(textwrap.dedent(f"""\
            agent: {{model: box/smollm2, retry: {{max_attempts: 1}}}}
            providers:
              box: {{type: openai, base_url: "{server.url}"}}
            memory:
              active_recall: {{enabled: false}}
            """))
        server.extra_post = llama_apply_template(renders_tools=False)
        server.push(text_reply("Sunny weather all week, I believe."))
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="40", PYTHONUNBUFFERED="1", KIT_NOW=T0)
        child = pexpect.spawn(sys.executable, ["-m", "kit", "run"], cwd=str(ws_path), env=env, encoding="utf-8",
                              timeout=60, dimensions=(40, 100),
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            child.expect_exact(PROMPT)
            child.sendline("weather?")
            child.expect_exact("dropped the tool list")
            assert "Sunny" not in child.before  # nothing of the reply was drawn before the warning
            child.expect_exact("Sunny weather all week, I believe.")
            child.expect_exact(PROMPT)
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close()
    assert child.exitstatus == 0
