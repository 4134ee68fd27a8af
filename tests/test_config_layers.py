"""Config: defaults < user < workspace < env < flags, with file:line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.config import config_errors, defaults, load_config
from kit.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    return tmp_path / "user" / "kit.yaml"


def test_defaults_match_the_spec(tmp_path: Path, user_file: Path):
    cfg = load_config(tmp_path, environ={}, user_file=user_file)
    assert cfg["agent.model"] == "ollama/llama3.2"
    assert cfg["bootstrap.max_total_chars"] == 60000
    assert cfg["memory.search.vector_weight"] == 0.7
    assert cfg["dreaming.deep.min_recall_count"] == 3
    assert cfg["providers.ollama.base_url"] == "http://127.0.0.1:11434/v1"
    assert cfg["tools.exec.mode"] == "ask"
    assert all(cfg.source(k) == "default" for k in cfg.flat())


def test_each_layer_overrides_the_one_below(tmp_path: Path, user_file: Path):
    write(user_file, "agent:\n  model: user/model\n  max_iterations: 7\nwatch:\n  debounce_ms: 11\n")
    write(tmp_path / "kit.yaml", "agent:\n  model: ws/model\n  context_window: 9000\nwatch:\n  debounce_ms: 22\n")
    env = {"KIT_WATCH__DEBOUNCE_MS": "33", "KIT_AGENT__CONTEXT_WINDOW": "8000"}
    cfg = load_config(tmp_path, environ=env, user_file=user_file, flags={"watch.debounce_ms": 44})
    assert (cfg["agent.max_iterations"], cfg.source("agent.max_iterations")) == (7, "user")
    assert (cfg["agent.model"], cfg.source("agent.model")) == ("ws/model", "workspace")
    assert (cfg["agent.context_window"], cfg.source("agent.context_window")) == (8000, "env")
    assert (cfg["watch.debounce_ms"], cfg.source("watch.debounce_ms")) == (44, "flag")
    assert cfg.source("agent.fallbacks") == "default"


def test_unknown_key_names_line_and_suggests(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "agent:\n  model: x/y\n  max_iteratons: 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert str(info.value) == "kit.yaml:3: unknown key 'agent.max_iteratons' (did you mean 'max_iterations'?)"


def test_unknown_section_suggests(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "# comment\nbootstrapp:\n  warning: once\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert str(info.value) == "kit.yaml:2: unknown key 'bootstrapp' (did you mean 'bootstrap'?)"


def test_wrong_type_names_line(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "memory:\n  search:\n    max_results: many\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert info.value.line == 3
    assert "'memory.search.max_results' must be an integer, not 'many'" in str(info.value)


def test_every_error_is_collected(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "agent:\n  modle: 1\n  max_iterations: -2\nwatch:\n  backend: inotify\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    found = [(e.line, e.message) for e in config_errors(info.value)]
    assert found == [
        (2, "unknown key 'agent.modle' (did you mean 'model'?)"),
        (3, "'agent.max_iterations' must be at least 1, not -2"),
        (5, "'watch.backend' must be one of auto, native, polling, not 'inotify'"),
    ]


def test_invalid_yaml_reports_line(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "agent:\n  model: x\n fallbacks: [\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert info.value.path == "kit.yaml"
    assert info.value.line == 3
    assert "invalid YAML" in info.value.message


def test_user_file_errors_name_that_file(tmp_path: Path, user_file: Path):
    write(user_file, "hooks:\n  timeout_s: soon\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert info.value.path == str(user_file)
    assert info.value.line == 2


def test_env_nested_keys_and_lists(tmp_path: Path, user_file: Path):
    env = {
        "KIT_MEMORY__SEARCH__MAX_RESULTS": "9",
        "KIT_MEMORY__SEARCH__MIN_SCORE": "0.5",
        "KIT_AGENT__FALLBACKS": "[openai/gpt-4o-mini, anthropic/claude-x]",
        "KIT_SKILLS__EXTRA_DIRS": "/a, /b",
        "KIT_DREAMING__ENABLED": "true",
        "KIT_NOW": "2026-01-01",  # not a config variable (no __): ignored
    }
    cfg = load_config(tmp_path, environ=env, user_file=user_file)
    assert cfg["memory.search.max_results"] == 9
    assert cfg["memory.search.min_score"] == 0.5
    assert cfg["agent.fallbacks"] == ["openai/gpt-4o-mini", "anthropic/claude-x"]
    assert cfg["skills.extra_dirs"] == ["/a", "/b"]
    assert cfg["dreaming.enabled"] is True
    assert cfg.source("memory.search.max_results") == "env"


def test_env_unknown_key_is_an_error(tmp_path: Path, user_file: Path):
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={"KIT_AGENT__MODLE": "x"}, user_file=user_file)
    assert "unknown key 'agent.modle'" in str(info.value)
    assert info.value.path == "environment variable KIT_AGENT__MODLE"


def test_yaml_off_is_the_off_mode_not_false(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "bootstrap:\n  warning: off\n")
    assert load_config(tmp_path, environ={}, user_file=user_file)["bootstrap.warning"] == "off"


def test_cross_field_rules(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "bootstrap:\n  head_ratio: 0.8\n  tail_ratio: 0.3\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert info.value.line == 3
    assert "must not exceed 1" in info.value.message


def test_custom_provider_needs_a_type(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "providers:\n  vllm:\n    base_url: http://127.0.0.1:8000/v1\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert "provider 'vllm' needs 'type" in info.value.message
    write(tmp_path / "kit.yaml", "providers:\n  vllm:\n    type: openai\n    base_url: http://127.0.0.1:8000/v1\n")
    cfg = load_config(tmp_path, environ={}, user_file=user_file)
    assert cfg["providers.vllm.base_url"] == "http://127.0.0.1:8000/v1"
    assert cfg["providers.vllm.api_key_env"] is None


def test_template_kit_yaml_documents_every_default():
    """The commented kit.yaml that `kit init` writes shows each section's real defaults."""
    from kit.paths import bundled

    text = (bundled("workspace") / "kit.yaml").read_text()
    d = defaults()
    for section in d:
        assert f"# {section}:" in text, section
    for key in ("max_chars_per_file: 20000", "max_total_chars: 60000", "debounce_ms: 250",
                "memory_max_chars: 10000", "max_result_chars: 16000", 'schedule: "0 3 * * *"'):
        assert key in text


