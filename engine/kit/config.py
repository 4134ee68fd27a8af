"""kit.yaml: schema, defaults, layering and validation with file:line errors.

Layers, later wins: defaults < user file < workspace kit.yaml < env `KIT_<SECTION>__<KEY>` < flags.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml

from kit.errors import ConfigError, DocumentError
from kit.fsutil import read_text
from kit.paths import CONFIG_FILE, user_config_file
from kit.settings import (  # re-exported: the schema's pieces, where callers look for them
    GENERATION_FIELDS,
    PROVIDER_FIELDS,
    AgentSettings,
    BootstrapSettings,
    DreamingSettings,
    FleetConfig,
    GitSettings,
    HooksSettings,
    McpSettings,
    MemorySettings,
    Settings,
    SkillsSettings,
    ToolsSettings,
    WatchSettings,
    build,
    from_mapping,
    schema_of,
)
from kit.settings import Field as Field
from kit.wording import did_you_mean
from kit.yamlsafe import MAX_YAML_CHARS, NotAMapping, YamlError, load_mapping, safe_values

__all__ = ["GENERATION_FIELDS", "LAYERS", "PROVIDER_FIELDS", "SCHEMA", "Config", "Field", "api_key_env_problem",
           "base_url_problem", "config_errors", "defaults", "load_config"]


# The schema is derived from the typed sections (kit.settings): defaults and limits live there, once.
SCHEMA: dict[str, Any] = schema_of(Settings)

POLICIES = ("allow", "ask", "deny")

# One MCP server under mcp.servers.<name> (docs/mcp.md): stdio (command, args, env, cwd) or
# streamable HTTP (url, headers); what the agent may call (policy, per-tool overrides) and how long
# Kit waits for it. mcp.servers is open, like providers: checked server by server.
MCP_SERVER_FIELDS: dict[str, Field] = {
    "command": Field("str", None, nullable=True),
    "args": Field("list", []),
    "env": Field("map", {}),  # values may name Kit's environment: ${GITHUB_TOKEN}
    "cwd": Field("str", None, nullable=True),  # relative to the workspace; default: the workspace
    "url": Field("str", None, nullable=True),
    "headers": Field("map", {}),
    "enabled": Field("bool", True),
    "policy": Field("choice", "ask", choices=POLICIES),
    "tools": Field("map", {}, choices=POLICIES),  # per-tool policy overrides; deny wins
    "timeout_s": Field("float", 60.0, minimum=0.1),  # one tool call
    "startup_timeout_s": Field("float", 30.0, minimum=0.1),  # spawn + initialize + tools/list
}
MCP_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")  # no "__": it separates server and tool
# env/header names that hold secrets: their value must be a ${VAR} reference, never the secret itself
_SECRET_NAME_RE = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTHORIZATION)", re.IGNORECASE)
_ENV_REF_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

S = TypeVar("S")

LAYERS = ("default", "user", "workspace", "env", "flag")


def defaults() -> dict[str, Any]:
    def fill(node: Any) -> Any:
        if isinstance(node, Field):
            return copy.deepcopy(node.default)
        if isinstance(node, dict):
            return {k: fill(v) for k, v in node.items()}
        return copy.deepcopy(node)

    return fill(SCHEMA)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


@dataclass(frozen=True)
class Config:
    """The effective configuration: nested values plus the layer each came from.

    Read settings through the typed sections (`cfg.memory.search.max_results`); `get("a.b")`
    is the dotted form for a key that comes from the user (`kit config get`, a skill's
    `requires.config`) or a section the schema does not have yet, and only those pass a default.
    """

    data: Mapping[str, Any]
    sources: Mapping[str, str]
    files: tuple[str, ...] = ()
    # dotted key -> (file, line) of the layer that set it: findings about a setting point there
    lines: Mapping[str, tuple[str, int | None]] = field(default_factory=dict, compare=False, repr=False)

    def get(self, dotted: str, default: Any = ...) -> Any:
        """The value at a dotted key; `default` (else KeyError) when there is no such key. A
        schema key always has a value: its default is the schema's, never the caller's."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                if default is ...:
                    raise KeyError(dotted)
                return default
            node = node[part]
        return node

    def __getitem__(self, dotted: str) -> Any:
        return self.get(dotted)

    def flat(self) -> dict[str, Any]:
        return _flatten(self.data)

    def source(self, dotted: str) -> str:
        return self.sources.get(dotted, "default")

    def where(self, dotted: str) -> tuple[str | None, int | None]:
        """The file and line that set `dotted` (kit.yaml, the user config), or (None, None) for a
        default or a value from the environment."""
        path, line = self.lines.get(dotted, (None, None))
        return (path, line) if path in self.files else (None, None)

    @cached_property
    def settings(self) -> Settings:
        return build(Settings, self.data)

    # the typed sections
    @property
    def agent(self) -> AgentSettings:
        return self.settings.agent

    @property
    def providers(self) -> Mapping[str, Mapping[str, Any]]:
        return self.settings.providers

    @property
    def bootstrap(self) -> BootstrapSettings:
        return self.settings.bootstrap

    @property
    def skills(self) -> SkillsSettings:
        return self.settings.skills

    @property
    def hooks(self) -> HooksSettings:
        return self.settings.hooks

    @property
    def watch(self) -> WatchSettings:
        return self.settings.watch

    @property
    def memory(self) -> MemorySettings:
        return self.settings.memory

    @property
    def dreaming(self) -> DreamingSettings:
        return self.settings.dreaming

    @property
    def git(self) -> GitSettings:
        return self.settings.git

    @property
    def fleet(self) -> FleetConfig:
        return self.settings.fleet

    @property
    def mcp(self) -> McpSettings:
        return self.settings.mcp

    @property
    def tools(self) -> ToolsSettings:
        return self.settings.tools


