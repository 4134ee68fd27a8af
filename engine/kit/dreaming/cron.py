"""`kit cron install|show|uninstall [--systemd]`: one marked crontab line, or a user systemd timer.

The crontab program is `crontab` unless KIT_CRONTAB names another (tests use a fake), and systemd
units go under $XDG_CONFIG_HOME/systemd/user (`systemctl` is KIT_SYSTEMCTL when set). Only the
line or units Kit wrote for this workspace are ever touched.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kit.core import WorkspaceCore
from kit.errors import KitError
from kit.fsutil import atomic_write, sha1_hex
from kit.paths import xdg_config_home

LOG_REL = ".kit/logs/dream.log"
_ALIASES = {"@hourly": "hourly", "@daily": "daily", "@midnight": "daily", "@weekly": "weekly",
            "@monthly": "monthly", "@yearly": "yearly", "@annually": "yearly"}
_DOW = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


@dataclass(frozen=True)
class CronResult:
    action: str  # install | uninstall | show
    kind: str  # crontab | systemd
    installed: bool
    changed: bool
    entry: str | None  # the crontab line, or the timer's OnCalendar
    files: tuple[str, ...] = ()
    note: str = ""

    def to_json(self) -> dict:
        return {"action": self.action, "kind": self.kind, "installed": self.installed, "changed": self.changed,
                "entry": self.entry, "files": list(self.files), "note": self.note}


def kit_command() -> str:
    """The absolute command that runs this Kit (cron has a bare PATH)."""
    beside = Path(sys.executable).parent / "kit"
    if beside.is_file() and os.access(beside, os.X_OK):
        return shlex.quote(str(beside.absolute()))
    found = shutil.which("kit")
    if found:
        return shlex.quote(str(Path(found).absolute()))
    return f"{shlex.quote(sys.executable)} -m kit"


def _cron_escape(text: str) -> str:
    """cron turns an unescaped % in the command into a newline (a path like ~/100%notes)."""
    return text.replace("%", "\\%")


def marker(root: Path) -> str:
    return _cron_escape(f"# kit:dream {root}")


def cron_line(ws: WorkspaceCore) -> str:
    root = ws.root
    schedule = ws.config.dreaming.schedule
    from kit.dreaming.schedule import validate

    validate(schedule)
    log = shlex.quote(str(root / LOG_REL))
    # the shell opens the log before kit runs: without the folder (.kit/ deleted, which loses
    # nothing else, or a fresh clone) the redirect failed and the dream never started
    folder = shlex.quote(str((root / LOG_REL).parent))
    command = _cron_escape(f"mkdir -p {folder} 2>/dev/null; "
                           f"{kit_command()} dream -w {shlex.quote(str(root))} >> {log} 2>&1")
    return f"{schedule} {command} {marker(root)}"


def _crontab() -> list[str]:
    return shlex.split(os.environ.get("KIT_CRONTAB") or "crontab")


def _failure(done: subprocess.CompletedProcess) -> str:
    """The command's own message, or its exit code when it printed nothing."""
    message = (done.stderr or "").strip() or (done.stdout or "").strip()
    return message or f"exit code {done.returncode} and no error message"


def read_crontab() -> str:
    try:
        done = subprocess.run([*_crontab(), "-l"], capture_output=True, text=True)
    except FileNotFoundError:
        raise KitError(_no_crontab()) from None
    if done.returncode != 0:
        if "no crontab" in (done.stderr or "").lower():
            return ""
        raise KitError(f"crontab -l failed: {_failure(done)}")
    return done.stdout


def _no_crontab() -> str:
    command = _crontab()[0]
    where = "on this machine" if command == "crontab" else f"at {command} (KIT_CRONTAB)"
    return (f"there is no crontab command {where}, so the schedule cannot go into cron: "
            "use `kit cron install --systemd` (a systemd user timer) or keep `kit serve` running instead")


def write_crontab(text: str) -> None:
    try:
        done = subprocess.run([*_crontab(), "-"], input=text, capture_output=True, text=True)
    except FileNotFoundError:
        raise KitError(_no_crontab()) from None
    if done.returncode != 0:
        raise KitError(f"crontab failed to install the new table: {_failure(done)}")


def _without_ours(text: str, root: Path) -> list[str]:
    mark = marker(root)
    return [line for line in text.splitlines() if not line.rstrip().endswith(mark)]


def install_cron(ws: WorkspaceCore) -> CronResult:
    (ws.root / LOG_REL).parent.mkdir(parents=True, exist_ok=True)
    current = read_crontab()
    line = cron_line(ws)
    lines = _without_ours(current, ws.root) + [line]
    new = "\n".join(lines) + "\n"
    changed = new != current
    if changed:
        write_crontab(new)
    tz = ws.config.dreaming.timezone
    note = (f"cron runs in the system time zone; dreaming.timezone ({tz}) applies to `kit serve` and --systemd"
            if tz else "")
    return CronResult("install", "crontab", True, changed, line, note=note)


def uninstall_cron(ws: WorkspaceCore) -> CronResult:
    current = read_crontab()
    lines = _without_ours(current, ws.root)
    new = "\n".join(lines) + ("\n" if lines else "")
    changed = new != current
    if changed:
        write_crontab(new)
    return CronResult("uninstall", "crontab", False, changed, None)


def show_cron(ws: WorkspaceCore) -> CronResult:
    mark = marker(ws.root)
    ours = [line for line in read_crontab().splitlines() if line.rstrip().endswith(mark)]
    return CronResult("show", "crontab", bool(ours), False, ours[0] if ours else None)


