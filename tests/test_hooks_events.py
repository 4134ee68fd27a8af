"""Every declared hook event fires, at its moment, with its documented payload (issue 12,
deliver 5): a `*` hook records what it sees during a dream that promotes, a watched edit, a
config change, a heartbeat run and a custom REPL command."""

from __future__ import annotations

import io
import json
import time

import pytest
from rich.console import Console

from helpers_agent import add_hook, agent_for, write_script
from helpers_dream import days, recall, write_note
from helpers_hooks import hooks_log
from kit.hooks.events import KNOWN_EVENTS

RECORDER = """
import json, pathlib
def handle(event):
    path = pathlib.Path(event.workspace) / ".kit" / "events.jsonl"
    path.parent.mkdir(exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps({"type": event.type, "data": event.data}, default=str) + "\\n")
"""


def seen(ws) -> list[dict]:
    path = ws.root / ".kit" / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def types(ws) -> list[str]:
    return [e["type"] for e in seen(ws)]


@pytest.fixture
def ws(workspace, kit_now):
    kit_now("2026-05-07T09:00:00+00:00")
    add_hook(workspace, "recorder", ["*"], handler=RECORDER)
    return workspace


def test_dream_start_promoted_per_entry_and_end_with_the_phase_summary(ws, monkeypatch):
    facts = ["Alice takes her coffee with oat milk, never dairy.", "Deploys happen on Tuesdays after the standup."]
    write_note(ws.root, "2026-05-01", facts)
    for d_i, day in enumerate(days("2026-05-03", 4)):
        for f_i, fact in enumerate(facts):
            recall(ws, day, fact, f"question {d_i} {f_i}", score=0.85, note_day="2026-05-01", hour=8 + f_i)
    monkeypatch.setenv("KIT_NOW", "2026-05-06T20:00:00+00:00")
    result = ws.dream()
    assert result.promoted == ("memory/2026-05-01.md:3:3", "memory/2026-05-01.md:4:4")
    events = seen(ws)
    dream = [e for e in events if e["type"].startswith(("dream:", "memory:promoted"))]
    assert [e["type"] for e in dream] == ["dream:start", "memory:promoted", "memory:promoted", "dream:end"]
    assert dream[0]["data"] == {"phases": ["light", "rem", "deep"], "day": "2026-05-06"}
    promoted = [e["data"] for e in dream[1:3]]
    assert [(p["key"], p["text"], p["path"]) for p in promoted] == [
        ("memory/2026-05-01.md:3:3", f"- {facts[0]}", "memory/2026-05-01.md"),
        ("memory/2026-05-01.md:4:4", f"- {facts[1]}", "memory/2026-05-01.md")]
    scores = {r.cand.key: round(r.score.total, 6) for r in result.ranked}
    assert [p["score"] for p in promoted] == [scores[p["key"]] for p in promoted]
    end = dream[3]["data"]
    assert end["ok"] is True and end["error"] is None
    assert end["promoted"] == list(result.promoted) and end["changed"] == list(result.changed)
    assert end["light"] == {"considered": result.light.considered, "staged": len(result.light.staged)}
    assert end["rem"] == {"considered": result.rem.considered, "themes": len(result.rem.themes),
                          "truths": len(result.rem.truths)}
    assert end["deep"] == {"candidates": len(result.ranked), "promoted": 2, "retired": 0, "demoted": 0}
    # a * hook on a plain dream saw more than memory:write (what issue 12 found)
    assert "memory:write" not in types(ws)


def test_a_dry_run_fires_nothing(ws):
    ws.dream(dry_run=True)
    assert types(ws) == []


def test_a_failed_dream_still_ends(ws, monkeypatch):
    from kit.dreaming import runner

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(runner, "_run", boom)
    with pytest.raises(RuntimeError):
        ws.dream()
    end = seen(ws)[-1]
    assert end["type"] == "dream:end" and end["data"]["ok"] is False
    assert end["data"]["error"] == "RuntimeError: disk on fire"


