"""`kit mcp list` and `kit doctor` on configured MCP servers (real processes)."""

from __future__ import annotations

import json
import socket
import sys

import pytest

from helpers_mcp import SDK_SERVER, sdk_server, write_servers

pytest.importorskip("mcp")


def test_mcp_list_shows_state_policy_and_tools(cli, ws_path):
    write_servers(ws_path, {
        "t": sdk_server(policy="allow", tools={"crash": "deny", "slow": "ask"}),
        "bad": sdk_server("--exit-on-start"),
        "off": sdk_server(enabled=False),
    })
    result = cli("mcp", "list", "-w", ws_path, "--json")
    assert result.exit_code == 1  # one enabled server failed to start
    data = json.loads(result.output)
    by_name = {s["name"]: s for s in data["servers"]}
    assert list(by_name) == ["bad", "off", "t"]
    assert by_name["bad"]["state"] == "failed"
    assert by_name["bad"]["error"] == ("MCP server 'bad' failed to start: it exited before answering initialize; "
                                       "its stderr said: fatal: the test server was told to exit before serving")
    assert by_name["off"]["state"] == "disabled" and by_name["off"]["tools"] == []
    t = by_name["t"]
    assert (t["state"], t["transport"], t["server"]) == ("running", "stdio", {"name": "kit-test-server",
                                                                                "version": "1.2.3"})
    assert t["target"] == f"{sys.executable} {SDK_SERVER}"
    policies = {x["name"]: (x["kit_name"], x["policy"]) for x in t["tools"]}
    assert policies["add"] == ("t__add", "allow")
    assert policies["crash"] == ("t__crash", "deny") and policies["slow"] == ("t__slow", "ask")
    # --cached starts nothing: the tools come from what the probe above cached
    cached = json.loads(cli("mcp", "list", "-w", ws_path, "--json", "--cached").output)
    t_cached = next(s for s in cached["servers"] if s["name"] == "t")
    assert t_cached["state"] == "ready" and [x["name"] for x in t_cached["tools"]] == [x["name"] for x in t["tools"]]
    human = cli("mcp", "list", "-w", ws_path)
    assert "error: MCP server 'bad' failed to start" in human.output
    assert "t__crash" in human.output and "deny" in human.output
    # the text says the state --json gives (it said "ok" for running and ready alike)
    lines = {line.split()[0]: line.split()[1] for line in human.output.splitlines() if line[:1].strip()}
    assert lines == {"bad": "failed", "off": "disabled", "t": "running"}
    shown = cli("mcp", "list", "-w", ws_path, "--cached").output
    assert {line.split()[0]: line.split()[1] for line in shown.splitlines() if line[:1].strip()}["t"] == "ready"


def test_mcp_list_without_servers(cli, ws_path):
    result = cli("mcp", "list", "-w", ws_path)
    assert result.exit_code == 0
    assert result.output.strip() == ("no MCP servers configured (add them under mcp.servers in kit.yaml; "
                                     "see docs/mcp.md)")
    assert json.loads(cli("mcp", "list", "-w", ws_path, "--json").output) == {"servers": []}


def test_doctor_names_a_server_that_fails_to_start_in_one_line(ws_path):
    from kit.workspace import Workspace

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    write_servers(ws_path, {"t": sdk_server(), "bad": sdk_server("--exit-on-start"),
                            "gone": {"command": "no-such-mcp-server-here"},
                            "web": {"url": f"http://127.0.0.1:{port}/mcp"}})
    ws = Workspace.open(ws_path)
    # each finding points at its server's entry in kit.yaml, as every other finding points at its line
    lines = {text.strip().rstrip(":"): n for n, text in
             enumerate((ws_path / "kit.yaml").read_text().splitlines(), 1) if text.startswith("    ") and
             not text.startswith("     ") and text.endswith(":")}
    problems = [p for p in ws.doctor() if p.area == "mcp"]
    offline = [(p.severity, p.path, p.line, p.message) for p in ws.doctor(offline=True) if p.area == "mcp"]
    both = [
        ("error", "kit.yaml", lines["gone"], "MCP server 'gone' failed to start: command not found: "
                                             "no-such-mcp-server-here; the agent runs without its tools"),
        ("error", "kit.yaml", lines["bad"], "MCP server 'bad' failed to start: it exited before answering "
                                            "initialize; its stderr said: fatal: the test server was told to exit "
                                            "before serving; the agent runs without its tools"),
    ]
    assert [(p.severity, p.path, p.line, p.message) for p in problems] == [*both, (
        "error", "kit.yaml", lines["web"], f"MCP server 'web' failed to start: cannot connect to "
                                           f"http://127.0.0.1:{port}/mcp; the agent runs without its tools")]
    assert str(problems[0]).startswith(f"kit.yaml:{lines['gone']}: MCP server 'gone'")
    assert offline == both  # --offline asks no URL
    # doctor writes nothing: no log, no tool cache
    assert not (ws_path / ".kit" / "logs" / "mcp-bad.log").exists()
    assert not (ws_path / ".kit" / "cache" / "mcp-tools.json").exists()


def test_doctor_offline_still_warns_of_unset_variables_of_url_servers(ws_path, monkeypatch):
    """Regression (docs pass): `--offline` left URL servers out of every check, so an unset
    ${VAR} in their headers — kit.yaml's own content, no network needed — went unsaid."""
    from kit.workspace import Workspace

    monkeypatch.delenv("DOCS_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    write_servers(ws_path, {"docs": {"url": "http://127.0.0.1:9/mcp",
                                     "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
                            "gh": {**sdk_server(), "env": {"GITHUB_TOKEN": "${GH_TOKEN}"}}})
    lines = {text.strip().rstrip(":"): n for n, text in
             enumerate((ws_path / "kit.yaml").read_text().splitlines(), 1) if text.endswith(":")}
    offline = [(p.severity, p.line, p.message) for p in Workspace.open(ws_path).doctor(offline=True)
               if p.area == "mcp"]
    assert offline == [
        ("warning", lines["docs"], "MCP server 'docs': DOCS_TOKEN not set in Kit's environment "
                                   "(its env/headers pass them on empty)"),
        ("warning", lines["gh"], "MCP server 'gh': GH_TOKEN not set in Kit's environment "
                                 "(its env/headers pass them on empty)"),
    ]


def test_a_server_that_prints_a_non_json_line_is_one_line_not_the_sdks_traceback(ws_path):
    """Regression (fuzz pass): the SDK logged the unparseable line with a pydantic traceback, and
    with no handler configured Python printed it on stderr above Kit's own line."""
    from conftest import run_kit

    write_servers(ws_path, {"chatty": {"command": sys.executable,
                                       "args": ["-c", "print('server v1.0 starting')"]}})
    proc = run_kit("doctor", "--offline", "-w", ws_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "Failed to parse JSONRPC" not in proc.stderr, proc.stderr
    assert "MCP server 'chatty' failed to start: it exited before answering initialize" in proc.stdout
