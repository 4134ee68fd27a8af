"""Bounded YAML: how Kit reads every YAML it is given (kit.yaml, frontmatter, script files, KIT_* values).

PyYAML's safe loader still lets a few bytes cost unbounded time or memory, or crash: a billion
laughs (aliases of aliases), nesting thousands deep (RecursionError), a 5,000-digit integer
(ValueError past Python's 4,300-digit limit), a date such as 2026-13-45 (ValueError), escaped
surrogates ("\\ud800", which no UTF-8 file can hold and which crash any later write), recursive
aliases (`&a [*a]`, which loop any walker), and it keeps the last of two equal keys, dropping the
first unsaid. Here each is a `YamlError` with its line:

    values, node = load_yaml(text)          # node: the composed tree (for key lines), or None
    values, node = load_mapping(text)       # the same, for a document that must be a mapping
"""

from __future__ import annotations

import re
import sys
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, ScalarNode

from kit.yamlerrors import locate

MAX_YAML_CHARS = 512 * 1024  # one YAML document (a kit.yaml, a frontmatter block)
MAX_DEPTH = 64  # nested mappings/lists
MAX_NODES = 10_000  # values, each alias counted as often as it is used
MAX_SCALAR_CHARS = 100_000  # one string
MAX_INT_DIGITS = min(4300, getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300)
MAX_INT_BITS = int(MAX_INT_DIGITS * 3.3219)  # log2(10): what a MAX_INT_DIGITS decimal integer needs
_SURROGATE = re.compile("[\ud800-\udfff]")


class YamlError(Exception):
    """YAML Kit will not use: a message and the 1-based line (None when unknown)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


class _Refused(yaml.MarkedYAMLError):
    def __init__(self, problem: str, mark: Any):
        super().__init__(problem=problem, problem_mark=mark)


class _DuplicateKey(_Refused):
    """A mapping that sets a key twice: PyYAML keeps the last value and drops the first unsaid."""

    def __init__(self, key: str, first_line: int, mark: Any):
        super().__init__(f"duplicate key {key!r}", mark)
        self.key, self.first_line = key, first_line  # 0-based, like the marks


def _check_keys(node: MappingNode) -> None:
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key, ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *base` merges; a later key overriding a merged one is what merges are for
        if (key.tag, key.value) in seen:
            raise _DuplicateKey(key.value, seen[key.tag, key.value], key.start_mark)
        seen[key.tag, key.value] = key.start_mark.line


def _surrogate_problem(value: str) -> str:
    i = _SURROGATE.search(value).start()
    high, low = value[i], value[i + 1: i + 2]
    hint = ""
    if "\ud800" <= high <= "\udbff" and low and "\udc00" <= low <= "\udfff":
        code = 0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00)
        hint = f" (for U+{code:04X} write \\U{code:08X} or the character itself)"
    return (f"invalid character U+{ord(high):04X} in a string: a UTF-16 surrogate, which YAML and UTF-8 "
            f"do not allow{hint}")


class _BoundedComposer(Composer):
    """PyYAML's composer, counting depth and values (aliases expanded) as it builds the tree."""

    max_nodes = MAX_NODES

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._total = 0
        self._weights: dict[int, int] = {}  # id(node) -> values it stands for once expanded

    def _add(self, count: int, mark: Any) -> None:
        self._total += count
        if self._total > self.max_nodes:
            raise _Refused(f"too many values (over {self.max_nodes:,}, each alias counted every time it is used)",
                           mark)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None:
                weight = self._weights.get(id(node))
                if weight is None:  # the anchor is still being built: `&a [*a]`
                    raise _Refused(f"recursive alias *{event.anchor} (it refers to itself)", event.start_mark)
                self._add(weight, event.start_mark)
            return super().compose_node(parent, index)
        mark = self.peek_event().start_mark
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(f"nested more than {MAX_DEPTH} levels deep", mark)
        before = self._total
        self._add(1, mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, ScalarNode):
            value = node.value
            if len(value) > MAX_SCALAR_CHARS:
                raise _Refused(f"a string of {len(value):,} characters (over the {MAX_SCALAR_CHARS:,} limit)",
                               node.start_mark)
            if _SURROGATE.search(value):
                raise _Refused(_surrogate_problem(value), node.start_mark)
        elif isinstance(node, MappingNode):
            _check_keys(node)
        self._weights[id(node)] = self._total - before
        return node


class _BoundedConstructor(SafeConstructor):
    def construct_yaml_int(self, node: Any) -> int:
        digits = sum(ch.isdigit() for ch in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise ConstructorError(None, None, f"an integer with {digits:,} digits (over the "
                                   f"{MAX_INT_DIGITS:,}-digit limit)", node.start_mark)
        value = super().construct_yaml_int(node)
        if value.bit_length() > MAX_INT_BITS:  # 0x… and 0b… integers are not bounded by digits
            raise ConstructorError(None, None, f"an integer of about {int(value.bit_length() * 0.30103):,} digits "
                                   f"(over the {MAX_INT_DIGITS:,}-digit limit)", node.start_mark)
        return value

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ValueError, OverflowError, TypeError, RecursionError) as exc:
            # e.g. a date that does not exist (2026-13-45): PyYAML lets the ValueError out
            shown = str(getattr(node, "value", ""))[:40]
            raise ConstructorError(None, None, f"invalid {node.tag.rsplit(':', 1)[-1]} value {shown!r}: {exc}",
                                   node.start_mark) from None