def test_workspace_loaded_once_then_changed_and_config_reloaded_on_watched_edits(ws, tmp_path):
    from kit.workspace import Workspace

    fresh = Workspace.open(ws.root)  # the recorder is trusted; a new process would open it like this
    assert types(fresh) == []  # opening alone (kit memory search, kit doctor …) runs no hook
    with fresh.watch(debounce_ms=50) as watcher:
        loaded = seen(fresh)
        assert [e["type"] for e in loaded] == ["workspace:loaded"]
        assert loaded[0]["data"]["by"] == "watch"
        assert loaded[0]["data"]["version"] == fresh.version
        assert "SOUL.md" in loaded[0]["data"]["documents"] and loaded[0]["data"]["problems"] == []
        (fresh.root / "SOUL.md").write_text("# Soul\n\nCalm and brief.\n")
        assert watcher.wait_until(lambda w: "workspace:changed" in types(fresh), timeout=20)
        (fresh.root / "kit.yaml").write_text((fresh.root / "kit.yaml").read_text() + "\nhooks:\n  timeout_s: 7\n")
        assert watcher.wait_until(lambda w: "config:reloaded" in types(fresh), timeout=20)
        (fresh.root / "kit.yaml").write_text((fresh.root / "kit.yaml").read_text() + "\nagent: [not, a, mapping]\n")
        assert watcher.wait_until(lambda w: types(fresh).count("config:reloaded") == 2, timeout=20)
    changed = [e["data"] for e in seen(fresh) if e["type"] == "workspace:changed"]
    assert changed[0]["changed"] == ["SOUL.md"] and changed[0]["problems"] == []
    reloaded = [e["data"] for e in seen(fresh) if e["type"] == "config:reloaded"]
    assert reloaded[0]["ok"] is True and reloaded[0]["changed_keys"] == ["hooks.timeout_s"]
    assert reloaded[1]["ok"] is False and reloaded[1]["changed_keys"] == []  # the last good config stays
    assert reloaded[1]["problems"] and reloaded[1]["problems"][0].startswith("kit.yaml:")
    # a second watcher or an agent on the same workspace does not load it again
    with fresh.watch(debounce_ms=50):
        pass
    assert types(fresh).count("workspace:loaded") == 1


def test_an_agent_loads_the_workspace_before_its_session_starts(ws, tmp_path):
    script = write_script(tmp_path, [{"text": "hello"}])
    agent = agent_for(ws, script)
    agent.turn("hi")
    agent.close()
    assert types(ws)[:2] == ["workspace:loaded", "session:start"]
    assert seen(ws)[0]["data"]["by"] == "agent"


def test_heartbeat_fires_after_a_heartbeat_run_and_when_it_is_skipped(ws, tmp_path):
    (ws.root / "HEARTBEAT.md").write_text("# Heartbeat\n\n- Check the backup log\n")
    ws.reload()
    script = write_script(tmp_path, [{"text": "HEARTBEAT_OK"}])
    agent = agent_for(ws, script, kind="heartbeat")
    agent.turn("heartbeat")
    beats = [e["data"] for e in seen(ws) if e["type"] == "heartbeat"]
    assert beats == [{"session_id": agent.session.id, "skipped": False, "reply": "HEARTBEAT_OK",
                      "stopped": None, "ok": True, "tool_calls": []}]
    (ws.root / "HEARTBEAT.md").write_text("# Heartbeat\n")
    ws.reload()
    agent.turn("heartbeat")
    agent.close()
    beats = [e["data"] for e in seen(ws) if e["type"] == "heartbeat"]
    assert beats[1]["skipped"] is True and beats[1]["stopped"] == "skipped"


def _repl(ws, agent, lines):
    from kit.cli.repl import Repl

    out = io.StringIO()
    feed = iter(lines)

    def read(prompt):
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    return Repl(ws, agent, console=Console(file=out, width=120, color_system=None), input_func=read), out


def test_a_hook_adds_a_repl_command(ws, tmp_path):
    add_hook(ws, "deploy", ["command:deploy"], handler="""
def handle(event):
    return {"reply": f"deploying {event.data['args']} (asked in {event.data['session_id']})"}
""")
    add_hook(ws, "say-hi", ["command:hi"], command="echo hello from a shell hook")
    script = write_script(tmp_path, [])
    agent = agent_for(ws, script)
    repl, out = _repl(ws, agent, ["/deploy billing", "/hi", "/nosuch", "/help"])
    repl.run()
    text = out.getvalue()
    assert f"deploying billing (asked in {agent.session.id})" in text
    assert "hello from a shell hook" in text
    assert "unknown command /nosuch" in text
    assert "unknown command /deploy" not in text and "unknown command /hi" not in text
    assert "/deploy  test hook deploy (hook deploy)" in text
    # command:<name> fired for the unknown one too, before the refusal (the * recorder saw it)
    fired = [e["data"] for e in seen(ws) if e["type"].startswith("command:")]
    assert [(e["command"], e["args"]) for e in fired][:3] == [("deploy", "billing"), ("hi", ""), ("nosuch", "")]


def test_every_declared_event_fires_somewhere():
    # the list is what docs/hooks.md documents; each is fired by a test in this file or elsewhere
    assert set(KNOWN_EVENTS) == {
        "workspace:loaded", "workspace:changed", "config:reloaded", "agent:bootstrap", "session:start",
        "session:end", "command:new", "command:reset", "message:received", "message:sent", "tool:before",
        "tool:after", "memory:write", "compaction:before", "compaction:after", "dream:start", "dream:end",
        "memory:promoted", "heartbeat"}


# --------------------------------------------------------------------------- isolation (deliver 6)


