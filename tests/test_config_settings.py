"""Typed config sections (kit/settings.py): the schema's one home for defaults and limits."""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError, fields, replace
from operator import attrgetter
from pathlib import Path

import pytest

from kit.config import SCHEMA, Field, load_config, section_of
from kit.memory.search import SearchSettings
from kit.settings import AgentSettings, ExecSettings, Settings, from_mapping

ENGINE = Path(__file__).resolve().parents[1] / "engine" / "kit"


def _load(tmp_path: Path, text: str = "", environ: dict[str, str] | None = None):
    (tmp_path / "kit.yaml").write_text(text, encoding="utf-8")
    return load_config(tmp_path, environ=environ or {}, user_file=tmp_path / "no-user.yaml")


def test_sections_are_typed_and_carry_every_layer(tmp_path):
    cfg = _load(tmp_path, "agent:\n  fallbacks: [openai/gpt-4o-mini]\n  retry: {max_attempts: 5}\n"
                          "memory:\n  search: {max_results: 9, min_score: 1}\n",
                environ={"KIT_TOOLS__EXEC__MODE": "allow"})
    assert cfg.agent.fallbacks == ("openai/gpt-4o-mini",)  # lists are tuples: the sections are frozen
    assert cfg.agent.retry.max_attempts == 5 and cfg.agent.retry.max_wait_s == 30.0
    assert cfg.memory.search == SearchSettings(max_results=9, min_score=1.0)
    assert type(cfg.memory.search.min_score) is float  # an int in YAML is a float setting's float
    assert cfg.tools.exec.mode == "allow" and cfg.tools.exec.timeout_s == 60.0
    assert cfg.dreaming.timezone is None and cfg.providers["ollama"]["type"] == "ollama"
    with pytest.raises(FrozenInstanceError):
        cfg.memory.search.max_results = 1  # type: ignore[misc]
    assert hash(cfg.memory.search) == hash(SearchSettings(max_results=9, min_score=1.0))
    assert repr(cfg.agent.retry) == "RetrySettings(max_attempts=5, max_wait_s=30.0, backoff_s=1.0)"


def test_every_schema_key_is_an_attribute_with_the_same_value(tmp_path):
    cfg = _load(tmp_path)
    keys = [k for k in cfg.flat() if not k.startswith("providers.")]
    assert len(keys) > 80
    for dotted in keys:
        value = attrgetter(dotted)(cfg)
        assert (list(value) if isinstance(value, tuple) else value) == cfg.get(dotted), dotted


def test_the_defaults_are_the_dataclass_defaults(tmp_path):
    # one place: a section built with no arguments is what an empty kit.yaml gives
    loaded = _load(tmp_path).settings
    assert replace(loaded, providers=Settings().providers) == Settings()  # providers: an open mapping
    assert loaded.providers["openai"]["timeout_s"] == 120.0
    assert SCHEMA["memory"]["search"]["max_results"] == Field("int", 6, minimum=1)
    assert SCHEMA["tools"]["exec"]["mode"] == Field("choice", "ask", choices=("deny", "ask", "allow"))
    assert SCHEMA["dreaming"]["timezone"].nullable and SCHEMA["agent"]["fallbacks"].kind == "list"


def test_a_plain_mapping_takes_the_schema_defaults_for_what_it_leaves_out():
    assert from_mapping(AgentSettings, {"max_tokens": 10, "unknown": 1}) == AgentSettings(max_tokens=10)
    assert from_mapping(ExecSettings, {"allow": ["git *"]}).allow == ("git *",)
    assert from_mapping(Settings, None) == Settings()


def test_get_takes_a_default_only_for_keys_the_schema_does_not_have(tmp_path):
    cfg = _load(tmp_path, "watch:\n  debounce_ms: 40\n")
    assert cfg.get("watch.debounce_ms") == 40 and cfg.get("watch.debounce_ms", 250) == 40
    assert cfg.get("mcp.servers", {}) == {}  # a section the schema does not have (yet)
    with pytest.raises(KeyError):
        cfg.get("watch.debounce")