@dataclass
class _Layer:
    name: str
    path: str  # file path or "environment" / "flags"
    values: dict[str, Any]
    lines: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # dotted key -> where it was set (env var)


# --------------------------------------------------------------------------- YAML with lines


def _key_lines(node: yaml.Node, prefix: str = "", out: dict[str, int] | None = None) -> dict[str, int]:
    out = {} if out is None else out
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            dotted = f"{prefix}{key}"
            out[dotted] = key_node.start_mark.line + 1
            _key_lines(value_node, dotted + ".", out)
    return out


def parse_yaml_file(path: Path, display: str) -> _Layer:
    """A config file: a regular UTF-8 file (a FIFO, a device or a symlink loop is one clear error)."""
    try:
        text = read_text(path, max_bytes=MAX_YAML_CHARS * 4, display=display)
    except DocumentError as exc:
        raise ConfigError(exc.message, path=display, line=exc.line) from None
    return parse_yaml_text(text, display)


def parse_yaml_text(text: str, display: str) -> _Layer:
    try:
        values, node = load_mapping(text)
    except NotAMapping:
        raise ConfigError("top level must be a mapping of sections", path=display, line=1) from None
    except YamlError as exc:
        raise ConfigError(f"invalid YAML: {exc.message}", path=display, line=exc.line) from None
    return _Layer("", display, values, _key_lines(node) if node is not None else {})


# --------------------------------------------------------------------------- validation