# ---------------------------------------------------------------------- systemd


def _field(value: str, kind: str) -> str:
    out = []
    for item in value.split(","):
        step = ""
        if "/" in item:
            item, step = item.split("/", 1)
            step = "/" + step
            if item == "*":
                item = "0" if kind in ("minute", "hour") else "1"
        if item == "*":
            out.append("*" + step)
            continue
        if kind == "dow":
            ends = item.split("-")
            names = [_DOW[int(e)] if e.isdigit() else e.capitalize()[:3] for e in ends]
            out.append("..".join(names) + step)
            continue
        ends = [f"{int(e):02d}" if e.isdigit() else e for e in item.split("-")]
        out.append("..".join(ends) + step)
    return ",".join(out)


def on_calendar(schedule: str, tz: str | None = None) -> tuple[str, ...]:
    """A cron expression as systemd OnCalendar values (the common forms: lists, ranges, steps,
    @aliases). One value, except when both the day of the month and the day of the week are given:
    cron (and croniter, which `kit serve` schedules with) runs on either day, while one OnCalendar
    value asks for both, so the timer gets one value for each (a timer fires on any of them)."""
    text = schedule.strip()
    if text in _ALIASES:
        return (f"{_ALIASES[text]} {tz}" if tz else _ALIASES[text],)
    parts = text.split()
    if len(parts) != 5 or not all(re.fullmatch(r"[\w*,/\-]+", p) for p in parts):
        raise KitError(f"cannot express dreaming.schedule {schedule!r} as a systemd timer")
    minute, hour, dom, month, dow = parts
    time = f"{_field(hour, 'hour')}:{_field(minute, 'minute')}:00"
    month = _field(month, "month")
    if dom != "*" and dow != "*":  # either day: two values
        specs = [f"{_field(dow, 'dow')} *-{month}-* {time}", f"*-{month}-{_field(dom, 'dom')} {time}"]
    else:
        specs = [f"*-{month}-{_field(dom, 'dom')} {time}"]
        if dow != "*":
            specs[0] = f"{_field(dow, 'dow')} {specs[0]}"
    return tuple(f"{spec} {tz}" if tz else spec for spec in specs)


def unit_name(root: Path) -> str:
    return f"kit-dream-{sha1_hex(str(root), 8)}"


def unit_dir() -> Path:
    return xdg_config_home() / "systemd" / "user"


def _systemctl(*args: str) -> str | None:
    cmd = shlex.split(os.environ.get("KIT_SYSTEMCTL") or "systemctl")
    try:
        done = subprocess.run([*cmd, "--user", *args], capture_output=True, text=True)
    except FileNotFoundError:
        return f"systemctl not found; run `systemctl --user {' '.join(args)}` yourself"
    if done.returncode != 0:
        return f"systemctl --user {' '.join(args)} failed: {_failure(done)}"
    return None


def install_systemd(ws: WorkspaceCore) -> CronResult:
    root = ws.root
    name = unit_name(root)
    cals = on_calendar(ws.config.dreaming.schedule, ws.config.dreaming.timezone)
    log = root / LOG_REL
    log.parent.mkdir(parents=True, exist_ok=True)
    service = (
        f"[Unit]\nDescription=Kit dreaming for {root}\n\n[Service]\nType=oneshot\n"
        f"ExecStart={kit_command()} dream -w {shlex.quote(str(root))}\n"
        f"StandardOutput=append:{log}\nStandardError=append:{log}\n"
    )
    timer = (
        f"[Unit]\nDescription=Kit dreaming schedule for {root}\n\n[Timer]\n"
        + "".join(f"OnCalendar={cal}\n" for cal in cals) + "Persistent=true\n"
        f"Unit={name}.service\n\n[Install]\nWantedBy=timers.target\n"
    )
    folder = unit_dir()
    changed = False
    files = []
    # systemd expands %-specifiers in these values: a literal % (in a path) is written %%
    for suffix, text in ((".service", service.replace("%", "%%")), (".timer", timer.replace("%", "%%"))):
        path = folder / f"{name}{suffix}"
        files.append(str(path))
        if not path.exists() or path.read_text() != text:
            atomic_write(path, text)
            changed = True
    notes = [n for n in (_systemctl("daemon-reload"), _systemctl("enable", "--now", f"{name}.timer")) if n]
    return CronResult("install", "systemd", True, changed, "; ".join(cals), tuple(files), "; ".join(notes))


def uninstall_systemd(ws: WorkspaceCore) -> CronResult:
    name = unit_name(ws.root)
    folder = unit_dir()
    paths = [folder / f"{name}.timer", folder / f"{name}.service"]
    if not any(p.exists() for p in paths):
        return CronResult("uninstall", "systemd", False, False, None)
    notes = [n for n in (_systemctl("disable", "--now", f"{name}.timer"),) if n]
    for p in paths:
        if p.exists():
            p.unlink()
    notes += [n for n in (_systemctl("daemon-reload"),) if n]
    return CronResult("uninstall", "systemd", False, True, None, tuple(str(p) for p in paths), "; ".join(notes))


def show_systemd(ws: WorkspaceCore) -> CronResult:
    timer = unit_dir() / f"{unit_name(ws.root)}.timer"
    if not timer.exists():
        return CronResult("show", "systemd", False, False, None)
    cals = [line.split("=", 1)[1] for line in timer.read_text().splitlines() if line.startswith("OnCalendar=")]
    return CronResult("show", "systemd", True, False, "; ".join(cals) or None, (str(timer),))
