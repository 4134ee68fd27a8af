"""The config schema, as typed sections: one frozen dataclass per kit.yaml section.

Each setting's default and limits are declared once, here. `kit.config` derives the validation
schema from these classes, merges the layers and builds a `Settings` from the result, so the
engine reads `ws.config.memory.search.max_results` (an int, validated) and never repeats a
default. A field's kind comes from its annotation: int, float, bool, str, `X | None` (may be
null), `tuple[str, ...]` (a list of strings), str with `choices` (one of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from typing import Any

Check = Callable[[Any], "str | None"]  # a value -> a problem text, or None


@dataclass(frozen=True)
class Field:
    """One setting of the schema, as the validator sees it."""

    kind: str  # int | float | bool | str | list | choice | map | models
    default: Any
    nullable: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    check: Check | None = None


def setting(default: Any, *, choices: tuple[str, ...] = (), minimum: float | None = None,
            maximum: float | None = None, check: Check | None = None) -> Any:
    """A dataclass field carrying its default and its limits (read by `schema_of`)."""
    limits = {"choices": choices, "minimum": minimum, "maximum": maximum, "check": check}
    return field(default=default, metadata=limits)


def section(cls: type) -> Any:
    """A nested section: its own defaults are its fields' defaults."""
    return field(default_factory=cls, metadata={"section": cls})