def _show(value: Any) -> str:
    """A value as the user wrote it in YAML: true/false/null, not Python's True/False/None; long
    values cut, so an error stays one readable line."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float) and not math.isfinite(value):  # as YAML spells them
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, int) and len(str(abs(value)) if abs(value) < 10**60 else "x" * 61) > 60:
        return f"an integer of {len(str(value)):,} digits"
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "…" + shown[-1]


# One function per kind: the value checked (and converted), or ValueError("must be …, not …").


def _as_bool(value: Any, spec: Field) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"must be true or false, not {_show(value)}")


def _as_int(value: Any, spec: Field) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be an integer, not {_show(value)}")
    return value


def _as_float(value: Any, spec: Field) -> float:
    if isinstance(value, str) and _YAML11_TEXT_NUMBER.fullmatch(value.strip()):
        # YAML 1.1 reads 1e3 (no dot, no exponent sign) as text
        raise ValueError(f"must be a number, not {_show(value)} (YAML reads it as text: write "
                         f"{_yaml_number(value.strip())})")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, not {_show(value)}")
    if not math.isfinite(value):
        # YAML's .nan and .inf: NaN passes every comparison with a limit, inf overflows timeouts
        raise ValueError(f"must be a finite number, not {_show(value)}")
    return float(value)


_YAML11_TEXT_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _yaml_number(text: str) -> str:
    """`1e3` as YAML 1.1 reads a number: a dot in the mantissa, a sign in the exponent (1.0e+3)."""
    mantissa, _, exponent = text.lower().partition("e")
    sign, mantissa = (mantissa[0], mantissa[1:]) if mantissa[:1] in "+-" else ("", mantissa)
    if "." not in mantissa:
        mantissa += ".0"
    if mantissa.startswith("."):
        mantissa = "0" + mantissa
    if mantissa.endswith("."):
        mantissa += "0"
    mantissa = sign + mantissa
    if exponent[:1] not in "+-":
        exponent = "+" + exponent
    return f"{mantissa}e{exponent}"


def _as_str(value: Any, spec: Field) -> str:
    if isinstance(value, (dict, list, bool)):
        raise ValueError(f"must be a string, not {_show(value)}")
    return str(value)


def _as_list(value: Any, spec: Field) -> list[str]:
    if isinstance(value, str):  # "a, b" from an environment variable or a flag
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise ValueError(f"must be a list of strings, not {_show(value)}")
    return [str(v) for v in value]


class _ItemError(ValueError):
    """A problem with one item of a map, named by its own dotted key (`tools.x`)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def _as_map(value: Any, spec: Field) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a mapping of names to strings, not {_show(value)}")
    for k, v in value.items():
        if spec.choices and v not in spec.choices:
            raise _ItemError(str(k), f"must be one of {', '.join(spec.choices)}, not {_show(v)}")
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise _ItemError(str(k), f"must be a string, not {_show(v)}")
    return {str(k): str(v) for k, v in value.items()}


def _as_choice(value: Any, spec: Field) -> str:
    if isinstance(value, bool):  # YAML 1.1 reads a bare off/on/no/yes as a boolean
        value = "on" if value else "off"
    if not isinstance(value, str) or value not in spec.choices:
        raise ValueError(f"must be one of {', '.join(spec.choices)}, not {_show(value)}")
    return value


_KIND_COERCIONS: dict[str, Callable[[Any, Field], Any]] = {
    "bool": _as_bool, "int": _as_int, "float": _as_float, "str": _as_str, "list": _as_list, "choice": _as_choice,
    "map": _as_map,
}


def _limit_problem(value: Any, spec: Field) -> str | None:
    if spec.kind not in ("int", "float"):
        return None
    if spec.minimum is not None and value < spec.minimum:
        return f"must be at least {spec.minimum:g}, not {_show(value)}"
    if spec.maximum is not None and value > spec.maximum:
        return f"must be at most {spec.maximum:g}, not {_show(value)}"
    return None


def _coerce(value: Any, spec: Field, dotted: str) -> Any:
    """Return the validated value or raise ValueError with a human reason."""
    if value is None:
        if spec.nullable:
            return None
        raise ValueError(f"'{dotted}' must not be null")
    try:
        coerced = _KIND_COERCIONS[spec.kind](value, spec)
    except _ItemError as exc:
        raise ValueError(f"'{dotted}.{exc.key}' {exc}") from None
    except ValueError as exc:
        raise ValueError(f"'{dotted}' {exc}") from None
    problem = _limit_problem(coerced, spec) or (spec.check(coerced) if spec.check is not None else None)
    if problem:
        raise ValueError(f"'{dotted}' {problem}")
    return coerced


