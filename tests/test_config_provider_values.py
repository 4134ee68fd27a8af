"""Provider values kit.yaml must get right before anything is sent: base_url is an http(s) URL,
api_key_env names a variable (never the key). A provider that fails either is left out whole, the
rest of kit.yaml applies, and the key a user pasted by mistake is never repeated."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.config import config_errors, load_config
from kit.errors import ConfigError

SECRET = "sk-SECRET123abcdef"


def load(tmp_path: Path, provider: str, extra: str = "agent:\n  max_iterations: 7\n"):
    """The ConfigError of a kit.yaml declaring provider `lab` with `provider` as its settings."""
    (tmp_path / "kit.yaml").write_text(f"providers:\n  lab:\n    type: openai\n{provider}{extra}", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=tmp_path / "no-user.yaml")
    return info.value


@pytest.mark.parametrize(("value", "shown"), [
    ("notaurl", "'notaurl'"),
    ('"http://127.0.0.1:18080/v1 "', "'http://127.0.0.1:18080/v1 ' (no spaces or control characters)"),
    ('"127.0.0.1:18080/v1"', "'127.0.0.1:18080/v1' (did you mean 'http://127.0.0.1:18080/v1'?)"),
    ("ftp://10.0.0.5/v1", "'ftp://10.0.0.5/v1'"),
    ("http:///v1", "'http:///v1'"),  # no host
    ("http://10.0.0.5:port/v1", "'http://10.0.0.5:port/v1'"),
    ('""', "''"),
])
def test_a_base_url_that_is_not_an_http_url_is_a_config_error(tmp_path, value, shown):
    """Regression (new user): `base_url: notaurl` was accepted (`kit config show` exit 0), then
    `kit run` died in a traceback (ValueError: unknown url type), a trailing space in
    http.client.InvalidURL, and `127.0.0.1:18080/v1` or ftp:// were blamed on reachability."""
    error = load(tmp_path, f"    base_url: {value}\n")
    assert [(e.path, e.line, e.message) for e in config_errors(error)] == [
        ("kit.yaml", 4, f"'providers.lab.base_url' must be an http:// or https:// URL, not {shown}")]
    # the provider is left out whole (type: openai without its base_url would talk to api.openai.com)
    # and the rest of kit.yaml still applies
    assert "lab" not in error.partial.providers
    assert error.partial.agent.max_iterations == 7
    assert not any(key.startswith("providers.lab") for key in error.partial.sources)


def test_good_base_urls_pass(tmp_path):
    for url in ("http://127.0.0.1:8080/v1", "https://api.example.com/v1", "http://[::1]:11434/v1", "HTTP://lab:80"):
        (tmp_path / "kit.yaml").write_text(f"providers:\n  lab: {{type: openai, base_url: '{url}'}}\n")
        assert load_config(tmp_path, environ={}, user_file=tmp_path / "none.yaml").providers["lab"]["base_url"] == url


def test_a_password_in_a_bad_base_url_is_not_repeated(tmp_path):
    error = load(tmp_path, "    base_url: 'http://me:hunter2@lab host/v1'\n")
    assert "hunter2" not in str(error)
    assert error.message == ("'providers.lab.base_url' must be an http:// or https:// URL, not "
                             "'http://…@lab host/v1' (no spaces or control characters)")


def test_an_api_key_env_holding_the_key_is_refused_without_repeating_it(tmp_path, cli):
    """Regression (new user): `api_key_env: sk-SECRET…` was accepted; `kit doctor` then printed
    `sk-SECRET… is not set` and `kit run` `set sk-SECRET… to a valid key`."""
    error = load(tmp_path, f"    api_key_env: {SECRET}\n")
    assert [(e.path, e.line, e.message) for e in config_errors(error)] == [
        ("kit.yaml", 4, "'providers.lab.api_key_env' must name an environment variable (like OPENAI_API_KEY), "
                        "not hold the key itself: put the key in the environment")]
    assert "lab" not in error.partial.providers
    # no command repeats it: config show (text and JSON) and doctor
    for args in (("config", "show"), ("config", "show", "--json"), ("doctor", "--offline")):
        result = cli(*args, "-w", tmp_path)
        assert result.exit_code == 1, args
        assert SECRET not in result.output and SECRET not in result.stderr, args


def test_a_key_variable_name_is_fine(tmp_path):
    (tmp_path / "kit.yaml").write_text("providers:\n  lab: {type: openai, api_key_env: _LAB_KEY2}\n")
    assert load_config(tmp_path, environ={}, user_file=tmp_path / "none.yaml").providers["lab"]["api_key_env"] == "_LAB_KEY2"


def test_a_bad_value_from_the_environment_is_named_there(tmp_path):
    (tmp_path / "kit.yaml").write_text("providers:\n  lab: {type: openai, base_url: 'http://10.0.0.5/v1'}\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={"KIT_PROVIDERS__LAB__BASE_URL": "10.0.0.5"}, user_file=tmp_path / "none.yaml")
    assert info.value.message == "'providers.lab.base_url' must be an http:// or https:// URL, not '10.0.0.5'"
    assert info.value.path == "environment (KIT_*__*)"


def test_a_library_callers_plain_config_is_checked_too(tmp_path):
    """A plain-dict config (no kit.yaml validation) gets the same words from the registry."""
    from kit.providers.registry import settings_for

    with pytest.raises(ConfigError) as info:
        settings_for("lab", {"providers": {"lab": {"type": "openai", "base_url": "notaurl"}}})
    assert str(info.value) == "'providers.lab.base_url' must be an http:// or https:// URL, not 'notaurl'"
    with pytest.raises(ConfigError) as info:
        settings_for("lab", {"providers": {"lab": {"type": "openai", "api_key_env": SECRET}}})
    assert SECRET not in str(info.value)


def test_a_bad_url_is_named_without_what_may_be_a_secret():
    """Regression (a review): a password was hidden, but a query string (`?api_key=…`) was quoted."""
    from kit.config import base_url_problem

    assert base_url_problem("mcp.servers.d.url", "ftp://u:pw@h/mcp?api_key=SECRET") == (
        "'mcp.servers.d.url' must be an http:// or https:// URL, not 'ftp://…@h/mcp?…'")
    assert base_url_problem("providers.lab.base_url", "127.0.0.1:8080/v1?token=abc") == (
        "'providers.lab.base_url' must be an http:// or https:// URL, not '127.0.0.1:8080/v1?…' "
        "(did you mean 'http://127.0.0.1:8080/v1?…'?)")