_BoundedConstructor.add_constructor("tag:yaml.org,2002:int", _BoundedConstructor.construct_yaml_int)


class _Loader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _BoundedComposer,
              _BoundedConstructor, yaml.resolver.Resolver):
    """Pure-Python events; the reference for error messages."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        _BoundedComposer.__init__(self)
        _BoundedConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)


try:  # libyaml's parser for the events (3-4x faster), still composed and bounded above
    from yaml._yaml import CParser

    class _FastLoader(_BoundedComposer, CParser, _BoundedConstructor, yaml.resolver.Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _BoundedComposer.__init__(self)
            _BoundedConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    _LOADERS: tuple[type, ...] = (_FastLoader, _Loader)
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _LOADERS = (_Loader,)


def _load(loader_class: type, text: str, max_nodes: int, construct: bool = True) -> tuple[Any, Any]:
    loader = loader_class(text)
    loader.max_nodes = max_nodes
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None and construct else None), node
    finally:
        loader.dispose()


_FLOW_CHARS = re.compile(r"""[\[\]{}"'#\n]""")
_DOUBLE = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SINGLE = re.compile(r"'(?:[^']|'')*'", re.DOTALL)
_STARTS_SCALAR = frozenset(":-[{,?")  # a quote after one of these (or at a line's start) opens a string


def _flow_depth_line(text: str) -> int | None:
    """The line where flow brackets ([ {) nest deeper than MAX_DEPTH, else None.

    PyYAML's scanner looks ahead to the end of an open flow collection and rechecks every level
    for each token (quadratic): 100 KiB of '[' takes hours. So depth is checked on the text first,
    skipping quoted strings and comments; a quote inside a plain word (it's) is not a string."""
    depth, line, i = 0, 1, 0
    while True:
        match = _FLOW_CHARS.search(text, i)
        if match is None:
            return None
        ch, pos = match.group(), match.start()
        i = pos + 1
        if ch == "\n":
            line += 1
        elif ch in "\"'":
            back = pos - 1
            while back >= 0 and text[back] in " \t":
                back -= 1
            if back >= 0 and text[back] not in _STARTS_SCALAR and text[back] != "\n":
                continue  # a quote inside a plain scalar is just a character
            quoted = (_DOUBLE if ch == '"' else _SINGLE).match(text, pos)
            if quoted is None:
                return None  # unterminated: the parser reports it
            line += text.count("\n", pos, quoted.end())
            i = quoted.end()
        elif ch == "#":
            if pos == 0 or text[pos - 1] in " \t\n":
                newline = text.find("\n", pos)
                if newline < 0:
                    return None
                i = newline
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        else:
            depth = max(0, depth - 1)


def load_yaml(text: str, *, line_offset: int = 0, max_chars: int = MAX_YAML_CHARS,
              max_nodes: int = MAX_NODES, construct: bool = True) -> tuple[Any, Any]:
    """(values, composed node) of one YAML document, or YamlError with its line (+ line_offset).
    `construct=False`: only the node tree (values None), for readers that walk nodes themselves."""
    if len(text) > max_chars:
        raise YamlError(f"YAML of {len(text) / 1024:,.0f} KiB, over the {max_chars // 1024:,} KiB limit", None)
    deep = _flow_depth_line(text)
    if deep is not None:
        raise YamlError(f"brackets nested more than {MAX_DEPTH} levels deep", deep + line_offset)
    try:
        return _load(_LOADERS[0], text, max_nodes, construct)
    except yaml.YAMLError as exc:
        error = exc
    except RecursionError:  # not reachable within MAX_DEPTH; kept so a bug is still one line
        raise YamlError(f"nested too deeply (over {MAX_DEPTH} levels)", None) from None
    if len(_LOADERS) > 1:
        # libyaml's messages and marks are vaguer: say what the pure-Python parser says
        try:
            _load(_Loader, text, max_nodes, construct)
        except yaml.YAMLError as precise:
            error = precise
        except RecursionError:
            pass
    line, problem = locate(error, offset=line_offset)
    if isinstance(error, _DuplicateKey):
        problem = f"duplicate key {error.key!r} (first set on line {error.first_line + 1 + line_offset}): keep one of them"
    raise YamlError(problem, line)


class NotAMapping(YamlError):
    """A document whose top level is a list or a scalar where a mapping was expected."""


def load_mapping(text: str, **options: Any) -> tuple[dict[str, Any], Any]:
    """`load_yaml` for a document that must be a mapping: an empty document is `{}`, any other
    top level raises NotAMapping (a YamlError, so callers that do not care need no second clause)."""
    values, node = load_yaml(text, **options)
    if values is None:
        return {}, node
    if not isinstance(values, dict):
        raise NotAMapping(f"the top level is a {type(values).__name__}, not a mapping",
                          1 + options.get("line_offset", 0))
    return values, node


def safe_values(text: str, **options: Any) -> Any:
    """Just the values of `load_yaml`."""
    return load_yaml(text, **options)[0]