SECRET_KEYS = frozenset({"api_key", "apikey", "key", "token", "secret", "password"})


def _validate_layer(layer: _Layer, errors: list[ConfigError]) -> dict[str, Any]:
    """Check one layer against the schema; return {dotted: value} of what it sets."""
    out: dict[str, Any] = {}

    def err(dotted: str, message: str) -> None:
        path = layer.sources.get(dotted, layer.path)
        errors.append(ConfigError(message, path=path, line=layer.lines.get(dotted)))

    def walk(values: Any, schema: Mapping[str, Any], prefix: str) -> None:
        if not isinstance(values, Mapping):
            err(prefix.rstrip("."), f"'{prefix.rstrip('.')}' must be a mapping, not {values!r}")
            return
        for key, value in values.items():
            key = str(key)
            dotted = f"{prefix}{key}"
            if prefix == "providers.":
                walk_provider(key, value, dotted)
                continue
            if prefix == "mcp.servers.":
                walk_mcp_server(key, value, dotted)
                continue
            if key not in schema:
                err(dotted, f"unknown key '{dotted}'" + did_you_mean(key, schema))
                continue
            spec = schema[key]
            if isinstance(spec, Field):
                try:
                    out[dotted] = _coerce(value, spec, dotted)
                except ValueError as exc:
                    err(dotted, str(exc))
            else:
                if value is None:
                    continue
                walk(value, spec, dotted + ".")

    def known_keys(value: Any, dotted: str, fields: Mapping[str, Field], must_be: str,
                   refuse: Callable[[Any, str], str | None] | None = None) -> Iterator[tuple[Any, Any, str]]:
        """(key, value, dotted key) of each known key of one entry of an open section (a provider,
        an MCP server); an entry that is not a mapping, a key `refuse` has a reason for, and an
        unknown key are reported instead."""
        if value is None:
            return
        if not isinstance(value, Mapping):
            err(dotted, f"'{dotted}' must be {must_be}")
            return
        for key, item in value.items():
            sub = f"{dotted}.{key}"
            reason = refuse(key, sub) if refuse is not None else None
            if reason is None and key not in fields:
                reason = f"unknown key '{sub}'" + did_you_mean(str(key), fields)
            if reason is not None:
                err(sub, reason)
                continue
            yield key, item, sub

    def walk_provider(name: str, value: Any, dotted: str) -> None:
        def secret(key: Any, sub: str) -> str | None:
            if key in SECRET_KEYS:  # §3: secrets never live in kit.yaml, which goes into git
                return (f"'{sub}': secrets are never stored in kit.yaml; put the key in an environment "
                        f"variable and name it with '{dotted}.api_key_env'")
            return None

        for key, item, sub in known_keys(value, dotted, PROVIDER_FIELDS, "a mapping of provider settings", secret):
            if key == "models":
                walk_models(item, sub)
                continue
            try:
                out[sub] = _coerce(item, PROVIDER_FIELDS[key], sub)
            except ValueError as exc:
                err(sub, str(exc))

    def walk_models(value: Any, dotted: str) -> None:
        # model names hold dots (qwen2.5-7b): the whole mapping is one value under `models`
        if value is None:
            return
        if not isinstance(value, Mapping):
            err(dotted, f"'{dotted}' must map model names to settings (max_tokens, temperature, top_p, stop)")
            return
        models: dict[str, Any] = {}
        for model, settings in value.items():
            where = f"{dotted}.{model}"
            if settings is None:
                continue
            if not isinstance(settings, Mapping):
                err(dotted, f"'{where}' must be a mapping of max_tokens, temperature, top_p, stop")
                continue
            good: dict[str, Any] = {}
            for key, item in settings.items():
                if key not in GENERATION_FIELDS:
                    err(dotted, f"unknown key '{where}.{key}'" + did_you_mean(str(key), GENERATION_FIELDS))
                    continue
                try:
                    good[str(key)] = _coerce(item, GENERATION_FIELDS[key], f"{where}.{key}")
                except ValueError as exc:
                    err(dotted, str(exc))
            models[str(model)] = good
        out[dotted] = models

    def walk_mcp_server(name: str, value: Any, dotted: str) -> None:
        if not MCP_NAME_RE.match(name) or len(name) > 40:
            err(dotted, f"MCP server name '{name}' must be up to 40 letters, digits, '-' and single '_' "
                        "(a double underscore separates server and tool in the agent's tool names)")
            return
        for key, item, sub in known_keys(value, dotted, MCP_SERVER_FIELDS, "a mapping (command/args/env, or url)"):
            try:
                coerced = _coerce(item, MCP_SERVER_FIELDS[key], sub)
            except ValueError as exc:
                err(sub, str(exc))
                continue
            if key in ("env", "headers"):
                # a secret's value must come from a ${VAR} reference ("Bearer ${API_TOKEN}" is fine)
                secret = next((k for k, v in coerced.items()
                               if _SECRET_NAME_RE.search(k) and not _ENV_REF_RE.search(v)), None)
                if secret is not None:  # §3: kit.yaml goes into git
                    var = re.sub(r"[^A-Za-z0-9]", "_", secret).upper()
                    shown = f"Bearer ${{{var}}}" if secret.lower() == "authorization" else f"${{{var}}}"
                    err(sub, f"'{sub}.{secret}': secrets are never stored in kit.yaml; write "
                             f"'{shown}' to pass Kit's own environment variable")
                    continue
            out[sub] = coerced

    walk(layer.values, SCHEMA, "")
    return out