class Section:
    """The base of the typed sections: frozen dataclasses whose __init__, __eq__, __hash__ and
    __repr__ are these shared ones. @dataclass generates each method from source per class, and
    23 sections cost 30 ms of CPU at every command's start that way, 2.5 ms like this (measured)."""

    __slots__ = ()

    def __init__(self, **values: Any) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            if f.name in values:
                value = values.pop(f.name)
            else:
                value = f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
            object.__setattr__(self, f.name, value)
        if values:
            raise TypeError(f"{type(self).__name__} has no setting {', '.join(sorted(values))}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))  # type: ignore[arg-type]
        return f"{type(self).__name__}({shown})"


# a section: a dataclass (fields, replace, asdict work) whose methods come from Section
frozen_section = dataclass(init=False, repr=False, eq=False)


def _valid_timezone(value: str) -> str | None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        return f"is not a known time zone (e.g. Europe/Berlin, America/New_York, UTC), not {value!r}"
    return None


def _names_a_model(value: str) -> str | None:
    # an empty name is no model: every memory command spent ~20 s finding that out, then searched
    # by keywords alone, and doctor said nothing
    return "must name a model (a folder or a Hugging Face name), not an empty string" if not value.strip() else None


def _workspace_relative(paths: Any) -> str | None:
    # an absolute path lost its leading slash further on ("tmp/x does not exist"), and "/" or ""
    # vanished without a word: each is said here, at kit.yaml's line
    for path in paths:
        text = str(path).strip()
        if not text.strip("/"):
            return f"must list folders or files in the workspace, not {text!r}"
        if text.startswith(("/", "~")):
            return f"must list paths relative to the workspace, not {text!r} (only the workspace is indexed)"
    return None


def _valid_cron(value: str) -> str | None:
    from croniter import croniter

    if not croniter.is_valid(value):
        return f"is not a valid cron expression (five fields, e.g. \"0 3 * * *\"), not {value!r}"
    return None


# --------------------------------------------------------------------------- agent


@frozen_section
class RetrySettings(Section):
    """Retries of the same model before failing over (kit.providers.failover)."""

    max_attempts: int = setting(3, minimum=1)  # requests per model and call, the first included
    max_wait_s: float = setting(30.0, minimum=0)  # total pause across the retries of a call
    backoff_s: float = setting(1.0, minimum=0)  # first pause; doubles, plus up to as much jitter


@frozen_section
class AgentSettings(Section):
    model: str = setting("ollama/llama3.2")
    fallbacks: tuple[str, ...] = setting(())
    max_iterations: int = setting(25, minimum=1)
    # tool calls of one reply run at the same time, at most this many (1: one after another);
    # tools that change state are serialised as they declare (kit.tools.registry.Tool.serial)
    parallel_tools: int = setting(4, minimum=1)
    context_window: int = setting(32000, minimum=1000)
    # the reply cap for hosted models, and for models served on this machine (type ollama or a
    # loopback base_url), where a rambling small model costs minutes (docs/providers.md)
    max_tokens: int = setting(4096, minimum=1)
    max_tokens_local: int = setting(1024, minimum=1)
    temperature: float | None = setting(None, minimum=0, maximum=2)
    top_p: float | None = setting(None, minimum=0, maximum=1)
    stop: tuple[str, ...] = setting(())
    retry: RetrySettings = section(RetrySettings)


# Generation settings: what a request asks of the model. None (or an empty stop list) leaves it
# to the next level: run flag > providers.<p>.models.<m> > providers.<p> > agent > server default.
GENERATION_FIELDS: dict[str, Field] = {
    "max_tokens": Field("int", None, nullable=True, minimum=1),
    "temperature": Field("float", None, nullable=True, minimum=0, maximum=2),
    "top_p": Field("float", None, nullable=True, minimum=0, maximum=1),
    "stop": Field("list", []),
}

# providers is open (any name may be added), so it stays a mapping, checked key by key
PROVIDER_FIELDS: dict[str, Field] = {
    "type": Field("choice", None, nullable=True, choices=("openai", "anthropic", "ollama")),
    "base_url": Field("str", None, nullable=True),
    "api_key_env": Field("str", None, nullable=True),
    "timeout_s": Field("float", 120.0, minimum=1),
    # stream replies (SSE); false asks for one JSON reply (a server whose streaming is broken)
    "stream": Field("bool", True),
    # Anthropic: cache_control breakpoints after the tools, the stable prompt prefix, the last message
    "prompt_cache": Field("bool", True),
    **GENERATION_FIELDS,
    # per model: {model name: {max_tokens, temperature, top_p, stop}}
    "models": Field("models", {}),
}

# the providers that exist by default
DEFAULT_PROVIDERS: dict[str, dict[str, Any]] = {
    "openai": {"type": "openai", "base_url": None, "api_key_env": "OPENAI_API_KEY"},
    "anthropic": {"type": "anthropic", "base_url": None, "api_key_env": "ANTHROPIC_API_KEY"},
    "ollama": {"type": "ollama", "base_url": "http://127.0.0.1:11434/v1", "api_key_env": None},
}


# --------------------------------------------------------------------------- prompt, skills, hooks, watch


@frozen_section
class BootstrapSettings(Section):
    max_chars_per_file: int = setting(20000, minimum=100)
    max_total_chars: int = setting(60000, minimum=100)
    head_ratio: float = setting(0.7, minimum=0, maximum=1)
    tail_ratio: float = setting(0.2, minimum=0, maximum=1)
    warning: str = setting("once", choices=("off", "once", "always"))


@frozen_section
class SkillsSettings(Section):
    max_in_prompt: int = setting(150, minimum=0)
    max_prompt_chars: int = setting(18000, minimum=0)
    extra_dirs: tuple[str, ...] = setting(())
    compat_dirs: bool = setting(True)


@frozen_section
class HooksSettings(Section):
    enabled: bool = setting(True)
    timeout_s: float = setting(10.0, minimum=0.1)
    # run the hooks of .claude/settings*.json and ~/.claude/settings.json (trust-gated)
    claude_code: bool = setting(False)


@frozen_section
class WatchSettings(Section):
    debounce_ms: int = setting(250, minimum=0)
    backend: str = setting("auto", choices=("auto", "native", "polling"))


# --------------------------------------------------------------------------- memory


@frozen_section
class SearchSettings(Section):
    max_results: int = setting(6, minimum=1)
    # the share of the query's best relevance a candidate needs (or another keep rule)
    min_score: float = setting(0.7, minimum=0, maximum=1)
    # the best cosine a query's candidates need before the vector side keeps any (below: only keyword hits)
    min_vector_score: float = setting(0.3, minimum=0, maximum=1)
    vector_weight: float = setting(0.7, minimum=0)
    text_weight: float = setting(0.3, minimum=0)
    candidate_multiplier: int = setting(4, minimum=1)  # each side gathers max(candidates, limit × this)
    candidates: int = setting(40, minimum=1)
    # of the recency prior: age = days until a newer note on the same topic
    half_life_days: float = setting(30.0, minimum=0)
    # cosine at which a newer candidate counts as a later word on the same topic
    same_topic: float = setting(0.6, minimum=-1, maximum=1)
    recency_weight: float = setting(0.1, minimum=0, maximum=1)  # the share of a score recency may take
    recency_query_weight: float = setting(0.35, minimum=0, maximum=1)  # for queries asking for the latest
    outside_period: float = setting(0.25, minimum=0, maximum=1)  # outside a period the query names
    min_relative: float = setting(0.0, minimum=0, maximum=1)  # keep results at this share of the best one
    second_hop: float = setting(0.8, minimum=0, maximum=1)  # notes found through the best hit's names (0: off)
    mmr_lambda: float = setting(0.7, minimum=0, maximum=1)
    snippet_chars: int = setting(700, minimum=20)
    # a neighbour joins the snippet with this share of the hit's relevance
    context_share: float = setting(0.5, minimum=0, maximum=1)


@frozen_section
class ChunkSettings(Section):
    tokens: int = setting(400, minimum=16)
    overlap: int = setting(80, minimum=0)


EMBEDDING_BACKENDS = ("auto", "onnx", "numpy", "torch")
EMBEDDING_QUANTIZE = ("none", "int8")


@frozen_section
class EmbeddingSettings(Section):
    """The `memory.embedding` section."""

    model: str = setting("all-MiniLM-L6-v2", check=_names_a_model)
    device: str = setting("cpu")
    batch_size: int = setting(64, minimum=1)  # texts per sentence-transformers batch (torch backend)
    # auto: onnx, else numpy (no onnxruntime), else torch (a model only torch runs)
    backend: str = setting("auto", choices=EMBEDDING_BACKENDS)
    quantize: str = setting("none", choices=EMBEDDING_QUANTIZE)  # onnx: int8 weights
    threads: int = setting(0, minimum=0)  # onnx batches run at once, one thread each; 0: the cores available


@frozen_section
class ActiveRecallSettings(Section):
    enabled: bool = setting(True)
    max_chars: int = setting(600, minimum=0)


@frozen_section
class MemorySettings(Section):
    search: SearchSettings = section(SearchSettings)
    chunk: ChunkSettings = section(ChunkSettings)
    embedding: EmbeddingSettings = section(EmbeddingSettings)
    active_recall: ActiveRecallSettings = section(ActiveRecallSettings)
    extra_paths: tuple[str, ...] = setting((), check=_workspace_relative)


# --------------------------------------------------------------------------- dreaming


@frozen_section
class LightSettings(Section):
    lookback_days: int = setting(2, minimum=0)
    limit: int = setting(100, minimum=0)
    dedupe: float = setting(0.9, minimum=0, maximum=1)


@frozen_section
class RemSettings(Section):
    lookback_days: int = setting(7, minimum=0)
    limit: int = setting(10, minimum=0)
    min_pattern_strength: float = setting(0.75, minimum=0, maximum=1)
    truth_min_confidence: float = setting(0.45, minimum=0, maximum=1)


@frozen_section
class DeepPhaseSettings(Section):
    limit: int = setting(10, minimum=0)
    min_score: float = setting(0.75, minimum=0, maximum=1)
    min_recall_count: int = setting(3, minimum=0)
    min_unique_queries: int = setting(2, minimum=0)
    min_recall_days: int = setting(2, minimum=0)
    max_age_days: int = setting(30, minimum=0)
    half_life_days: float = setting(14.0, minimum=0)


@frozen_section
class WeightSettings(Section):
    """The deep phase's signal weights (docs/dreaming.md)."""

    relevance: float = setting(0.30, minimum=0)
    frequency: float = setting(0.24, minimum=0)
    diversity: float = setting(0.15, minimum=0)
    recency: float = setting(0.15, minimum=0)
    consolidation: float = setting(0.10, minimum=0)
    conceptual: float = setting(0.06, minimum=0)


@frozen_section
class DreamingSettings(Section):
    enabled: bool = setting(False)
    schedule: str = setting("0 3 * * *", check=_valid_cron)
    timezone: str | None = setting(None, check=_valid_timezone)
    light: LightSettings = section(LightSettings)
    rem: RemSettings = section(RemSettings)
    deep: DeepPhaseSettings = section(DeepPhaseSettings)
    weights: WeightSettings = section(WeightSettings)
    memory_max_chars: int = setting(10000, minimum=0)
    diary: str = setting("template", choices=("template", "llm", "off"))


# --------------------------------------------------------------------------- git, fleet, tools


@frozen_section
class GitSettings(Section):
    autocommit: bool = setting(False)


@frozen_section
class FleetConfig(Section):
    """The fleet controller's and workers' settings (kit fleet, docs/fleet.md); set them in the
    user file or the environment (KIT_FLEET__BROKER=redis://…), not in one workspace's kit.yaml."""

    broker: str = setting("redis://127.0.0.1:6379/0")
    backend: str | None = setting(None)  # result backend; null = the broker's URL
    queue: str = setting("kit")
    registry: str | None = setting(None)  # null = $XDG_CONFIG_HOME/kit/fleet.yaml
    visibility_timeout_s: float = setting(3600.0, minimum=1)
    task_time_limit_s: float = setting(1800.0, minimum=1)  # keep it below the visibility timeout
    heartbeat_schedule: str | None = setting(None, check=_valid_cron)
    beat_refresh_s: float = setting(300.0, minimum=1)


@frozen_section
class McpSettings(Section):
    """MCP servers whose tools join the agent's (kit.mcp_client); open, like providers: any name,
    each checked against kit.config.MCP_SERVER_FIELDS."""

    servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, metadata={"open": {}})


