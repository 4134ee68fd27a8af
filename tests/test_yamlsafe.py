"""kit.yamlsafe.load_mapping: the one check that a YAML document is a mapping (kit.yaml,
frontmatter, script files), and the errors each reader turns it into."""

from __future__ import annotations

import pytest

from kit.config import parse_yaml_text
from kit.documents import split_frontmatter
from kit.errors import ConfigError, DocumentError
from kit.yamlsafe import NotAMapping, YamlError, load_mapping, load_yaml


def test_an_empty_document_is_an_empty_mapping():
    assert load_mapping("")[0] == {}
    assert load_mapping("# only a comment\n")[0] == {}
    assert load_mapping("a: 1\nb: [2]\n")[0] == {"a": 1, "b": [2]}


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_a_list_or_scalar_is_not_a_mapping(text):
    with pytest.raises(NotAMapping) as caught:
        load_mapping(text, line_offset=3)
    assert isinstance(caught.value, YamlError)
    assert caught.value.line == 4


def test_kit_yaml_that_is_a_list_is_one_clear_error_on_line_1():
    with pytest.raises(ConfigError) as caught:
        parse_yaml_text("- memory\n- prompt\n", "kit.yaml")
    assert (caught.value.message, caught.value.path, caught.value.line) == (
        "top level must be a mapping of sections", "kit.yaml", 1)


def test_broken_kit_yaml_still_says_invalid_yaml_with_its_line():
    with pytest.raises(ConfigError) as caught:
        parse_yaml_text("memory:\n  search: [1\n", "kit.yaml")
    assert caught.value.message.startswith("invalid YAML: ")


def test_frontmatter_that_is_a_list_is_one_clear_error_on_line_2():
    with pytest.raises(DocumentError) as caught:
        split_frontmatter("---\n- a\n- b\n---\nbody\n", "skills/x/SKILL.md")
    assert (caught.value.message, caught.value.line) == ("frontmatter must be a mapping of keys", 2)
    assert split_frontmatter("---\n---\nbody\n", "x.md") == ({}, "body\n", 3)


@pytest.mark.parametrize("text, key, line, first", [
    ("name: a\nname: b\n", "name", 2, 1),
    ("memory:\n  search:\n    limit: 5\n  search:\n    limit: 9\n", "search", 4, 2),
    ("a: {x: 1, x: 2}\n", "x", 1, 1),  # a flow mapping on one line
    ("- {k: 1}\n- k: 2\n  j: 3\n  k: 4\n", "k", 4, 2),  # inside a list item
])
def test_a_key_set_twice_is_an_error_naming_both_lines(text, key, line, first):
    """PyYAML keeps the last of two equal keys and drops the first without a word (a skill's
    `name:` on line 2 and 3 was checked against line 3's value and reported at line 2)."""
    with pytest.raises(YamlError) as caught:
        load_yaml(text, line_offset=10)
    assert (caught.value.line, caught.value.message) == (
        line + 10, f"duplicate key {key!r} (first set on line {first + 10}): keep one of them")


@pytest.mark.parametrize("text, values", [
    ("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 9\n", {"base": {"x": 1, "y": 2}, "c": {"x": 9, "y": 2}}),
    ("a: &a {x: 1}\nb: &b {y: 2}\nc:\n  <<: *a\n  <<: *b\n", {"a": {"x": 1}, "b": {"y": 2}, "c": {"x": 1, "y": 2}}),
    ("1: int\n'1': str\n", {1: "int", "1": "str"}),  # two keys: an integer and a string
    ("a: {k: 1}\nb: {k: 1}\n", {"a": {"k": 1}, "b": {"k": 1}}),  # the same key in two mappings
])
def test_merges_and_keys_that_only_look_alike_are_not_duplicates(text, values):
    assert load_mapping(text)[0] == values


def test_a_duplicate_key_reaches_the_user_as_one_line_with_the_file(ws_path, cli):
    skill = ws_path / "skills" / "dup" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: dup\nname: dup2\ndescription: Twice named.\n---\nBody.\n", encoding="utf-8")
    result = cli("skills", "check", "-w", ws_path)
    assert result.exit_code == 1
    assert "skills/dup/SKILL.md:3: invalid frontmatter YAML: duplicate key 'name' (first set on line 2): keep one " \
           "of them" in result.output
    with pytest.raises(ConfigError) as caught:
        parse_yaml_text("memory:\n  search:\n    limit: 5\nmemory: {}\n", "kit.yaml")
    assert (caught.value.path, caught.value.line) == ("kit.yaml", 4)
    assert "duplicate key 'memory' (first set on line 1)" in caught.value.message