def test_a_python_handlers_output_goes_to_its_log_not_kits_stdout(ws_path):
    from conftest import run_kit
    from helpers_hooks import write_hook

    write_hook(ws_path / "hooks", "chatty", ["message:received", "session:start"], handler="""
import sys
def handle(event):
    print("chatty says hello on stdout")
    print("and on stderr", file=sys.stderr)
    sys.stdout.write("raw write\\n")
""")
    env = {"KIT_NOW": "2026-05-07T09:00:00+00:00"}
    assert run_kit("hooks", "trust", "chatty", "-w", ws_path, env=env).returncode == 0
    script = write_script(ws_path, [{"text": "the reply"}], record=False)
    done = run_kit("run", "--json", "--model", f"script:{script}", "-w", ws_path, "hi", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # one JSON document, nothing else on stdout
    assert data["reply"] == "the reply"
    assert "chatty" not in done.stdout and "chatty" not in done.stderr
    log = hooks_log(ws_path)
    assert "OUTPUT message:received hook=chatty: chatty says hello on stdout ⏎ [stderr] and on stderr" in log
    assert "raw write" in log


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("detach", ["setsid sleep 300", "sleep 300", "nohup setsid sh -c 'sleep 300'"])
def test_a_command_hooks_children_end_with_it_even_detached(ws, detach):
    pidfile = ws.root / ".kit" / "child.pid"
    pidfile.parent.mkdir(exist_ok=True)
    # the command returns at once, leaving a child that left its process group (setsid)
    add_hook(ws, "spawner", ["memory:write"],
             command=f"{detach} > /dev/null 2>&1 < /dev/null & echo $! > {pidfile}; exit 0")
    outcome = ws.hooks.fire("memory:write", {"source": "test"})
    assert outcome.errors == [] and "spawner" in outcome.ran
    pid = int(pidfile.read_text())
    assert _wait_gone(pid), f"child {pid} outlived the hook"
    assert "ENDED memory:write hook=spawner: " in hooks_log(ws.root)


def test_a_setsid_child_of_a_timed_out_command_is_ended(ws):
    pidfile = ws.root / ".kit" / "slow.pid"
    pidfile.parent.mkdir(exist_ok=True)
    add_hook(ws, "slow", ["memory:write"], timeout_s=1,
             command=f"setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > {pidfile}; sleep 60")
    outcome = ws.hooks.fire("memory:write", {"source": "test"})
    assert outcome.errors == ["slow: timed out after 1s (command killed)"]
    assert _wait_gone(int(pidfile.read_text()))


def test_a_command_that_keeps_its_pipe_open_in_a_child_still_returns(ws):
    # `sleep &` inherits stdout: before, Kit waited for EOF until the timeout and called it a hang
    add_hook(ws, "bg", ["command:bg"], timeout_s=20, command='sleep 300 & echo "started"')
    outcome = ws.hooks.fire("command:bg", {"command": "bg", "args": ""})
    assert outcome.errors == [] and outcome.replies == ["started"]  # exit 0, not "timed out"


def test_a_process_caught_mid_exec_is_still_found_by_its_token(monkeypatch):
    # between execve's swap of the memory image and the new stack, /proc/PID/environ reads as
    # empty: a `setsid` child of a hook caught there had left the group and showed no token, so
    # the one scan after the shell ended missed it (seen once under load: a `nohup setsid sh -c`
    # child outlived its hook). An empty environment is read again.
    import os
    import subprocess

    from kit.hooks import runner

    child = subprocess.Popen(["sleep", "30"], env={**os.environ, runner.RUN_TOKEN: "tok-mid-exec"},
                             start_new_session=True)
    try:
        real, calls = runner._environ, {"n": 0}

        def mid_exec(pid: int) -> bytes:
            if pid == child.pid and calls["n"] < 3:
                calls["n"] += 1
                return b""  # what the kernel shows while the image is being replaced
            return real(pid)

        monkeypatch.setattr(runner, "_environ", mid_exec)
        assert child.pid in runner._run_pids(os.getpid() + 10**6, "tok-mid-exec")  # no such group
        assert calls["n"] == 3
        assert child.pid not in runner._run_pids(os.getpid() + 10**6, "another-run")
    finally:
        child.kill()
        child.wait()


def test_an_environment_less_process_older_than_the_run_is_read_once(tmp_path, monkeypatch):
    # Regression: a process of `env -i` (an empty environment for good, not mid-exec) was read
    # again 20 times, 5 ms apart, in every scan of every command hook's end: ~100 ms a hook while
    # such a process lived anywhere on the machine. A process older than the run's shell is not
    # the run's; it is read once.
    import os
    import subprocess
    import time

    from kit.hooks import runner

    bare = subprocess.Popen(["/bin/sleep", "30"], env={})
    try:
        assert runner._environ(bare.pid) == b""  # what `env -i` leaves, as mid-exec does
        time.sleep(0.05)  # start times count in clock ticks (10 ms): the run's shell starts ticks later
        real, reads = runner._environ, []

        def counting(pid: int) -> bytes:
            reads.append(pid)
            return real(pid)

        monkeypatch.setattr(runner, "_environ", counting)
        result = runner.run_shell("echo done", cwd=tmp_path, env=dict(os.environ), timeout_s=10, end_all=True)
        assert (result.returncode, result.stdout, result.ended) == (0, "done\n", 0)
        assert reads.count(bare.pid) == 1  # one scan, one read: not waited for
    finally:
        bare.kill()
        bare.wait()
