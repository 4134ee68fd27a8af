"""mcp.servers in kit.yaml: validation with file:line, defaults from the schema, secrets refused."""

from __future__ import annotations

import pytest

from kit.config import load_config, mcp_server_names
from kit.errors import ConfigError


def load(text: str):
    return load_config(None, workspace_text=None, environ={}) if text is None else _load(text)


def _load(text: str):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "kit.yaml").write_text(text, encoding="utf-8")
        return load_config(folder, environ={}, user_file=Path(folder) / "none.yaml")


def errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        _load(text)
    return [f"{e.line}: {e.message}" for e in caught.value.errors]


def test_defaults_come_from_the_schema():
    cfg = _load("mcp:\n  servers:\n    time:\n      command: mcp-server-time\n")
    assert cfg.get("mcp.servers.time") == {
        "command": "mcp-server-time", "args": [], "env": {}, "cwd": None, "url": None, "headers": {},
        "enabled": True, "policy": "ask", "tools": {}, "timeout_s": 60.0, "startup_timeout_s": 30.0}
    assert mcp_server_names(cfg) == ("time",)
    assert _load("agent: {}\n").get("mcp.servers") == {}


def test_disabled_servers_are_not_configured_for_skills():
    cfg = _load("mcp:\n  servers:\n    a: {command: x}\n    b: {url: 'http://127.0.0.1:9/mcp', enabled: false}\n")
    assert mcp_server_names(cfg) == ("a",)


def test_bad_entries_are_named_with_their_line():
    assert errors("mcp:\n  servers:\n    gh:\n      command: x\n      comand: y\n") == [
        "5: unknown key 'mcp.servers.gh.comand' (did you mean 'command'?)"]
    assert errors("mcp:\n  servers:\n    gh:\n      command: x\n      policy: maybe\n") == [
        "5: 'mcp.servers.gh.policy' must be one of allow, ask, deny, not 'maybe'"]
    assert errors("mcp:\n  servers:\n    gh:\n      command: x\n      tools: {create_issue: yes}\n") == [
        "5: 'mcp.servers.gh.tools.create_issue' must be one of allow, ask, deny, not true"]
    assert errors("mcp:\n  servers:\n    gh:\n      command: x\n      env: {DEBUG: true}\n") == [
        "5: 'mcp.servers.gh.env.DEBUG' must be a string, not true"]
    assert errors("mcp:\n  servers:\n    gh:\n      command: x\n      tools: {create_issue: never}\n") == [
        "5: 'mcp.servers.gh.tools.create_issue' must be one of allow, ask, deny, not 'never'"]
    assert errors("mcp:\n  servers:\n    my__gh:\n      command: x\n") == [
        "3: MCP server name 'my__gh' must be up to 40 letters, digits, '-' and single '_' (a double "
        "underscore separates server and tool in the agent's tool names)"]
    assert errors("mcp:\n  servers:\n    gh:\n      args: [a]\n") == [
        "3: MCP server 'gh' needs either 'command' (stdio) or 'url' (streamable HTTP)"]
    assert errors("mcp:\n  servers:\n    gh:\n      command: x\n      url: http://127.0.0.1:1/mcp\n") == [
        "3: MCP server 'gh' needs either 'command' (stdio) or 'url' (streamable HTTP), not both"]
    assert errors("mcp:\n  servers:\n    gh:\n      url: ftp://x\n") == [
        "4: 'mcp.servers.gh.url' must be an http:// or https:// URL, not 'ftp://x'"]


def test_secrets_are_never_written_in_kit_yaml():
    assert errors("mcp:\n  servers:\n    gh:\n      command: x\n      env: {GITHUB_TOKEN: ghp_abc}\n") == [
        "5: 'mcp.servers.gh.env.GITHUB_TOKEN': secrets are never stored in kit.yaml; write "
        "'${GITHUB_TOKEN}' to pass Kit's own environment variable"]
    assert errors("mcp:\n  servers:\n    api:\n      url: https://x/mcp\n      headers: {Authorization: Bearer x}\n") == [
        "5: 'mcp.servers.api.headers.Authorization': secrets are never stored in kit.yaml; write "
        "'Bearer ${AUTHORIZATION}' to pass Kit's own environment variable"]
    cfg = _load("mcp:\n  servers:\n    api:\n      url: https://x/mcp\n"
                "      headers: {Authorization: 'Bearer ${API_TOKEN}'}\n")
    assert cfg.get("mcp.servers.api.headers") == {"Authorization": "Bearer ${API_TOKEN}"}
    cfg = _load("mcp:\n  servers:\n    gh:\n      command: x\n      env: {GITHUB_TOKEN: '${GH_TOKEN}', MODE: fast}\n")
    assert cfg.get("mcp.servers.gh.env") == {"GITHUB_TOKEN": "${GH_TOKEN}", "MODE": "fast"}


def test_policy_for_a_tool_deny_wins():
    from kit.mcp_client.servers import server_specs

    cfg = _load("mcp:\n  servers:\n"
                "    a: {command: x, policy: allow, tools: {rm: deny, ls: ask}}\n"
                "    b: {command: x, policy: deny, tools: {ls: allow}}\n"
                "    c: {command: x}\n")
    a, b, c = server_specs(cfg)
    assert [a.policy_for(t) for t in ("rm", "ls", "cat")] == ["deny", "ask", "allow"]
    assert [b.policy_for(t) for t in ("ls", "cat")] == ["deny", "deny"]
    assert c.policy_for("anything") == "ask"


def test_kit_tool_names_fit_every_provider():
    from kit.mcp_client.manager import kit_tool_name
    from kit.tools.registry import NAME_RE

    assert kit_tool_name("gh", "create_issue") == "gh__create_issue"
    assert kit_tool_name("fs", "read.file v2") == "fs__read_file_v2"
    long_a, long_b = kit_tool_name("srv", "x" * 80 + "a"), kit_tool_name("srv", "x" * 80 + "b")
    assert len(long_a) == 64 and NAME_RE.match(long_a) and long_a != long_b


def test_an_mcp_url_is_checked_as_a_provider_url_is(tmp_path):
    """One URL rule (and wording) for providers and MCP servers: a space or a missing host is refused
    at its line, where only the scheme was checked."""
    from kit.config import ConfigError, config_errors, load_config

    (tmp_path / "kit.yaml").write_text("mcp:\n  servers:\n    a: {url: 'http://127.0.0.1:9/mcp '}\n"
                                       "    b: {url: 'http:///mcp'}\n    c: {url: 'https://127.0.0.1:9/mcp'}\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=tmp_path / "none.yaml")
    assert [(e.line, e.message) for e in config_errors(info.value)] == [
        (3, "'mcp.servers.a.url' must be an http:// or https:// URL, not 'http://127.0.0.1:9/mcp ' "
            "(no spaces or control characters)"),
        (4, "'mcp.servers.b.url' must be an http:// or https:// URL, not 'http:///mcp'")]
    assert list(info.value.partial["mcp.servers"]) == ["c"]
