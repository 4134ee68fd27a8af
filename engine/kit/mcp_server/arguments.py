"""A client's tool arguments checked against the tool's own schema, before it runs.

The agent's model gets leeway (`"5"` for a limit is read as 5: a small model's call should not
fail on quoting), but an MCP client is a program that read the schema Kit published — with
`additionalProperties: false` and typed parameters — so a call outside it is refused with every
reason, not quietly reinterpreted (`{"query": 123}` searched for "123", `"start": 2.5` read line 2,
an unknown key was dropped). Checked with `jsonschema`, which the MCP SDK itself depends on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_TYPE_WORDS = {"string": "a string", "integer": "an integer", "boolean": "true or false", "number": "a number",
               "object": "an object", "array": "a list"}


def argument_problems(name: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """Why `arguments` do not fit the tool's parameter schema, one reason per problem (empty: they fit)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(dict(schema))
    takes = ", ".join(f"`{p}`" for p in schema.get("properties", {})) or "no arguments"
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: ([str(p) for p in e.path], e.validator))
    return [_reason(error, name, takes) for error in errors]


def _reason(error: Any, name: str, takes: str) -> str:
    where = ".".join(str(p) for p in error.path)
    kind, value = error.validator, error.instance
    if kind == "additionalProperties":
        extra = sorted(set(value) - set(error.schema.get("properties", {})))
        return f"unknown argument{'s' if len(extra) > 1 else ''} {', '.join(f'`{k}`' for k in extra)} ({name} takes {takes})"
    if kind == "required":
        missing = [k for k in error.validator_value if k not in value]
        return ", ".join(f"missing required argument `{k}`" for k in missing)
    if kind == "type":
        return f"`{where}` must be {_TYPE_WORDS.get(error.validator_value, error.validator_value)}, not {_shown(value)}"
    if kind == "minimum":
        return f"`{where}` must be at least {error.validator_value}, not {_shown(value)}"
    return f"`{where}`: {error.message}" if where else error.message


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"
