"""Model specs, provider settings and error classification."""

from __future__ import annotations

import pytest

from kit.config import load_config
from kit.errors import ConfigError
from kit.providers import resolve, split_spec
from kit.providers.anthropic_provider import AnthropicProvider
from kit.providers.classify import kind_for_status
from kit.providers.events import parse_arguments
from kit.providers.openai_provider import OpenAIProvider
from kit.providers.registry import settings_for


def config(text: str = ""):
    return load_config(None, environ={}, user_file=None) if not text else _from_text(text)


def _from_text(text: str):
    return load_config("/nonexistent-ws", workspace_text=text, environ={})


def test_split_spec():
    assert split_spec("openai/gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert split_spec("ollama/llama3.2:latest") == ("ollama", "llama3.2:latest")
    assert split_spec("local/org/model-7b") == ("local", "org/model-7b")
    assert split_spec("script:tests/demo.yaml") == ("script", "tests/demo.yaml")
    for bad in ("gpt-4o", "/gpt", "openai/", "script:", ""):
        with pytest.raises(ConfigError):
            split_spec(bad)


def test_resolve_builtin_and_custom_providers():
    cfg = _from_text("providers:\n  lab: {type: openai, base_url: 'http://127.0.0.1:9/v1', api_key_env: LAB_KEY, timeout_s: 5}\n")
    provider, model = resolve("lab/qwen", cfg)
    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.base_url, provider.api_key_env, provider.timeout_s, model) == (
        "lab", "http://127.0.0.1:9/v1", "LAB_KEY", 5.0, "qwen")
    ollama, model = resolve("ollama/llama3.2", cfg)
    assert (ollama.base_url, ollama.require_key, model) == ("http://127.0.0.1:11434/v1", False, "llama3.2")
    anthropic, _ = resolve("anthropic/claude-x", cfg)
    assert isinstance(anthropic, AnthropicProvider) and anthropic.api_key_env == "ANTHROPIC_API_KEY"
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        resolve("nope/x", cfg)
    assert settings_for("openai", cfg).api_key_env == "OPENAI_API_KEY"


def test_resolve_script_uses_the_script_provider(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - text: hi\n")
    provider, path = resolve(f"script:{script}", None)
    assert type(provider).__name__ == "ScriptProvider"
    assert path == str(script)


@pytest.mark.parametrize("spec,env", [("openai/gpt-4o-mini", "OPENAI_API_KEY"),
                                      ("anthropic/claude-3-5-haiku-latest", "ANTHROPIC_API_KEY")])
def test_missing_key_is_an_auth_error_before_any_request(monkeypatch, spec, env):
    from kit.providers.base import ProviderError

    monkeypatch.delenv(env, raising=False)
    provider, model = resolve(spec, _from_text(""))
    with pytest.raises(ProviderError) as info:
        provider.complete([{"role": "user", "content": "x"}], [], model=model)
    assert (info.value.kind, str(info.value)) == ("auth", f"{spec.split('/')[0]}: {env} is not set")


def test_ollama_needs_no_key():
    provider, _ = resolve("ollama/llama3.2", _from_text(""))
    assert provider._api_key() == "kit-no-key"


@pytest.mark.parametrize(
    "status,message,kind",
    [
        (401, "Incorrect API key", "auth"),
        (401, "This API key has been revoked", "auth_permanent"),
        (403, "forbidden", "auth_permanent"),
        (402, "payment required", "billing"),
        (429, "You exceeded your current quota, please check your plan and billing", "billing"),
        (429, "Rate limit reached", "rate_limit"),
        (404, "The model `x` does not exist", "model_not_found"),
        (400, "This model's maximum context length is 8192 tokens", "context_overflow"),
        (413, "request too large", "context_overflow"),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", "context_overflow"),
        (400, "messages: invalid role", "format"),
        (422, "unprocessable", "format"),
        (408, "request timeout", "timeout"),
        (500, "internal", "overloaded"),
        (503, "unavailable", "overloaded"),
        (529, "Overloaded", "overloaded"),
    ],
)
def test_classification(status, message, kind):
    assert kind_for_status(status, message) == kind


def test_parse_arguments_tolerates_junk():
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("") == {}
    assert parse_arguments("[1]") == {"_value": [1]}
    assert parse_arguments("{oops") == {"_raw": "{oops"}
