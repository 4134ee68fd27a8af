"""`kit run`: one turn with --json (script provider and a real OpenAI-compatible HTTP server),
clear failures (no model reachable, script exhausted, iteration limit)."""

from __future__ import annotations

import json
import socket

from helpers_agent import recorded_calls, set_config, write_script
from helpers_openai_server import FakeLLMServer, text_reply, tool_reply

QUIET = "memory:\n  active_recall: {enabled: false}\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_run_json_with_script(ws_path, tmp_path, cli):
    set_config(ws_path, QUIET)
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "IDENTITY.md", "lines": 1}}],
         "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
        {"text": "I am **Kit**.", "usage": {"prompt_tokens": 60, "completion_tokens": 4}},
    ])
    result = cli("run", "who are you?", "--json", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"session", "reply", "tool_calls", "iterations", "usage", "model", "finish_reason",
                         "attempts", "blocked", "stopped"}
    assert data["reply"] == "I am **Kit**." and data["blocked"] is None and data["stopped"] is None
    assert (data["model"], data["finish_reason"]) == (f"script:{script.name}", "stop")
    assert [a["outcome"] for a in data["attempts"]] == ["ok", "ok"]
    assert data["iterations"] == 2
    first_line = (ws_path / "IDENTITY.md").read_text().splitlines(keepends=True)[0].strip()
    assert data["tool_calls"] == [{"name": "read_file", "arguments": {"path": "IDENTITY.md", "lines": 1},
                                   "ok": True, "blocked": False, "result_preview": first_line}]
    assert data["usage"]["prompt_tokens"] == 110 and data["usage"]["completion_tokens"] == 9
    assert data["usage"]["total_tokens"] == 119 and data["usage"]["model_calls"] == 2
    assert (ws_path / ".kit" / "sessions" / f"{data['session']}.jsonl").exists()

    listed = json.loads(cli("sessions", "list", "--json", "-w", ws_path).stdout)
    assert [s["id"] for s in listed["sessions"]] == [data["session"]]


def test_run_through_a_real_openai_compatible_server(ws_path, cli):
    with FakeLLMServer() as server:
        set_config(ws_path, QUIET + f"""\
agent:
  model: local/test-model
providers:
  local: {{type: openai, base_url: "{server.url}", api_key_env: null}}
""")
        server.push(tool_reply("write_file", {"path": "notes/today.md", "content": "- met Ana\n"}))
        server.push(text_reply("Saved it to notes/today.md."))
        result = cli("run", "note that I met Ana", "--json", "-w", ws_path)
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        requests = list(server.requests)
    assert data["reply"] == "Saved it to notes/today.md."
    assert [(t["name"], t["ok"], t["result_preview"]) for t in data["tool_calls"]] == [
        ("write_file", True, "created notes/today.md (10 chars)")]
    assert data["usage"]["prompt_tokens"] == 22 and data["usage"]["completion_tokens"] == 14
    assert (ws_path / "notes" / "today.md").read_text() == "- met Ana\n"

    assert [r["model"] for r in requests] == ["test-model", "test-model"]
    first, second = requests[0]["body"], requests[1]["body"]
    assert sorted(t["function"]["name"] for t in first["tools"]) == sorted(
        ["memory_search", "memory_get", "memory_write", "session_search", "skills_list", "skill_view",
         "read_file", "write_file", "edit_file", "exec"])
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    call_id = second["messages"][2]["tool_calls"][0]["id"]
    assert second["messages"][3]["tool_call_id"] == call_id
    assert second["messages"][3]["content"] == "created notes/today.md (10 chars)"


