"""Turn a model spec into a provider and a model name.

Specs: `openai/gpt-4o-mini`, `ollama/llama3.2`, `anthropic/claude-…`, `<custom>/<model>` for any
`providers.<custom>` in kit.yaml (with `type: openai|ollama|anthropic`), and `script:PATH` for
the scripted provider (tests and offline demos; imported lazily).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from kit.config import Config, api_key_env_problem, base_url_problem, section_of
from kit.errors import ConfigError
from kit.providers.base import GenerationSettings, Provider
from kit.settings import PROVIDER_FIELDS, AgentSettings

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from kit.providers.script import ScriptPositions

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434/v1"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback(base_url: str | None) -> bool:
    host = urlsplit(base_url).hostname if base_url else None
    return bool(host) and (host in LOOPBACK or host.startswith("127."))


@dataclass(frozen=True)
class ProviderSettings:
    name: str
    type: str  # openai | ollama | anthropic | script
    base_url: str | None
    api_key_env: str | None
    timeout_s: float
    stream: bool = True
    prompt_cache: bool = True
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    models: Mapping[str, GenerationSettings] = field(default_factory=dict)

    @property
    def needs_key(self) -> bool:
        """Anthropic always; a hosted OpenAI endpoint when it names a key variable. Ollama and other
        local servers take a placeholder."""
        return self.type == "anthropic" or (self.type == "openai" and bool(self.api_key_env))

    @property
    def local(self) -> bool:
        """Served on this machine: Ollama, or a loopback base_url (llama.cpp, LM Studio, vLLM …)."""
        return self.type == "ollama" or is_loopback(self.base_url)

    @property
    def fingerprint(self) -> str:
        """Where requests go and with which key variable (never the key): a cooldown is kept for
        this, so a provider whose base_url, type or api_key_env changed starts afresh."""
        where = json.dumps([self.type, self.base_url, self.api_key_env])
        return hashlib.sha256(where.encode()).hexdigest()[:16]


def providers_config(config: Any) -> Mapping[str, Any]:
    """`providers` from a kit.config.Config or a plain dict (either the whole config or the section)."""
    if config is None:
        return {}
    if isinstance(config, Config):
        return config.providers
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
    # kit.yaml's values were checked when it loaded; a plain-dict config (a library caller's) is here
    problem = (base_url_problem(f"providers.{name}.base_url", raw.get("base_url"))
               or api_key_env_problem(f"providers.{name}.api_key_env", raw.get("api_key_env")))
    if problem:
        raise ConfigError(problem)
    base_url = raw.get("base_url")
    if kind == "ollama" and not base_url:
        base_url = DEFAULT_OLLAMA_URL
    return ProviderSettings(
        name=name,
        type=kind,
        base_url=base_url,
        api_key_env=raw.get("api_key_env"),
        timeout_s=float(_field(raw, "timeout_s")),
        stream=bool(_field(raw, "stream")),
        prompt_cache=bool(_field(raw, "prompt_cache")),
        generation=_generation(raw),
        models={str(m): _generation(v or {}) for m, v in (raw.get("models") or {}).items()},
    )


def _field(raw: Mapping[str, Any], key: str) -> Any:
    """A provider setting; a plain-dict config (tests, callers without kit.yaml) may leave it
    out, and then the schema's default applies."""
    value = raw.get(key)
    return PROVIDER_FIELDS[key].default if value is None else value


def _generation(raw: Mapping[str, Any]) -> GenerationSettings:
    return GenerationSettings(
        max_tokens=raw.get("max_tokens"),
        temperature=raw.get("temperature"),
        top_p=raw.get("top_p"),
        stop=tuple(raw.get("stop") or ()),
    )


def generation_for(spec: str, config: Any, overrides: GenerationSettings | None = None) -> GenerationSettings:
    """The generation settings of a request to `spec`, most specific first: `overrides` (the run's
    flags), providers.<p>.models.<m>, providers.<p>, then the agent's (agent.max_tokens, or
    agent.max_tokens_local for a model on this machine; agent.temperature/top_p/stop)."""
    name, model = split_spec(spec)
    agent = section_of(config, "agent", AgentSettings)
    local = False  # the script provider gets the agent's own cap
    chain: list[GenerationSettings] = []
    if name != "script":
        settings = settings_for(name, config)
        local = settings.local
        chain = [settings.models.get(model, GenerationSettings()), settings.generation]
    out = GenerationSettings(
        max_tokens=agent.max_tokens_local if local else agent.max_tokens,
        temperature=agent.temperature,
        top_p=agent.top_p,
        stop=tuple(agent.stop),
    )
    for level in reversed([overrides or GenerationSettings(), *chain]):
        out = level.over(out)
    return out


def build(settings: ProviderSettings) -> Provider:
    if settings.type == "anthropic":
        from kit.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            settings.name, base_url=settings.base_url, api_key_env=settings.api_key_env,
            timeout_s=settings.timeout_s, prompt_cache=settings.prompt_cache,
        )
    from kit.providers.openai_provider import OpenAIProvider

    return OpenAIProvider(
        settings.name,
        base_url=settings.base_url,
        api_key_env=settings.api_key_env,
        timeout_s=settings.timeout_s,
        require_key=settings.needs_key,
        stream=settings.stream,
    )


def check_spec(spec: str, config: Any = None, *, root: Path | None = None) -> None:
    """Raise ConfigError when `spec` cannot name a model (no provider/ part, an unknown provider,
    a script: file that is missing or malformed — read now, so the error names the file; a
    relative one is `root`'s). Nothing is asked of a server, nothing is played."""
    name, model = split_spec(spec)
    if name == "script":
        from kit.providers.script import ScriptProvider

        ScriptProvider(model, root=root)
    else:
        settings_for(name, config)


def resolve(spec: str, config: Any = None, *, positions: ScriptPositions | None = None,
            root: Path | None = None) -> tuple[Provider, str]:
    """(provider instance, model name) for a spec; raises ConfigError for a bad spec.
    `positions`: where a `script:` provider keeps how far it has played (the workspace's);
    `root`: what a relative `script:PATH` is relative to (the workspace's root)."""
    name, model = split_spec(spec)
    if name == "script":
        from kit.providers.script import ScriptProvider

        return ScriptProvider(model, positions, root=root), model
    return build(settings_for(name, config)), model