def test_the_engine_reads_settings_typed_never_by_dotted_key():
    """`cfg.get("memory.search.max_results", 6)` repeated a default the schema already holds; the
    engine reads `cfg.memory.search.max_results`. A dotted config key in a get() call fails here."""
    sections = "|".join(f.name for f in fields(Settings))
    dotted_get = re.compile(rf"""(config|cfg|conf)\.get\(\s*["']({sections})(\.[a-z_.]+)?["']""")
    found = []
    for path in sorted(ENGINE.rglob("*.py")):
        if path.name in ("config.py", "settings.py"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if dotted_get.search(line):
                found.append(f"{path.relative_to(ENGINE)}:{number}: {line.strip()}")
    # the provider registry also takes a plain dict config (library callers, tests): its two reads
    # of a dict's own sections are not Config reads
    allowed = {"providers/registry.py"}
    assert [f for f in found if f.split(":")[0] not in allowed] == []


def test_section_of_reads_a_config_a_whole_dict_or_the_section_itself(tmp_path):
    cfg = _load(tmp_path, "tools:\n  exec: {mode: allow}\n")
    assert section_of(cfg, "tools.exec", ExecSettings) is cfg.tools.exec
    assert section_of({"tools": {"exec": {"mode": "deny"}}}, "tools.exec", ExecSettings).mode == "deny"
    assert section_of({"allow": ["ls"]}, "tools.exec", ExecSettings) == ExecSettings(allow=("ls",))
    assert section_of(None, "agent", AgentSettings) == AgentSettings()
    given = ExecSettings(mode="allow")
    assert section_of(given, "tools.exec", ExecSettings) is given


def test_numbers_must_be_finite_and_yaml_text_numbers_say_how_to_write_them(tmp_path):
    """Regression (fuzz pass): YAML's .nan and .inf passed every float key — NaN slips past any
    limit, and `hooks.timeout_s: .nan` made `kit run` a traceback, NaN weights an IntegrityError
    in the recall log and non-JSON in --json. `1e3` is text in YAML 1.1: it says so."""
    from kit.workspace import Workspace

    (tmp_path / "kit.yaml").write_text(
        "hooks:\n  timeout_s: .nan\nmemory:\n  search:\n    vector_weight: .inf\n    text_weight: -.inf\n"
        "tools:\n  exec:\n    timeout_s: 1e3\nagent:\n  temperature: 0.5\n")
    ws = Workspace.open(tmp_path)
    assert [(i.line, i.message) for i in ws.snapshot.config_issues] == [
        (2, "'hooks.timeout_s' must be a finite number, not .nan"),
        (5, "'memory.search.vector_weight' must be a finite number, not .inf"),
        (6, "'memory.search.text_weight' must be a finite number, not -.inf"),
        (9, "'tools.exec.timeout_s' must be a number, not '1e3' (YAML reads it as text: write 1.0e+3)"),
    ]
    cfg = ws.config
    assert (cfg.hooks.timeout_s, cfg.memory.search.vector_weight, cfg.agent.temperature) == (10.0, 0.7, 0.5)


def test_an_empty_embedding_model_is_a_config_error(tmp_path):
    """Regression (fuzz pass): `model: ''` was accepted; every memory command then took ~20 s and
    searched by keywords alone with no word from doctor."""
    from kit.workspace import Workspace

    (tmp_path / "kit.yaml").write_text("memory:\n  embedding:\n    model: ''\n")
    ws = Workspace.open(tmp_path)
    assert [(i.line, i.message) for i in ws.snapshot.config_issues] == [
        (3, "'memory.embedding.model' must name a model (a folder or a Hugging Face name), not an empty string")]
    assert ws.config.memory.embedding.model == "all-MiniLM-L6-v2"


def test_extra_paths_must_be_in_the_workspace_and_say_so_at_their_line(tmp_path):
    """Regression (fuzz pass): '/tmp/x' was reported later as "tmp/x does not exist" (its slash
    stripped), and '/' or '' vanished without a word; none had a kit.yaml line."""
    from kit.workspace import Workspace

    for value, message in (("['/tmp/outside']", "must list paths relative to the workspace, not '/tmp/outside' "
                                                 "(only the workspace is indexed)"),
                           ("['~/notes']", "must list paths relative to the workspace, not '~/notes' "
                                           "(only the workspace is indexed)"),
                           ("['notes', '/']", "must list folders or files in the workspace, not '/'"),
                           ("['']", "must list folders or files in the workspace, not ''")):
        (tmp_path / "kit.yaml").write_text(f"memory:\n  extra_paths: {value}\n")
        ws = Workspace.open(tmp_path)
        assert [(i.line, i.message) for i in ws.snapshot.config_issues] == [
            (2, f"'memory.extra_paths' {message}")], value
        assert ws.config.memory.extra_paths == ()
    (tmp_path / "kit.yaml").write_text("memory:\n  extra_paths: [notes, docs/]\n")
    ws = Workspace.open(tmp_path)
    assert ws.snapshot.config_issues == () and ws.config.memory.extra_paths == ("notes", "docs/")
