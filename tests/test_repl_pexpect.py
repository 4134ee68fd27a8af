"""The REPL driven as a user would, through a real pseudo-terminal: a message, slash commands,
an edit to SOUL.md between turns that changes the next system prompt (the watcher runs), /exit."""

from __future__ import annotations

import os
import sys
import time

import pexpect

from helpers_agent import recorded_calls, set_config, write_script

PROMPT = "you> "


def spawn_repl(ws_path, script, *, columns: int) -> pexpect.spawn:
    """`kit run` without a message (the REPL) on a pseudo-terminal, with the script provider."""
    env = dict(os.environ, TERM="dumb", COLUMNS=str(columns), PYTHONUNBUFFERED="1")
    return pexpect.spawn(
        sys.executable, ["-m", "kit", "run", "-w", str(ws_path), "--model", f"script:{script}"],
        cwd=str(script.parent), env=env, encoding="utf-8", timeout=120,
    )


def test_repl_session(ws_path, tmp_path, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\nwatch:\n  debounce_ms: 50\n")
    script = write_script(tmp_path, [{"text": "Ahoy, **first** reply."}, {"text": "Second reply here."}])
    child = spawn_repl(ws_path, script, columns=120)
    try:
        child.expect("/help for commands")
        child.expect_exact(PROMPT)
        child.sendline("hello there")
        child.expect_exact("Ahoy, first reply.")
        child.expect_exact(PROMPT)

        child.sendline("/help")
        child.expect_exact("/skill")
        child.expect_exact(PROMPT)

        (ws_path / "SOUL.md").write_text("# Soul\n\nYou are Quillbeard, a cheerful pirate.\n")
        # the notice never interrupts the input line: it is printed before the next prompt
        for _ in range(200):
            time.sleep(0.1)
            child.sendline("")
            if child.expect_exact(["reloaded: SOUL.md", PROMPT]) == 0:
                break
        child.expect_exact(PROMPT)

        child.sendline("/prompt")
        child.expect_exact("Quillbeard, a cheerful pirate")
        child.expect_exact(PROMPT)

        child.sendline("We ship the billing service on Thursday.")
        child.expect_exact("Second reply here.")
        child.expect_exact(PROMPT)

        child.sendline("/bogus")
        child.expect_exact("unknown command /bogus")
        child.expect_exact(PROMPT)

        child.sendline("/exit")
        child.expect_exact("bye")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0

    calls = recorded_calls(script)
    assert len(calls) == 2
    first, second = calls[0]["messages"][0]["content"], calls[1]["messages"][0]["content"]
    assert "Quillbeard" not in first and "Quillbeard" in second
    assert [m["content"] for m in calls[1]["messages"][1:]] == [
        "hello there", "Ahoy, **first** reply.", "We ship the billing service on Thursday."]
    # leaving ended the session, and session-memory archived what the user stated in it
    archives = sorted(p.name for p in (ws_path / "memory").glob("2026-05-07-*.md"))
    assert archives == ["2026-05-07-hello-there.md"]
    archived = (ws_path / "memory" / archives[0]).read_text()
    assert "- We ship the billing service on Thursday.\n" in archived and "Ahoy" not in archived
    assert (ws_path / ".kit" / "repl_history").read_text().splitlines()[-1] == "/exit"


def test_repl_asks_before_exec(ws_path, tmp_path):
    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\ntools:\n  exec: {mode: ask}\n")
    marker_yes, marker_no = tmp_path / "yes", tmp_path / "no"
    script = write_script(tmp_path, [
        {"tool_calls": [{"name": "exec", "arguments": {"command": f"touch {marker_no}"}}]},
        {"tool_calls": [{"name": "exec", "arguments": {"command": f"touch {marker_yes}"}}]},
        {"text": "Tried both."},
    ])
    child = spawn_repl(ws_path, script, columns=200)
    try:
        child.expect_exact(PROMPT)
        child.sendline("make the markers")
        child.expect_exact("Run it? [y/N]")
        child.sendline("n")
        child.expect_exact("Run it? [y/N]")
        child.sendline("y")
        child.expect_exact("Tried both.")
        child.expect_exact(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert marker_yes.exists() and not marker_no.exists()
    results = [m["content"] for m in recorded_calls(script)[2]["messages"] if m["role"] == "tool"]
    assert results == ["exec refused: the user declined to run this command", "exit_code: 0"]


def test_repl_offers_untrusted_workspace_hooks_first(ws_path, tmp_path):
    """§6: workspace hook code runs only after the user allows it at the first interactive prompt;
    a yes trusts it (it runs, from session:start on), a no keeps it off and asks again next time."""
    from helpers_hooks import write_hook
    from kit.hooks.spec import hook_digest
    from kit.trust import TrustStore

    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    for name in ("allowed", "declined"):
        write_hook(ws_path / "hooks", name, ["session:start", "message:received"],
                   f"from pathlib import Path\n\ndef handle(event):\n"
                   f"    with open(Path(event.workspace) / '{name}.log', 'a') as f:\n"
                   f"        f.write(event.type + '\\n')\n")
    script = write_script(tmp_path, [{"text": "Noted."}, {"text": "Again."}])

    def session(answers: dict[str, str]) -> list[str]:
        asked = []
        child = spawn_repl(ws_path, script, columns=300)
        try:
            while True:
                found = child.expect([r"Workspace hook '([a-z]+)' .*Allow it to run\? \[y/N\] ", "/help for commands"])
                if found == 1:
                    break
                asked.append(child.match.group(1))
                child.sendline(answers[child.match.group(1)])
            child.expect_exact(PROMPT)
            child.sendline("hello")
            child.expect_exact("you> ")
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0
        return asked

    assert session({"allowed": "y", "declined": "n"}) == ["allowed", "declined"]
    assert (ws_path / "allowed.log").read_text().split() == ["session:start", "message:received"]
    assert not (ws_path / "declined.log").exists()
    store = TrustStore()
    assert store.is_trusted("hook", "allowed", hook_digest(ws_path / "hooks" / "allowed"))
    assert not store.is_trusted("hook", "declined", hook_digest(ws_path / "hooks" / "declined"))

    # next time only the declined hook is offered; an empty answer is a no
    assert session({"declined": ""}) == ["declined"]
    assert not (ws_path / "declined.log").exists()
    assert (ws_path / "allowed.log").read_text().split().count("message:received") == 2


def test_piped_repl_input_is_conversation_not_trust_answers(ws_path, tmp_path):
    """Without a terminal nobody can review a hook: piped lines go to the model, the hook stays off."""
    from conftest import run_kit
    from helpers_hooks import write_hook

    set_config(ws_path, "memory:\n  active_recall: {enabled: false}\n")
    write_hook(ws_path / "hooks", "guard", ["message:received"],
               "def handle(e):\n    return {'block': True, 'reason': 'guarded'}\n")
    script = write_script(tmp_path, [{"text": "Heard you."}])
    done = run_kit("run", "-w", ws_path, "--model", f"script:{script}", input="y\n/exit\n")
    assert done.returncode == 0, done.stderr
    assert "Allow it to run" not in done.stdout and "Heard you." in done.stdout
    assert recorded_calls(script)[0]["messages"][-1]["content"] == "y"