def test_no_model_reachable_says_what_to_set(ws_path, cli):
    port = _free_port()  # nothing listens here
    set_config(ws_path, QUIET + f"""\
providers:
  ollama: {{base_url: "http://127.0.0.1:{port}/v1", timeout_s: 5}}
""")
    result = cli("run", "hello", "--json", "-w", ws_path)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "no model available" in result.stderr
    assert f"start Ollama at http://127.0.0.1:{port}" in result.stderr
    assert "set agent.model" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_default_config_without_ollama_says_what_to_set_in_a_real_process(ws_path):
    """The workspace `kit init` makes (ollama/llama3.2 at 127.0.0.1:11434), nothing listening:
    exit 1, nothing on stdout, ONE stderr line saying what to start or set, no traceback — and
    the same again right away (nothing hides the fix), found before active recall loads the
    embedding model (the default config has recall on), so no model download or load either."""
    import pytest

    from conftest import run_kit

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 11434)) == 0:
            pytest.skip("something listens on 127.0.0.1:11434 (an Ollama is running)")
    expected = ("kit: no model available (ollama/llama3.2 unreachable: ollama: cannot connect "
                "(nothing listens on 127.0.0.1:11434)). To fix: start Ollama at http://127.0.0.1:11434; or set "
                "agent.model / agent.fallbacks to a model you can reach (e.g. openai/gpt-4o-mini "
                "after exporting OPENAI_API_KEY).\n")
    for args in (("run", "hello"), ("run", "hello again", "--json")):
        done = run_kit(*args, "-w", ws_path, env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "",
                                                  "HTTP_PROXY": "", "HTTPS_PROXY": "", "ALL_PROXY": ""})
        assert (done.returncode, done.stdout, done.stderr) == (1, "", expected)
    assert not (ws_path / ".kit" / "index.db").exists()  # recall never started


def test_empty_message_is_a_usage_error(ws_path, cli):
    result = cli("run", "  ", "-w", ws_path)
    assert result.exit_code == 2
    assert "empty MESSAGE" in result.stderr and result.stdout == ""