@frozen_section
class ExecSettings(Section):
    mode: str = setting("ask", choices=("deny", "ask", "allow"))
    allow: tuple[str, ...] = setting(())
    deny: tuple[str, ...] = setting(())
    timeout_s: float = setting(60.0, minimum=1)


@frozen_section
class ToolsSettings(Section):
    exec: ExecSettings = section(ExecSettings)
    max_result_chars: int = setting(16000, minimum=100)
    # whole outputs a cut left out, under .kit/tool-output/ (kit.tools.saved_output): kept this long
    # after their session last saved one, and within this many megabytes in all
    output_keep_days: float = setting(7.0, minimum=0)
    output_keep_mb: float = setting(100.0, minimum=0)


@frozen_section
class Settings(Section):
    """The whole config, typed (providers stay a mapping: any name may be added)."""

    agent: AgentSettings = section(AgentSettings)
    providers: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: dict(DEFAULT_PROVIDERS),
                                                       metadata={"open": DEFAULT_PROVIDERS})
    bootstrap: BootstrapSettings = section(BootstrapSettings)
    skills: SkillsSettings = section(SkillsSettings)
    hooks: HooksSettings = section(HooksSettings)
    watch: WatchSettings = section(WatchSettings)
    memory: MemorySettings = section(MemorySettings)
    dreaming: DreamingSettings = section(DreamingSettings)
    git: GitSettings = section(GitSettings)
    fleet: FleetConfig = section(FleetConfig)
    mcp: McpSettings = section(McpSettings)
    tools: ToolsSettings = section(ToolsSettings)


