"""kit cron (fake crontab via KIT_CRONTAB, systemd units under XDG_CONFIG_HOME), the serve scheduler, doctor."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from datetime import UTC, datetime

import pytest

from kit.dreaming.cron import on_calendar
from kit.dreaming.schedule import Scheduler, next_run

FAKE_CRONTAB = """#!/bin/sh
F="$(dirname "$0")/table"
if [ "$1" = "-l" ]; then
  [ -f "$F" ] || { echo "no crontab for tester" >&2; exit 1; }
  cat "$F"; exit 0
fi
if [ "$1" = "-" ]; then cat > "$F"; exit 0; fi
exit 2
"""


@pytest.fixture
def crontab(tmp_path, monkeypatch):
    folder = tmp_path / "fakecron"
    folder.mkdir()
    script = folder / "crontab"
    script.write_text(FAKE_CRONTAB)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (folder / "table").write_text("MAILTO=me@example.com\n15 * * * * /usr/bin/backup --quick\n")
    monkeypatch.setenv("KIT_CRONTAB", str(script))
    return folder / "table"


def test_cron_install_twice_show_uninstall(workspace, cli, crontab):
    root = workspace.root
    res = cli("cron", "install", "--json", "-w", root)
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["changed"] is True and data["kind"] == "crontab"
    line = data["entry"]
    assert line.startswith(f"0 3 * * * mkdir -p {root}/.kit/logs 2>/dev/null; /") and f" dream -w {root} " in line
    assert f">> {root}/.kit/logs/dream.log 2>&1 # kit:dream {root}" in line
    kit_path = line.split()[9]
    assert os.path.isabs(kit_path) and kit_path.endswith("kit")
    assert (root / ".kit" / "logs").is_dir()
    # as cron runs it, with .kit/ deleted since (Kit rebuilds it; the shell's redirect did not)
    import shutil
    import subprocess

    shutil.rmtree(root / ".kit")
    command = line.split(" ", 5)[5].rsplit(" # kit:dream", 1)[0].replace(kit_path, "echo dreamt", 1)
    subprocess.run(["sh", "-c", command], check=True)
    assert (root / ".kit" / "logs" / "dream.log").read_text() == f"dreamt dream -w {root}\n"
    again = json.loads(cli("cron", "install", "--json", "-w", root).output)
    assert again["changed"] is False
    table = crontab.read_text()
    assert table == f"MAILTO=me@example.com\n15 * * * * /usr/bin/backup --quick\n{line}\n"
    shown = json.loads(cli("cron", "show", "--json", "-w", root).output)
    assert shown["installed"] is True and shown["entry"] == line
    # a schedule change replaces the line, still one line
    workspace.write_text("kit.yaml", "dreaming:\n  schedule: '30 4 * * 1-5'\n")
    cli("cron", "install", "-w", root)
    assert crontab.read_text().count("# kit:dream") == 1
    assert "30 4 * * 1-5 " in crontab.read_text()
    res = cli("cron", "uninstall", "--json", "-w", root)
    assert json.loads(res.output)["changed"] is True
    assert crontab.read_text() == "MAILTO=me@example.com\n15 * * * * /usr/bin/backup --quick\n"
    assert json.loads(cli("cron", "show", "--json", "-w", root).output)["installed"] is False


def test_cron_other_workspace_line_untouched(workspace, cli, crontab, tmp_path):
    other = f"0 3 * * * /x/kit dream -w {workspace.root}2 # kit:dream {workspace.root}2\n"
    crontab.write_text(other)
    cli("cron", "install", "-w", workspace.root)
    cli("cron", "uninstall", "-w", workspace.root)
    assert crontab.read_text() == other


def test_cron_escapes_percent_signs(tmp_path, cli, crontab, monkeypatch):
    """cron reads % in a command as a newline: a workspace path with % must be escaped."""
    from kit.init import init_workspace

    root = tmp_path / "100%notes"
    init_workspace(root)
    data = json.loads(cli("cron", "install", "--json", "-w", root).output)
    escaped = str(root).replace("%", "\\%")
    assert data["entry"].endswith(f" dream -w {escaped} >> {escaped}/.kit/logs/dream.log 2>&1 # kit:dream {escaped}")
    assert "%" not in data["entry"].replace("\\%", "")
    assert json.loads(cli("cron", "install", "--json", "-w", root).output)["changed"] is False
    assert json.loads(cli("cron", "show", "--json", "-w", root).output)["entry"] == data["entry"]
    cli("cron", "uninstall", "-w", root)
    assert crontab.read_text() == "MAILTO=me@example.com\n15 * * * * /usr/bin/backup --quick\n"
    # systemd expands %-specifiers: the same path is written with %%
    monkeypatch.setenv("KIT_SYSTEMCTL", "true")
    files = json.loads(cli("cron", "install", "--systemd", "--json", "-w", root).output)["files"]
    service = open(files[0]).read()
    doubled = str(root).replace("%", "%%")
    assert f" dream -w {doubled}\n" in service and f"StandardOutput=append:{doubled}/.kit/logs/dream.log\n" in service
    assert "%" not in service.replace("%%", "")


def test_cron_empty_table(workspace, cli, crontab):
    crontab.unlink()
    res = cli("cron", "install", "-w", workspace.root)
    assert res.exit_code == 0
    assert crontab.read_text().count("\n") == 1


@pytest.fixture
def systemctl_log(tmp_path, monkeypatch):
    """A fake systemctl (KIT_SYSTEMCTL) that logs its arguments, one call per line, to the returned file."""
    log = tmp_path / "systemctl.log"
    fake = tmp_path / "systemctl"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("KIT_SYSTEMCTL", str(fake))
    return log


def test_systemd_units(workspace, cli, systemctl_log):
    log = systemctl_log
    workspace.write_text("kit.yaml", "dreaming:\n  schedule: '0 3 * * *'\n  timezone: Europe/Berlin\n")
    data = json.loads(cli("cron", "install", "--systemd", "--json", "-w", workspace.root).output)
    assert data["entry"] == "*-*-* 03:00:00 Europe/Berlin"
    folder = os.path.join(os.environ["XDG_CONFIG_HOME"], "systemd", "user")
    names = sorted(os.listdir(folder))
    assert len(names) == 2 and names[0].endswith(".service") and names[1].endswith(".timer")
    timer = open(os.path.join(folder, names[1])).read()
    assert "OnCalendar=*-*-* 03:00:00 Europe/Berlin\n" in timer and "Persistent=true" in timer
    service = open(os.path.join(folder, names[0])).read()
    assert f"dream -w {workspace.root}\n" in service
    name = names[1]
    assert log.read_text().splitlines() == ["--user daemon-reload", f"--user enable --now {name}"]
    shown = json.loads(cli("cron", "show", "--systemd", "--json", "-w", workspace.root).output)
    assert shown["installed"] is True
    cli("cron", "uninstall", "--systemd", "-w", workspace.root)
    assert os.listdir(folder) == []
    assert log.read_text().splitlines()[-2:] == [f"--user disable --now {name}", "--user daemon-reload"]


def test_on_calendar_conversion():
    assert on_calendar("0 3 * * *") == ("*-*-* 03:00:00",)
    assert on_calendar("*/15 9-17 * * 1-5") == ("Mon..Fri *-*-* 09..17:00/15:00",)
    assert on_calendar("30 2 1 */3 *") == ("*-01/3-01 02:30:00",)
    assert on_calendar("@daily", "UTC") == ("daily UTC",)


def test_a_day_of_the_month_or_of_the_week_is_two_timer_values(workspace, cli, systemctl_log):
    """Regression (a new-user pass): "0 3 1 * 1" became `OnCalendar=Mon *-*-01 03:00:00` — the 1st
    when it is a Monday — while cron and `kit serve` (croniter) dream on the 1st and every Monday."""
    assert on_calendar("0 3 1 * 1", "UTC") == ("Mon *-*-* 03:00:00 UTC", "*-*-01 03:00:00 UTC")
    assert on_calendar("0 3 1,15 */2 1-5") == ("Mon..Fri *-01/2-* 03:00:00", "*-01/2-01,15 03:00:00")
    # the days the two values name are the days croniter gives
    after = datetime(2026, 12, 2, tzinfo=UTC)
    runs, t = [], after
    for _ in range(8):
        t = next_run("0 3 1 * 1", "UTC", t)
        runs.append(t.strftime("%a %d"))
    assert runs == ["Mon 07", "Mon 14", "Mon 21", "Mon 28", "Fri 01", "Mon 04", "Mon 11", "Mon 18"]
    assert all(r.startswith("Mon") or r.endswith(" 01") for r in runs)
    workspace.write_text("kit.yaml", "dreaming:\n  schedule: '0 3 1 * 1'\n  timezone: UTC\n")
    data = json.loads(cli("cron", "install", "--systemd", "--json", "-w", workspace.root).output)
    assert data["entry"] == "Mon *-*-* 03:00:00 UTC; *-*-01 03:00:00 UTC"
    folder = os.path.join(os.environ["XDG_CONFIG_HOME"], "systemd", "user")
    timer = open(os.path.join(folder, next(n for n in os.listdir(folder) if n.endswith(".timer")))).read()
    assert "OnCalendar=Mon *-*-* 03:00:00 UTC\nOnCalendar=*-*-01 03:00:00 UTC\nPersistent=true\n" in timer
    shown = json.loads(cli("cron", "show", "--systemd", "--json", "-w", workspace.root).output)
    assert shown["entry"] == data["entry"]


def test_next_run_in_timezone():
    after = datetime(2026, 5, 7, 1, 30, tzinfo=UTC)
    nxt = next_run("0 3 * * *", "Europe/Berlin", after)  # 03:30 Berlin already passed 03:00
    assert nxt.isoformat() == "2026-05-08T03:00:00+02:00"
    assert next_run("0 3 * * *", "UTC", after).isoformat() == "2026-05-07T03:00:00+00:00"


def test_without_a_timezone_the_schedule_follows_the_kit_clock(monkeypatch):
    monkeypatch.setenv("KIT_NOW", "2026-05-07T10:00:00+05:00")  # KIT_NOW stands in for local time
    after = datetime(2026, 5, 7, 1, 30, tzinfo=UTC)  # 06:30 at +05:00
    assert next_run("0 3 * * *", None, after).isoformat() == "2026-05-08T03:00:00+05:00"


def test_scheduler_fires_once_per_slot():
    s = Scheduler()
    t0 = datetime(2026, 5, 7, 2, 59, tzinfo=UTC)
    assert s.due("0 3 * * *", "UTC", t0) is False  # first call only arms it
    assert s.due("0 3 * * *", "UTC", t0.replace(minute=59, second=30)) is False
    assert s.due("0 3 * * *", "UTC", datetime(2026, 5, 7, 3, 0, 2, tzinfo=UTC)) is True
    assert s.due("0 3 * * *", "UTC", datetime(2026, 5, 7, 3, 0, 7, tzinfo=UTC)) is False
    assert s.next.isoformat() == "2026-05-08T03:00:00+00:00"


def test_doctor_reports_lock_and_schedule(workspace):
    from kit.dreaming.runner import doctor_checks
    from kit.fsutil import LockFile

    msgs = [f.message for f in doctor_checks(workspace)]
    assert any("scheduled dreaming is off" in m for m in msgs)
    lock = LockFile(workspace.kit_dir / "locks" / "dream.lock")
    assert lock.try_acquire()
    try:
        msgs = [f.message for f in doctor_checks(workspace)]
        assert f"a dream is running (pid {os.getpid()})" in msgs
    finally:
        lock.release()
    # a pid file an older Kit (or a killed dream) left behind is no lock: nothing runs, nothing is stale
    (workspace.kit_dir / "locks" / "dream.lock").write_text("999999999:1.0")
    (workspace.kit_dir / "locks" / "dream.lock.owner").write_text("999999999:1.0")
    findings = doctor_checks(workspace)
    assert not any("dream lock" in f.message or "a dream is running" in f.message for f in findings)
    # a schedule that is not cron syntax is a config error at its line; the last good config stays
    workspace.write_text("kit.yaml", "dreaming:\n  enabled: true\n  schedule: 'every night'\n")
    from kit.doctor import run_checks

    findings = run_checks(workspace)
    assert any(f.severity == "error" and f.path == "kit.yaml" and f.line == 3
               and "not a valid cron expression" in f.message for f in findings)
    assert any("scheduled dreaming is off" in f.message for f in doctor_checks(workspace))


def _serve_until_dreaming_line(workspace) -> tuple[list[str], int, str, str]:
    """Start `kit serve`, read stderr up to its first `dreaming:` line, then SIGTERM it."""
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, KIT_NOW="2026-05-07T12:00:00+00:00")
    proc = subprocess.Popen([sys.executable, "-m", "kit", "serve", "-w", str(workspace.root)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line.strip())
            if line.startswith("dreaming:"):
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    return lines, proc.returncode, out, err


def test_serve_starts_announces_schedule_and_stops_on_sigterm(workspace):
    workspace.write_text("kit.yaml", "dreaming:\n  enabled: true\n  schedule: '0 3 * * *'\n  timezone: UTC\n")
    lines, code, out, err = _serve_until_dreaming_line(workspace)
    assert lines[0] == f"serving {workspace.root}; Ctrl-C to stop"
    assert lines[-1] == "dreaming: next run 2026-05-08T03:00+00:00 ('0 3 * * *', UTC)"
    assert code == 0, err
    assert out == ""


def test_serve_survives_a_bad_schedule(workspace):
    """A schedule that is not cron syntax pauses dreaming with the reason; the watcher keeps serving
    (before, the ConfigError ended `kit serve`, e.g. after an edit of kit.yaml)."""
    workspace.write_text("kit.yaml", "dreaming:\n  enabled: true\n  schedule: 'every night'\n")
    lines, code, out, err = _serve_until_dreaming_line(workspace)
    # the bad value is rejected where it is written; every valid key (enabled) still applies
    assert lines[-1].startswith("dreaming: next run ") and "'0 3 * * *'" in lines[-1], lines
    assert code == 0, err  # still running when SIGTERM came
    assert out == ""


def test_cron_failure_without_stderr_names_exit_code(workspace, cli, tmp_path, monkeypatch):
    script = tmp_path / "silentcron"
    script.write_text("#!/bin/sh\nexit 3\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("KIT_CRONTAB", str(script))
    for command in ("install", "show"):
        res = cli("cron", command, "-w", workspace.root)
        assert res.exit_code != 0
        assert "kit: crontab -l failed: exit code 3 and no error message" in res.output


def test_no_crontab_command_is_one_sentence_with_the_way_out(workspace, cli, tmp_path, monkeypatch):
    # was "crontab is not installed (crontab); use …": the command named twice, no subject
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("KIT_CRONTAB", raising=False)
    for command in ("install", "show"):
        res = cli("cron", command, "-w", workspace.root)
        assert res.exit_code == 1
        assert res.stderr == ("kit: there is no crontab command on this machine, so the schedule cannot go into "
                              "cron: use `kit cron install --systemd` (a systemd user timer) or keep `kit serve` "
                              "running instead\n")
    monkeypatch.setenv("KIT_CRONTAB", str(tmp_path / "nowhere" / "crontab"))
    res = cli("cron", "install", "-w", workspace.root)
    assert res.stderr.startswith(f"kit: there is no crontab command at {tmp_path / 'nowhere' / 'crontab'} (KIT_CRONTAB), ")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
@pytest.mark.parametrize("schedule", ["0 3 1 * 1", "0 3 * * 1-5", "30 2 1 */3 *", "*/15 9-17 * * 1-5",
                                      "0 3 1,15 */2 1-5", "0 3 * * *"])
def test_the_timer_fires_when_kit_serve_would(schedule):
    """systemd itself (systemd-analyze) reads the timer's values: their next elapses, together, are
    the next runs croniter gives `kit serve` for the same dreaming.schedule."""
    import subprocess

    n = 12
    now = datetime(2026, 12, 2, 0, 0, tzinfo=UTC)
    out = subprocess.run(["systemd-analyze", "calendar", f"--iterations={n}", "--base-time=2026-12-02 00:00:00 UTC",
                          *on_calendar(schedule, "UTC")],
                         capture_output=True, text=True, check=True).stdout
    found = re.findall(r"(?:Next elapse|Iter\. #\d+): \w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", out)
    timer = sorted({datetime.strptime(f, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) for f in found})[:n]
    runs, t = [], now
    for _ in range(n):
        t = next_run(schedule, "UTC", t)
        runs.append(t)
    assert timer == runs


def test_serve_says_what_each_reload_did_and_when_it_stops(workspace):
    """Regression (a new-user pass): `kit serve` printed a broken kit.yaml as `kit: kit watch: …`
    (another command's name, without what stays in force), nothing when it was fixed, and nothing
    when it stopped."""
    import signal
    import subprocess
    import sys
    import threading
    import time
    from queue import Empty, Queue

    workspace.write_text("kit.yaml", "dreaming:\n  enabled: false\n")
    env = dict(os.environ, KIT_NOW="2026-05-07T12:00:00+00:00")
    proc = subprocess.Popen([sys.executable, "-m", "kit", "serve", "-w", str(workspace.root)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    queue: Queue[str] = Queue()
    threading.Thread(target=lambda: [queue.put(line) for line in proc.stderr], daemon=True).start()

    def until(prefix: str) -> None:
        """Read stderr lines up to one starting with `prefix` (a missing line fails in 60 s, not never)."""
        deadline = time.monotonic() + 60
        while True:
            try:
                line = queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                raise AssertionError(f"no {prefix!r} line in {lines}") from None
            lines.append(line.rstrip("\n"))
            if line.startswith(prefix):
                return

    try:
        until("dreaming:")
        (workspace.root / "kit.yaml").write_text("dreaming:\n  enabled: false\nagent: [\n")
        until("  warning:")
        (workspace.root / "kit.yaml").write_text("dreaming:\n  enabled: false\n")
        until("reloaded")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    out, err = proc.stdout.read(), "".join(queue.get() for _ in range(queue.qsize()))
    assert proc.returncode == 0 and out == ""
    assert [re.sub(r"^reloaded v\d+:", "reloaded vN:", line) for line in lines[2:]] == [
        "reloaded vN: nothing applied (the last good version stays)",
        "  warning: kit.yaml:4: invalid YAML: expected the node content, but found '<stream end>' (ignored until "
        "fixed; the last good configuration stays in force)",
        "reloaded vN: nothing changed (fixed: kit.yaml)",  # the same settings as before the broken edit
    ], lines
    assert err.splitlines()[-2:] == ["kit: stopping… (Ctrl-C again stops at once)", f"stopped serving {workspace.root}"]
    assert "kit watch" not in "\n".join(lines) + err