def test_script_out_of_turns_fails_clearly(ws_path, tmp_path, cli):
    set_config(ws_path, QUIET)
    script = write_script(tmp_path, [{"tool_calls": [{"name": "skills_list", "arguments": {}}]}])
    result = cli("run", "hi", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 1
    assert f"script {script} has only 1 turn but the run asked for turn 2; add more turns" in result.stderr


def test_iteration_limit_exits_1_after_printing_json(ws_path, tmp_path, cli):
    set_config(ws_path, QUIET + "agent:\n  max_iterations: 1\n")
    script = write_script(tmp_path, [{"tool_calls": [{"name": "skills_list", "arguments": {}}]}])
    result = cli("run", "hi", "--json", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["iterations"] == 1 and data["reply"].startswith("Stopped: reached agent.max_iterations (1)")
    assert "stopped: max_iterations" in result.stderr
    assert data["stopped"] == "max_iterations"  # a program reads why, not only that (exit 1)


def test_broken_config_is_announced_on_the_status_line(ws_path, tmp_path, cli):
    # a bad value in a kit.yaml that loads (one that does not load stops the run: the test below)
    set_config(ws_path, "agent:\n  max_iterations: [oops]\n")
    script = write_script(tmp_path, [{"text": "still here"}])
    result = cli("run", "hi", "--json", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["reply"] == "still here"
    assert ("kit: warning: kit.yaml:2: 'agent.max_iterations' must be an integer, not ['oops'] "
            "(ignored until fixed; no kit.yaml setting applies)") in result.stderr.splitlines()


def test_first_load_problems_are_not_called_last_good_versions(ws_path, tmp_path, cli):
    """A one-shot run opens the workspace afresh: there is no last good version of anything, so
    the status line says what is true — the broken part is ignored until fixed."""
    set_config(ws_path, QUIET + "agent:\n  max_iterations: -4\n")
    (ws_path / "skills" / "bad").mkdir(parents=True)
    (ws_path / "skills" / "bad" / "SKILL.md").write_text("---\nname: [x\n---\nbody\n")
    script = write_script(tmp_path, [{"text": "fine"}])
    result = cli("run", "hi", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("kit: warning:")]
    assert warnings == [
        "kit: warning: kit.yaml:4: 'agent.max_iterations' must be at least 1, not -4 "
        "(ignored until fixed; the valid settings apply)",
        "kit: warning: skills/bad/SKILL.md:2: invalid frontmatter YAML: expected ',' or ']', but got "
        "'<stream end>' (ignored until fixed)",
    ]
    assert "last good" not in result.stderr


def test_the_repl_names_first_load_problems_as_kit_run_does(ws_path, tmp_path):
    """Regression (new-user walkthrough): the REPL said 'workspace error: … (previous/default
    version in force)' for a skill that never loaded, where `kit run MESSAGE` says 'ignored until
    fixed'."""
    set_config(ws_path, QUIET)
    (ws_path / "skills" / "bad").mkdir(parents=True)
    (ws_path / "skills" / "bad" / "SKILL.md").write_text("---\nname: [x\n---\nbody\n")
    script = write_script(tmp_path, [{"text": "fine"}])
    from conftest import run_kit

    proc = run_kit("run", "-w", ws_path, "--model", f"script:{script}", input="/exit\n", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ("warning: skills/bad/SKILL.md:2: invalid frontmatter YAML: expected ',' or ']', but got "
            "'<stream end>' (ignored until fixed)") in proc.stdout.splitlines()
    assert "previous/default" not in proc.stdout


def test_untrusted_workspace_hook_is_announced_not_run(ws_path, tmp_path, cli):
    from helpers_hooks import write_hook

    set_config(ws_path, QUIET)
    write_hook(ws_path / "hooks", "guard", ["message:received"],
               "def handle(e):\n    return {'block': True, 'reason': 'guarded'}\n")
    script = write_script(tmp_path, [{"text": "not blocked"}])
    result = cli("run", "hi", "--json", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 0 and json.loads(result.stdout)["reply"] == "not blocked"
    assert ("kit: hook guard does not run: its workspace code is not trusted (review hooks/guard/, "
            "then `kit hooks trust guard`)") in result.stderr.splitlines()


def test_a_message_a_hook_blocks_is_not_a_reply(ws_path, tmp_path, cli):
    """Found by a new-user pass: a Claude Code UserPromptSubmit hook that timed out blocked the
    message (fail closed), and `kit run` printed Kit's notice as the reply with exit 0, no
    `blocked` in --json, and named a session that was never written."""
    set_config(ws_path, QUIET + "hooks:\n  claude_code: true\n")
    (ws_path / ".claude").mkdir()
    (ws_path / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": "sleep 5", "timeout": 0.3}]}]}}))
    assert cli("hooks", "trust", "claude-code", "-w", ws_path).exit_code == 0
    script = write_script(tmp_path, [{"text": "never sent"}])
    reason = ("Claude Code hook .claude/settings.json UserPromptSubmit[0] could not be run: timed out after 0.3s "
              "(command killed); the message is blocked (Kit fails closed)")

    human = cli("run", "hello", "-w", ws_path, "--model", f"script:{script}")
    assert human.exit_code == 1
    assert human.stdout == ""  # no reply: nothing answered
    assert human.stderr.splitlines()[-1] == f"kit: blocked by a hook: {reason}"
    assert "kit: session" not in human.stderr

    as_json = cli("run", "hello", "--json", "-w", ws_path, "--model", f"script:{script}")
    assert as_json.exit_code == 1
    data = json.loads(as_json.stdout)
    assert (data["blocked"], data["session"], data["iterations"]) == (reason, None, 0)
    assert data["stopped"] == "blocked"
    assert as_json.stderr.splitlines()[-1] == f"kit: blocked by a hook: {reason}"

    streamed = cli("run", "hello", "--stream-json", "-w", ws_path, "--model", f"script:{script}")
    assert streamed.exit_code == 1
    final = json.loads(streamed.stdout.splitlines()[-1])
    assert (final["type"], final["blocked"], final["session"]) == ("final", reason, None)
    assert recorded_calls(script) == []
    assert json.loads(cli("sessions", "list", "--json", "-w", ws_path).stdout)["sessions"] == []


def test_heartbeat_with_empty_checklist_is_skipped(ws_path, tmp_path, cli):
    set_config(ws_path, QUIET)
    (ws_path / "HEARTBEAT.md").write_text("# Heartbeat\n")
    script = write_script(tmp_path, [{"text": "should not be called"}])
    result = cli("run", "heartbeat", "--kind", "heartbeat", "--json", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["iterations"] == 0 and data["reply"] == ""
    assert data["skipped"] == "HEARTBEAT.md has no tasks"
    assert (data["model"], data["attempts"]) == (None, [])  # no model was asked
    assert result.stderr.splitlines()[-1] == "kit: heartbeat skipped: HEARTBEAT.md has no tasks"
    # regression: "session" named an id that was never written (`kit sessions show` failed)
    assert data["session"] is None

    human = cli("run", "heartbeat", "--kind", "heartbeat", "-w", ws_path, "--model", f"script:{script}")
    assert human.exit_code == 0, human.output
    assert human.stdout == ""  # no "(no reply)"
    assert human.stderr.splitlines()[-1] == "kit: heartbeat skipped: HEARTBEAT.md has no tasks"
    assert json.loads(cli("sessions", "list", "--json", "-w", ws_path).stdout)["sessions"] == []

    # with a task, it runs (and the JSON has no "skipped")
    (ws_path / "HEARTBEAT.md").write_text("# Heartbeat\n\n- check the inbox\n")
    ran = cli("run", "heartbeat", "--kind", "heartbeat", "--json", "-w", ws_path, "--model", f"script:{script}")
    assert ran.exit_code == 0, ran.output
    assert set(json.loads(ran.stdout)) == {"session", "reply", "tool_calls", "iterations", "usage", "model",
                                           "finish_reason", "attempts", "blocked", "stopped"}


def test_session_continues_across_processes_and_stdin_message(ws_path, tmp_path, cli):
    set_config(ws_path, QUIET)
    one = write_script(tmp_path, [{"text": "Noted."}], name="one.yaml")
    two = write_script(tmp_path, [{"text": "Your cat is Miso."}], name="two.yaml")
    first = cli("run", "My cat is called Miso", "--json", "--session", "chat", "-w", ws_path,
                "--model", f"script:{one}")
    second = cli("run", "-", "--json", "--session", "chat", "-w", ws_path, "--model", f"script:{two}",
                 input="What is my cat called?\n")
    assert second.exit_code == 0, second.output
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["session"] == b["session"]
    from helpers_agent import recorded_calls

    assert [m["content"] for m in recorded_calls(two)[0]["messages"][1:]] == [
        "My cat is called Miso", "Noted.", "What is my cat called?"]
    shown = json.loads(cli("sessions", "show", "chat", "--json", "-w", ws_path).stdout)
    assert shown["session"]["id"] == a["session"] and shown["session"]["messages"] == 4


def test_a_rate_limit_says_to_wait_and_the_example_is_not_what_failed(ws_path, tmp_path, cli, monkeypatch):
    """The advice starts with a suggestion (no dangling "or …"), and never recommends the model
    that just failed (nor one whose key is unset as if it worked)."""
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    set_config(ws_path, QUIET + "agent:\n  retry: {max_attempts: 3, backoff_s: 0}\n")
    # a rate limit is retried on the same model first: three requests, three scripted 429s
    script = write_script(tmp_path, [{"error": {"kind": "rate_limit", "message": "simulated 429"}}] * 3)
    result = cli("run", "hi", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 1
    # the retries were visible as they happened
    assert [line.split(" (")[0] for line in result.stderr.splitlines() if "retrying" in line] == [
        f"kit: script:{script} rate-limited"] * 2
    assert result.stderr.splitlines()[-1] == (
        f"kit: no model available (script:{script} rate_limit: simulated 429, 3 attempts). To fix: wait: "
        f"script:{script} is rate-limited; it is retried when its cooldown ends (`kit doctor` lists "
        "cooldowns); or use a model you can reach with --model or agent.model in kit.yaml "
        "(e.g. ollama/llama3.2 with Ollama running).")

    result = cli("run", "hi", "-w", ws_path, "--model", "openai/gpt-4o-mini")
    assert result.exit_code == 1
    assert result.stderr == (
        "kit: no model available (openai/gpt-4o-mini auth: openai: OPENAI_API_KEY is not set). To fix: "
        "set the environment variable OPENAI_API_KEY (providers.openai.api_key_env) to a valid key; or use a "
        "model you can reach with --model or agent.model in kit.yaml (e.g. ollama/llama3.2 with Ollama running).\n")

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    result = cli("run", "hi", "-w", ws_path, "--model", "openai/gpt-4o-mini")
    assert result.stderr.endswith("(e.g. anthropic/claude-3-5-haiku-latest — ANTHROPIC_API_KEY is set).\n")


def test_a_malformed_model_flag_is_a_usage_error(ws_path, cli):
    set_config(ws_path, QUIET)
    for spec, why in (
        ("nonsense", "model 'nonsense' must be 'provider/model' (e.g. ollama/llama3.2, "
                     "openai/gpt-4o-mini) or 'script:PATH'"),
        ("bogus/x", "unknown provider 'bogus' (configured: anthropic, ollama, openai); add "
                    "providers.bogus with a type to kit.yaml"),
        ("script:", "model 'script:' needs a path, e.g. script:demo.yaml"),
    ):
        for args in (("run", "hi"), ("run",)):  # one turn and the REPL alike
            result = cli(*args, "-w", ws_path, "--model", spec)
            assert result.exit_code == 2, (spec, result.output)
            assert result.stderr.splitlines()[-1] == f"Error: Invalid value for '--model': {why}"
            assert result.stdout == ""
    assert not (ws_path / ".kit" / "sessions").exists() or list((ws_path / ".kit" / "sessions").iterdir()) == []


def test_a_missing_script_file_is_a_usage_error_and_a_malformed_one_an_error_in_it(ws_path, tmp_path, cli):
    # a new user's typo in script:PATH was "no model available" (exit 1): it is the flag that is wrong;
    # a script that is there but malformed is an error in that file, at its line (exit 1, one line:
    # a new-user pass found click's usage block there, against the README's exit codes)
    set_config(ws_path, QUIET)
    missing = tmp_path / "missing.yaml"
    malformed = tmp_path / "malformed.yaml"
    malformed.write_text("turns:\n  - reply: hello\n")
    for spec, code, last in (
        (f"script:{missing}", 2, f"Error: Invalid value for '--model': script provider: no such script file {missing}"),
        (f"script:{malformed}", 1, f"kit: {malformed}:2: script provider: turn 1 has an unknown key 'reply' "
                                   "(known: text, tool_calls, error, usage, finish_reason, delay_s)"),
    ):
        for args in (("run", "hi"), ("run",)):  # one turn and the REPL alike
            result = cli(*args, "-w", ws_path, "--model", spec)
            assert result.exit_code == code, (spec, result.output)
            assert result.stderr.splitlines()[-1] == last
            assert "Usage:" not in result.stderr or code == 2
            assert result.stdout == ""


def test_a_run_that_fails_before_any_reply_leaves_no_session(ws_path, tmp_path, cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    set_config(ws_path, QUIET)
    failing = write_script(tmp_path, [{"error": {"kind": "auth", "message": "bad key"}}], name="fail.yaml")
    failed = cli("run", "hi", "-w", ws_path, "--model", f"script:{failing}")
    assert failed.exit_code == 1 and "kit: session" not in failed.stderr  # nothing written, nothing named
    assert cli("run", "hi", "-w", ws_path, "--model", "openai/gpt-4o-mini").exit_code == 1
    assert cli("run", "hi", "--session", "chat", "-w", ws_path, "--model",
               f"script:{tmp_path / 'missing.yaml'}").exit_code == 2  # a usage error, found first
    listed = json.loads(cli("sessions", "list", "--json", "-w", ws_path).stdout)
    assert listed["sessions"] == []
    assert list((ws_path / ".kit" / "sessions").glob("*.jsonl")) == []

    # a turn that fails after the model answered keeps its transcript
    mid = write_script(tmp_path, [{"tool_calls": [{"name": "skills_list", "arguments": {}}]},
                                  {"error": {"kind": "auth", "message": "bad key"}}], name="mid.yaml")
    result = cli("run", "list my skills", "--session", "chat", "-w", ws_path, "--model", f"script:{mid}")
    assert result.exit_code == 1
    listed = json.loads(cli("sessions", "list", "--json", "-w", ws_path).stdout)["sessions"]
    assert [(s["key"], s["title"], s["messages"]) for s in listed] == [("chat", "list my skills", 3)]
    # and names it, after the error (regression, a new-user pass: the session was written, never said)
    assert result.stderr.splitlines()[-2][:30] == "kit: no model available (scrip"
    assert result.stderr.splitlines()[-1] == f"kit: session {listed[0]['id']} kept what this turn wrote before the error"
    shown = json.loads(cli("sessions", "show", "chat", "--json", "-w", ws_path).stdout)
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool"]
    # a resumed session keeps the message of a turn whose first call failed: named too
    first_call = write_script(tmp_path, [{"error": {"kind": "auth", "message": "bad key"}}], name="first.yaml")
    again = cli("run", "hello", "--session", "chat", "-w", ws_path, "--model", f"script:{first_call}")
    assert again.exit_code == 1
    assert again.stderr.splitlines()[-1] == f"kit: session {listed[0]['id']} kept what this turn wrote before the error"
    assert json.loads(cli("sessions", "show", "chat", "--json", "-w", ws_path).stdout)["messages"][-1]["content"] == "hello"


def test_run_model_script_path_on_the_command_line_is_the_shells(ws_path, tmp_path):
    """`kit run -w WS --model script:turns.yaml` from another folder takes turns.yaml from the
    current directory, as every path typed in a shell; kit.yaml's own is the workspace's."""
    from conftest import run_kit

    set_config(ws_path, QUIET + "agent: {model: 'script:turns.yaml'}\n")
    write_script(ws_path, [{"text": "The workspace's script."}], name="turns.yaml", record=False)
    here = tmp_path / "here"
    here.mkdir()
    write_script(here, [{"text": "The current directory's script."}], name="turns.yaml", record=False)
    typed = run_kit("run", "hi", "--json", "-w", ws_path, "--model", "script:turns.yaml", cwd=here)
    assert typed.returncode == 0, typed.stderr
    assert json.loads(typed.stdout)["reply"] == "The current directory's script."
    configured = run_kit("run", "hi", "--json", "-w", ws_path, cwd=here)
    assert configured.returncode == 0, configured.stderr
    assert json.loads(configured.stdout)["reply"] == "The workspace's script."


def test_run_model_script_missing_here_points_at_the_workspaces_file(ws_path, tmp_path):
    """Regression (new user): `--model script:turns.yaml` from another folder said only 'no such
    script file <cwd>/turns.yaml' while the workspace had a turns.yaml."""
    from conftest import run_kit

    write_script(ws_path, [{"text": "The workspace's script."}], name="turns.yaml", record=False)
    here = tmp_path / "here"
    here.mkdir()
    done = run_kit("run", "hi", "-w", ws_path, "--model", "script:turns.yaml", cwd=here)
    assert done.returncode == 2
    assert (f"Invalid value for '--model': script provider: no such script file {here.resolve() / 'turns.yaml'} "
            f"(a path typed on the command line is the current directory's; the workspace's is "
            f"script:{ws_path / 'turns.yaml'})") in " ".join(done.stderr.split())
    # regression (a new-user pass): from inside the workspace both paths are one file: no such hint
    (ws_path / "bad.yaml").write_text("turns:\n  - txt: a\n")
    inside = run_kit("run", "hi", "-w", ws_path, "--model", "script:bad.yaml", cwd=ws_path)
    assert inside.returncode == 1 and "turn 1 has an unknown key 'txt'" in inside.stderr
    assert "a path typed on the command line" not in inside.stderr


# ---------------------------------------------------------------------------- found by a new user


def test_a_bad_provider_base_url_is_a_config_error_not_a_traceback(ws_path, cli):
    """Regression: `base_url: notaurl` was accepted by `kit config show` (exit 0), then `kit run hi`
    ended in a traceback from probe_template (ValueError: unknown url type), a trailing space in
    http.client.InvalidURL."""
    for value, shown in (("notaurl", "'notaurl'"),
                         ('"http://127.0.0.1:18080/v1 "', "'http://127.0.0.1:18080/v1 ' (no spaces or control characters)")):
        set_config(ws_path, QUIET + f"providers:\n  lab:\n    type: openai\n    base_url: {value}\nagent:\n  model: lab/x\n")
        problem = f"kit.yaml:6: 'providers.lab.base_url' must be an http:// or https:// URL, not {shown}"
        shown_config = cli("config", "show", "-w", ws_path)
        assert shown_config.exit_code == 1
        assert shown_config.stderr == f"kit: warning: {problem} (ignored until fixed; the valid settings apply)\n"
        result = cli("run", "hi", "-w", ws_path)
        assert result.exit_code == 1
        assert result.stderr.splitlines() == [
            f"kit: warning: {problem} (ignored until fixed; the valid settings apply)",
            f"kit: no model available (lab/x config: provider 'lab' is left out until kit.yaml:6 is fixed: "
            f"{problem.removeprefix('kit.yaml:6: ')}). To fix: fix kit.yaml:6.",
        ]
        assert result.stdout == ""
        # named with --model: the same truth, not "unknown provider 'lab' … add providers.lab"
        named = cli("run", "hi", "-w", ws_path, "--model", "lab/x")
        assert named.exit_code == 2
        assert (f"Invalid value for '--model': provider 'lab' is left out until kit.yaml:6 is fixed: "
                f"{problem.removeprefix('kit.yaml:6: ')}") in " ".join(named.stderr.split())


def test_kit_run_refuses_to_start_while_kit_yaml_does_not_load(ws_path, tmp_path, cli):
    """Regression: a YAML syntax error made a one-shot `kit run` go to the default model (the
    message could go where the user never chose) and then advise setting agent.model, which the
    user had set. Now one line, exit 1, before a session or a request — one-shot and REPL alike."""
    script = write_script(tmp_path, [{"text": "should not be asked"}])
    set_config(ws_path, QUIET + "agent:\n  model: lab/x\nagent: [\n")
    for args in (("run", "hi"), ("run", "hi", "--json"), ("run", "hi", "--model", f"script:{script}"), ("run",)):
        result = cli(*args, "-w", ws_path, input="hi\n")
        assert result.exit_code == 1, args
        assert result.stderr == (
            "kit: kit.yaml:6: invalid YAML: expected the node content, but found '<stream end>'; kit run does "
            "not start until this file loads: none of its settings (agent.model, providers, tools.exec …) "
            "would apply\n"), args
        assert result.stdout == ""
    assert recorded_calls(script) == []
    assert not (ws_path / ".kit" / "sessions").exists() or list((ws_path / ".kit" / "sessions").iterdir()) == []
    # a bad value in a file that loads is still a warning: the run goes on
    set_config(ws_path, QUIET + "agent:\n  max_iteratons: 3\n")
    result = cli("run", "hi", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 0, result.output


def test_the_script_providers_made_up_counts_report_no_estimate_error(ws_path, tmp_path, cli):
    """Regression: `"estimate_error": 1.48` from the script's made-up usage; docs/agent.md: present
    when the server reported usage, and the script's counts are made up."""
    set_config(ws_path, QUIET)
    script = write_script(tmp_path, [{"text": "hello", "usage": {"prompt_tokens": 120, "completion_tokens": 9}}])
    result = cli("run", "q", "--json", "-w", ws_path, "--model", f"script:{script}")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["usage"] == {
        "prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129, "cache_read_tokens": 0,
        "cache_write_tokens": 0, "model_calls": 1, "context_tokens": json.loads(result.stdout)["usage"]["context_tokens"],
        "context_window": 32000}


def test_a_malformed_script_under_home_is_an_error_in_it_too(ws_path, tmp_path, cli, monkeypatch):
    """Review: `script:~/bad.yaml` was not expanded when telling a malformed file from a missing one."""
    set_config(ws_path, QUIET)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "bad.yaml").write_text("turns:\n\t- text: hi\n")
    result = cli("run", "hi", "-w", ws_path, "--model", "script:~/bad.yaml")
    assert result.exit_code == 1 and "Usage:" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"kit: {tmp_path / 'bad.yaml'}:2: script provider: invalid YAML")