def test_every_value_the_template_kit_yaml_shows_is_the_default():
    """Regression: the template said `memory.search: {min_score: 0.35, min_vector_score: 0.35}` after
    issue 13 made them 0.7 (of the query's best) and 0.3 — a new user read the wrong thresholds. The
    commented kit.yaml, read as YAML, holds the schema's defaults wherever it shows a value (the open
    mappings, providers and mcp.servers, show examples)."""
    import yaml

    from kit.paths import bundled

    lines = (bundled("workspace") / "kit.yaml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# agent:"))  # after the header prose
    shown = yaml.safe_load("\n".join(line[2:] if line.startswith("# ") else "" for line in lines[start:]))

    def differing(prefix: str, value, default):
        if isinstance(value, dict) and prefix not in ("providers", "mcp.servers"):
            for key, inner in value.items():
                name = f"{prefix}.{key}" if prefix else key
                assert isinstance(default, dict) and key in default, f"{name} is not a setting"
                yield from differing(name, inner, default[key])
        elif not isinstance(value, dict) and value != default:
            yield f"{prefix}: shows {value!r}, the default is {default!r}"

    assert list(differing("", shown, defaults())) == []


def test_template_kit_yaml_names_every_setting():
    """Regression: `agent.parallel_tools` and `hooks.claude_code` were settings a new user could not
    find in the kit.yaml `kit init` writes ("every key optional, defaults shown commented")."""
    import re

    from kit.paths import bundled

    text = (bundled("workspace") / "kit.yaml").read_text()

    def leaves(prefix: str, value):
        # providers and mcp.servers are open mappings (any name): their entries are examples
        if isinstance(value, dict) and value and prefix not in ("providers", "mcp.servers"):
            for key, inner in value.items():
                yield from leaves(f"{prefix}.{key}" if prefix else key, inner)
        else:
            yield prefix

    # each key is looked for under its own section, not anywhere: `dreaming.deep.limit` is not
    # named by `dreaming.rem.limit`, nor `hooks.enabled` by `dreaming.enabled` (35 of the 98 leaf
    # names appear more than once, so a search of the whole text could not fail for them)
    lines = text.splitlines()
    blocks: dict[str, str] = {"": text}
    stack: list[tuple[int, str]] = []  # (indent, dotted key) of the commented keys above this line
    for i, line in enumerate(lines):
        m = re.match(r"#( +)([a-z_]+):", line)
        if not m:
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = f"{stack[-1][1]}.{m.group(2)}" if stack else m.group(2)
        stack.append((indent, key))
        end = next((j for j in range(i + 1, len(lines))
                    if (n := re.match(r"#( +)[a-z_]+:", lines[j])) and len(n.group(1)) <= indent), len(lines))
        blocks[key] = "\n".join(lines[i:end])

    def named(key: str) -> bool:
        parent, _, leaf = key.rpartition(".")
        return re.search(rf"\b{re.escape(leaf)}\b", blocks.get(parent, "")) is not None

    missing = [key for key in leaves("", defaults()) if not named(key)]
    assert missing == []


def test_a_secret_in_kit_yaml_is_refused_with_the_way_to_do_it(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", "providers:\n  openai:\n    api_key: sk-123\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert str(info.value) == (
        "kit.yaml:3: 'providers.openai.api_key': secrets are never stored in kit.yaml; put the key in an "
        "environment variable and name it with 'providers.openai.api_key_env'"
    )
    assert "sk-123" not in str(info.value)


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("dreaming:\n  timezone: Mars/Olympus\n", 2, "'dreaming.timezone' is not a known time zone"),
        ("dreaming:\n  schedule: every night\n", 2, "'dreaming.schedule' is not a valid cron expression"),
        ("agent:\n  max_iterations: true\n", 2, "'agent.max_iterations' must be an integer, not true"),
        ("dreaming:\n  enabled: null\n", 2, "'dreaming.enabled' must not be null"),
    ],
    ids=["timezone", "schedule", "yaml-spelling", "null"],
)
def test_values_are_checked_where_they_are_written(tmp_path: Path, user_file: Path, text, line, message):
    """Regression: a bad timezone was accepted, a bad schedule surfaced only when enabled, with no line."""
    write(tmp_path / "kit.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={}, user_file=user_file)
    assert info.value.line == line
    assert info.value.message.startswith(message), info.value.message


def test_valid_timezone_and_schedule(tmp_path: Path, user_file: Path):
    write(tmp_path / "kit.yaml", 'dreaming:\n  timezone: Europe/Berlin\n  schedule: "30 4 * * 1-5"\n')
    cfg = load_config(tmp_path, environ={}, user_file=user_file)
    assert (cfg["dreaming.timezone"], cfg["dreaming.schedule"]) == ("Europe/Berlin", "30 4 * * 1-5")