# --------------------------------------------------------------------------- schema and building

_KINDS = {"int": "int", "float": "float", "bool": "bool", "str": "str", "tuple[str, ...]": "list"}


def _field_spec(f: Any) -> Field:
    annotation = str(f.type)
    nullable = annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    choices = f.metadata.get("choices", ())
    if base not in _KINDS or (choices and base != "str"):
        raise TypeError(f"setting {f.name!r}: unsupported annotation {annotation!r}")
    default = list(f.default) if base == "tuple[str, ...]" else f.default
    return Field("choice" if choices else _KINDS[base], default, nullable=nullable, choices=choices,
                 minimum=f.metadata.get("minimum"), maximum=f.metadata.get("maximum"),
                 check=f.metadata.get("check"))


def schema_of(cls: type) -> dict[str, Any]:
    """The validation schema of a settings class: {key: Field | nested schema | open mapping}."""
    out: dict[str, Any] = {}
    for f in fields(cls):
        if "section" in f.metadata:
            out[f.name] = schema_of(f.metadata["section"])
        elif "open" in f.metadata:
            out[f.name] = f.metadata["open"]
        else:
            out[f.name] = _field_spec(f)
    return out


def build(cls: type, data: Mapping[str, Any]) -> Any:
    """A settings object from merged, validated values (every key present: the defaults are in)."""
    values: dict[str, Any] = {}
    for f in fields(cls):
        value = data[f.name]
        if "section" in f.metadata:
            value = build(f.metadata["section"], value)
        elif isinstance(value, list):
            value = tuple(value)
        values[f.name] = value
    return cls(**values)


def from_mapping(cls: type, data: Mapping[str, Any] | None) -> Any:
    """A settings object from a partial plain mapping (a library caller or a test without a
    kit.yaml): a missing key takes the schema's default, an unknown one is ignored, nothing is
    validated (load_config does that)."""
    values: dict[str, Any] = {}
    for f in fields(cls):
        if not data or f.name not in data:
            continue
        value = data[f.name]
        if "section" in f.metadata:
            value = from_mapping(f.metadata["section"], value if isinstance(value, Mapping) else None)
        elif isinstance(value, list):
            value = tuple(value)
        values[f.name] = value
    return cls(**values)


def weight_shares(weights: Sequence[float]) -> list[float] | None:
    """Weights from the settings as shares summing to 1; None when they sum to 0 or less (each
    caller has its own default then). Weights near the float maximum (or inf, from the API) are
    first taken over the largest, so that their sum does not overflow: inf ones share alike."""
    total = sum(weights)
    if total <= 0:
        return None
    if math.isinf(total):
        largest = max(weights)
        weights = [float(math.isinf(w)) if math.isinf(largest) else w / largest for w in weights]
        total = sum(weights)
    return [w / total for w in weights]
