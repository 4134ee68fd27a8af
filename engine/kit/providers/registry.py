"""Turn a model spec into a provider and a model name.

Specs: `openai/gpt-4o-mini`, `ollama/llama3.2`, `anthropic/claude-…`, `<custom>/<model>` for any
`providers.<custom>` in kit.yaml (with `type: openai|ollama|anthropic`), and `script:PATH` for
the scripted provider (tests and offline demos; imported lazily).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kit.errors import ConfigError
from kit.providers.base import Provider

if TYPE_CHECKING:  # pragma: no cover
    from kit.providers.script import ScriptPositions

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434/v1"


@dataclass(frozen=True)
class ProviderSettings:
    name: str
    type: str  # openai | ollama | anthropic | script
    base_url: str | None
    api_key_env: str | None
    timeout_s: float

    @property
    def needs_key(self) -> bool:
        """Anthropic always; a hosted OpenAI endpoint when it names a key variable. Ollama and other
        local servers take a placeholder."""
        return self.type == "anthropic" or (self.type == "openai" and bool(self.api_key_env))


def providers_config(config: Any) -> Mapping[str, Any]:
    """`providers` from a kit.config.Config or a plain dict (either the whole config or the section)."""
    if config is None:
        return {}
    getter = getattr(config, "get", None)
    if getter is not None and hasattr(config, "sources"):
        return config.get("providers", {}) or {}
    if isinstance(config, Mapping):
        return config.get("providers", config) or {}
    return {}


def split_spec(spec: str) -> tuple[str, str]:
    """`provider/model` → (provider, model); `script:PATH` → ("script", PATH)."""
    spec = (spec or "").strip()
    if spec.startswith("script:"):
        path = spec[len("script:"):]
        if not path:
            raise ConfigError("model 'script:' needs a path, e.g. script:demo.yaml")
        return "script", path
    provider, sep, model = spec.partition("/")
    if not sep or not provider or not model:
        raise ConfigError(
            f"model {spec!r} must be 'provider/model' (e.g. ollama/llama3.2, openai/gpt-4o-mini) "
            "or 'script:PATH'"
        )
    return provider, model


def settings_for(name: str, config: Any) -> ProviderSettings:
    section = providers_config(config)
    raw = section.get(name)
    if raw is None:
        known = ", ".join(sorted(section)) or "none"
        raise ConfigError(
            f"unknown provider {name!r} (configured: {known}); add providers.{name} with a type to kit.yaml"
        )
    kind = raw.get("type") or name
    if kind not in ("openai", "ollama", "anthropic"):
        raise ConfigError(f"provider {name!r} needs 'type: openai|anthropic|ollama'")
    base_url = raw.get("base_url")
    if kind == "ollama" and not base_url:
        base_url = DEFAULT_OLLAMA_URL
    return ProviderSettings(
        name=name,
        type=kind,
        base_url=base_url,
        api_key_env=raw.get("api_key_env"),
        timeout_s=float(raw.get("timeout_s") or 120.0),
    )


def build(settings: ProviderSettings) -> Provider:
    if settings.type == "anthropic":
        from kit.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            settings.name, base_url=settings.base_url, api_key_env=settings.api_key_env, timeout_s=settings.timeout_s
        )
    from kit.providers.openai_provider import OpenAIProvider

    return OpenAIProvider(
        settings.name,
        base_url=settings.base_url,
        api_key_env=settings.api_key_env,
        timeout_s=settings.timeout_s,
        require_key=settings.needs_key,
    )


def resolve(spec: str, config: Any = None, *, positions: ScriptPositions | None = None) -> tuple[Provider, str]:
    """(provider instance, model name) for a spec; raises ConfigError for a bad spec.
    `positions`: where a `script:` provider keeps how far it has played (the workspace's)."""
    name, model = split_spec(spec)
    if name == "script":
        from kit.providers.script import ScriptProvider

        return ScriptProvider(model, positions), model
    return build(settings_for(name, config)), model
