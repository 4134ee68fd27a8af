"""`kit fleet` on the CLI floor, and the fleet staying an extra: no other command imports Celery."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers_fleet import free_port
from kit.init import init_workspace

FLEET_MODULES = ("celery", "kombu", "redis", "billiard")

PROBE = """
import sys
from kit.cli.main import cli
try:
    cli({args!r}, prog_name="kit", standalone_mode=False)
except SystemExit:
    pass
print("LOADED=" + ",".join(m for m in {mods!r} if m in sys.modules), file=sys.stderr)
"""


def loaded(args: list[str], cwd: Path) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(args=args, mods=FLEET_MODULES)], cwd=cwd,
                          capture_output=True, text=True, timeout=180)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED=")]
    assert line, proc.stderr
    return [m for m in line[-1][7:].split(",") if m]


@pytest.mark.parametrize("args", [
    ["--help"], ["doctor", "-w", "{ws}"], ["dream", "-w", "{ws}"], ["memory", "search", "x", "-w", "{ws}"],
    ["config", "show", "-w", "{ws}"], ["prompt", "-w", "{ws}"], ["fleet", "--help"],
    ["fleet", "--registry", "{tmp}/f.yaml", "add", "{ws}"], ["fleet", "--registry", "{tmp}/f.yaml", "list"],
], ids=["help", "doctor", "dream", "memory-search", "config", "prompt", "fleet-help", "fleet-add", "fleet-list"])
def test_no_other_command_imports_celery_or_redis(args, ws_path: Path, tmp_path: Path):
    args = [a.format(ws=ws_path, tmp=tmp_path) for a in args]
    assert loaded(args, tmp_path) == []


def test_add_list_remove_round_trip_as_json(cli, tmp_path):
    for n in ("a", "b"):
        init_workspace(tmp_path / "u" / n)
    reg = ["fleet", "--registry", tmp_path / "f.yaml"]
    out = json.loads(cli(*reg, "add", tmp_path / "u" / "a", "--queue", "q1", "--json").output)
    assert out["done"] == [str(tmp_path / "u" / "a")]
    assert cli(*reg, "add", str(tmp_path / "u" / "*")).exit_code == 0
    listed = json.loads(cli(*reg, "list", "--json").output)
    assert [(w["path"], w["queue"]) for w in listed["workspaces"]] == [
        (str(tmp_path / "u" / "a"), "q1"), (str(tmp_path / "u" / "b"), None)]
    human = cli(*reg, "list").output
    assert "→ queue q1" in human and "(1 workspace)" in human and "2 workspaces" in human
    gone = cli(*reg, "remove", tmp_path / "u" / "a", tmp_path / "nope")
    assert gone.exit_code == 1 and f"not registered: {tmp_path / 'nope'}" in gone.output
    assert [e["pattern"] for e in json.loads(cli(*reg, "list", "--json").output)["entries"]] == [str(tmp_path / "u" / "*")]


def test_adding_a_typo_is_one_line_and_exit_1(cli, tmp_path):
    result = cli("fleet", "--registry", tmp_path / "f.yaml", "add", tmp_path / "nope")
    assert result.exit_code == 1
    assert result.output.strip() == f"kit: {tmp_path / 'nope'}: does not exist; nothing was added"


def test_a_bad_registry_names_file_and_line(cli, tmp_path):
    (tmp_path / "f.yaml").write_text("workspaces:\n  - {path: /a, queu: x}\n")
    result = cli("fleet", "--registry", tmp_path / "f.yaml", "list")
    assert result.exit_code == 1
    assert result.output.strip().startswith(f"kit: {tmp_path / 'f.yaml'}:2: unknown key 'queu'")


def test_an_unreachable_broker_is_one_line_and_exit_1(cli, tmp_path, ws_path):
    pytest.importorskip("celery")
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    result = cli("fleet", "--broker", url, "--registry", tmp_path / "f.yaml", "dream", ws_path)
    assert result.exit_code == 1
    line = result.output.strip()
    assert line.startswith(f"kit: cannot reach the broker at {url}:") and "\n" not in line


def test_dispatch_with_an_empty_registry_says_how_to_add(cli, tmp_path):
    result = cli("fleet", "--registry", tmp_path / "f.yaml", "dream")
    assert result.exit_code == 1 and "kit fleet add PATH" in result.output


def test_settings_come_from_the_environment_and_flags(monkeypatch, tmp_path):
    from kit import Fleet

    monkeypatch.setenv("KIT_FLEET__BROKER", "redis://:secret@10.0.0.9:6380/2")
    monkeypatch.setenv("KIT_FLEET__VISIBILITY_TIMEOUT_S", "120")
    f = Fleet.open()
    assert f.settings.broker == f.settings.backend == "redis://:secret@10.0.0.9:6380/2"
    assert f.settings.visibility_timeout_s == 120.0
    assert f.settings.to_json()["broker"] == "redis://:***@10.0.0.9:6380/2"
    assert Fleet.open(broker="redis://127.0.0.1:1/0").settings.broker == "redis://127.0.0.1:1/0"
    monkeypatch.setenv("KIT_FLEET__VISIBILITY_TIMEOUT_S", "soon")
    from kit.errors import ConfigError

    with pytest.raises(ConfigError, match="KIT_FLEET__VISIBILITY_TIMEOUT_S"):
        Fleet.open()