def _env_layer(environ: Mapping[str, str]) -> _Layer:
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    for name, raw in sorted(environ.items()):
        if not name.startswith("KIT_") or "__" not in name:
            continue
        parts = [p.lower() for p in name[4:].split("__")]
        if not all(parts):
            continue
        try:
            parsed = safe_values(raw) if raw.strip() else None
        except YamlError:
            parsed = raw
        if isinstance(parsed, dict):
            parsed = raw
        node = values
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[parts[-1]] = parsed
            names[".".join(parts)] = f"environment variable {name}"
    return _Layer("env", "environment (KIT_*__*)", values, sources=names)


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _get(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _merge_models(before: Mapping[str, Any], later: Mapping[str, Any]) -> dict[str, Any]:
    merged = {name: dict(values) for name, values in before.items()}
    for name, values in later.items():
        merged.setdefault(name, {}).update(values)
    return merged


def _cross_checks(data: dict[str, Any], sources: dict[str, str], errors: list[ConfigError],
                  lines: dict[str, tuple[str, int | None]]) -> None:
    """Checks across settings. Each failing one is reported and put right in `data`, so every
    other setting still applies: the entry at fault is left out (an MCP server, a provider) or the
    pair that disagrees takes its defaults (one bad server must not cost the model and the rest)."""
    def report(message: str, dotted: str) -> None:
        path, line = lines.get(dotted, (CONFIG_FILE, None))
        errors.append(ConfigError(message, path=path, line=line))

    def drop(dotted: str) -> None:
        section, _, name = dotted.rpartition(".")
        _get(data, section).pop(name, None)
        for key in [k for k in sources if k == dotted or k.startswith(dotted + ".")]:
            del sources[key]

    def reset(*dotted: str) -> None:
        default = defaults()
        for key in dotted:
            _set(data, key, _get(default, key))
            sources[key] = "default"

    for name, server in list(data["mcp"]["servers"].items()):
        has_command, has_url = bool(server.get("command")), bool(server.get("url"))
        if has_command == has_url:
            report(f"MCP server '{name}' needs either 'command' (stdio) or 'url' (streamable HTTP)"
                   + (", not both" if has_url else ""), f"mcp.servers.{name}")
            drop(f"mcp.servers.{name}")
        elif has_url and (problem := base_url_problem(f"mcp.servers.{name}.url", server["url"])):
            report(problem, f"mcp.servers.{name}.url")  # one URL rule for servers and providers
            drop(f"mcp.servers.{name}")
    b = data["bootstrap"]
    if b["head_ratio"] + b["tail_ratio"] > 1.0 + 1e-9:
        report("bootstrap.head_ratio + bootstrap.tail_ratio must not exceed 1", "bootstrap.tail_ratio")
        reset("bootstrap.head_ratio", "bootstrap.tail_ratio")
    c = data["memory"]["chunk"]
    if c["overlap"] >= c["tokens"]:
        report("memory.chunk.overlap must be smaller than memory.chunk.tokens", "memory.chunk.overlap")
        reset("memory.chunk.overlap", "memory.chunk.tokens")
    for name, prov in list(data["providers"].items()):
        problem = _provider_problem(name, prov)
        if problem is not None:
            message, dotted = problem
            report(message, dotted)
            # left out whole: a provider without its base_url would talk to the API's own (a
            # `type: openai` one to api.openai.com), sending the conversation where it was not meant to go
            drop(f"providers.{name}")


def _provider_problem(name: str, prov: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why provider `name` cannot work as configured, and the dotted key to blame; None if it can."""
    if name not in ("openai", "anthropic", "ollama") and not prov.get("type"):
        return f"provider '{name}' needs 'type: openai|anthropic|ollama'", f"providers.{name}"
    for key, problem in (("base_url", base_url_problem), ("api_key_env", api_key_env_problem)):
        dotted = f"providers.{name}.{key}"
        message = problem(dotted, prov.get(key))
        if message is not None:
            return message, dotted
    return None


# --------------------------------------------------------------------------- provider values
# Checked here for kit.yaml and again by kit.providers.registry for a plain-dict config (a library
# caller's): one wording for both.

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_http_url(value: str) -> bool:
    """An http:// or https:// URL with a host, a numeric port if any, and nothing a request line
    cannot carry (whitespace, control characters: a trailing space made http.client refuse it)."""
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def base_url_problem(dotted: str, value: Any) -> str | None:
    """`'providers.lab.base_url' must be an http:// or https:// URL, not 'notaurl'`, or None (unset
    or fine). What may be a secret — a user:password, a query string — is not repeated."""
    if value is None or (isinstance(value, str) and is_http_url(value)):
        return None
    text = str(value)
    hint = " (no spaces or control characters)" if any(ch.isspace() or ord(ch) < 32 for ch in text) else ""
    guess = f"http://{text.strip()}"
    if "://" not in text and is_http_url(guess) and urlsplit(guess).port:  # `127.0.0.1:8080/v1`
        hint = f" (did you mean '{url_without_secrets(guess)}'?)"
    return f"'{dotted}' must be an http:// or https:// URL, not {_show(url_without_secrets(text))}{hint}"


def url_without_secrets(url: str) -> str:
    """`url` with its user:password and its query string (`?api_key=…`) replaced by `…`: how every
    message shows a configured URL (they reach terminals, logs and issue reports)."""
    return re.sub(r"\?[^#\s]*", "?…", re.sub(r"//[^/@\s]*@", "//…@", url), count=1)


def api_key_env_problem(dotted: str, value: Any) -> str | None:
    """The problem of an api_key_env that cannot be a variable's name, or None. The value is never
    repeated: what does not look like a name is most likely the key itself."""
    if not value or (isinstance(value, str) and ENV_NAME_RE.match(value)):
        return None
    return (f"'{dotted}' must name an environment variable (like OPENAI_API_KEY), not hold the key itself: "
            "put the key in the environment")


def load_config(
    workspace: str | os.PathLike | None = None,
    *,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_file: Path | None = None,
    workspace_text: str | None = None,
) -> Config:
    """Build the effective config; raise ConfigError (with `.errors` listing every problem)."""
    environ = os.environ if environ is None else environ
    errors: list[ConfigError] = []
    layers: list[_Layer] = []

    ufile = user_file if user_file is not None else user_config_file()
    if os.path.lexists(ufile):
        try:
            layer = parse_yaml_file(ufile, str(ufile))
            layer.name = "user"
            layers.append(layer)
        except ConfigError as exc:
            errors.append(exc)
    if workspace is not None:
        wfile = Path(workspace) / CONFIG_FILE
        if workspace_text is not None or os.path.lexists(wfile):
            try:
                if workspace_text is not None:
                    layer = parse_yaml_text(workspace_text, CONFIG_FILE)
                else:
                    layer = parse_yaml_file(wfile, CONFIG_FILE)
                layer.name = "workspace"
                layers.append(layer)
            except ConfigError as exc:
                errors.append(exc)
    layers.append(_env_layer(environ))
    if flags:
        flag_values: dict[str, Any] = {}
        for dotted, value in flags.items():
            _set(flag_values, dotted, value)
        layers.append(_Layer("flag", "command-line flags", flag_values))

    data = defaults()
    sources: dict[str, str] = {k: "default" for k in _flatten(data)}
    lines: dict[str, tuple[str, int | None]] = {}
    for layer in layers:
        for dotted, value in _validate_layer(layer, errors).items():
            if dotted.startswith("providers.") and dotted.endswith(".models"):
                # per-model settings merge across layers, model by model and key by key
                value = _merge_models(_get(data, dotted) or {}, value)
            _set(data, dotted, value)
            sources[dotted] = layer.name
            lines[dotted] = (layer.path, layer.lines.get(dotted))
        for dotted, line in layer.lines.items():
            lines.setdefault(dotted, (layer.path, line))
    for prov in data["providers"].values():
        for key, spec in PROVIDER_FIELDS.items():
            prov.setdefault(key, spec.default)
    for server in data["mcp"]["servers"].values():
        for key, spec in MCP_SERVER_FIELDS.items():
            server.setdefault(key, copy.deepcopy(spec.default))
    files = tuple(layer.path for layer in layers if layer.name in ("user", "workspace"))
    _cross_checks(data, sources, errors, lines)
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        exc = ConfigError(first.message + more, path=first.path, line=first.line)
        exc.errors = errors  # type: ignore[attr-defined]
        # Every valid value of every layer, for a first load that must start anyway: one typo
        # should not throw away the model and the rest (what a cross-check refused is left out).
        exc.partial = Config(data=data, sources=sources, files=files, lines=lines)  # type: ignore[attr-defined]
        raise exc
    return Config(data=data, sources=sources, files=files, lines=lines)


def mcp_server_names(config: Any) -> tuple[str, ...]:
    """The MCP servers configured and enabled in `mcp.servers` (what skills' `requires.mcp` needs);
    reads the config only: nothing is started. Anything with a dotted `get` will do too."""
    servers = config.mcp.servers if isinstance(config, Config) else (config.get("mcp.servers", {}) or {})
    return tuple(sorted(n for n, s in servers.items() if isinstance(s, Mapping) and s.get("enabled", True)))


def section_of(config: Any, dotted: str, cls: type[S]) -> S:
    """The typed section `dotted` (e.g. "tools.exec") of a Config; or of a plain mapping, which
    may be the whole config or that section alone (library callers and tests without a kit.yaml:
    what they leave out takes the schema's default); or the section itself; None: the defaults."""
    if isinstance(config, cls):
        return config
    if isinstance(config, Config):
        return attrgetter(dotted)(config)
    data: Any = config if isinstance(config, Mapping) else {}
    parts = dotted.split(".")
    if isinstance(data.get(parts[0]), Mapping):  # the whole config
        for part in parts:
            data = data.get(part) if isinstance(data, Mapping) else None
    return from_mapping(cls, data if isinstance(data, Mapping) else None)


def config_errors(exc: ConfigError) -> list[ConfigError]:
    return list(getattr(exc, "errors", [exc]))
