"""kit.yamlsafe.load_mapping: the one check that a YAML document is a mapping (kit.yaml,
frontmatter, script files), and the errors each reader turns it into."""

from __future__ import annotations

import pytest

from kit.config import parse_yaml_text
from kit.documents import split_frontmatter
from kit.errors import ConfigError, DocumentError
from kit.yamlsafe import NotAMapping, YamlError, load_mapping


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
