"""Docs stay honest: every command and sub-command has help and is named in the README."""

from __future__ import annotations

import re
from pathlib import Path

import click

from kit.cli.main import COMMANDS, cli

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def walk(group: click.Group, ctx: click.Context, prefix: str = "kit"):
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        path = f"{prefix} {name}"
        yield path, cmd
        if isinstance(cmd, click.Group):
            yield from walk(cmd, click.Context(cmd, parent=ctx, info_name=name), path)


def all_commands():
    ctx = click.Context(cli, info_name="kit")
    return list(walk(cli, ctx))


def test_every_registered_command_loads():
    ctx = click.Context(cli, info_name="kit")
    listed = set(cli.list_commands(ctx))
    assert listed == set(COMMANDS), f"missing modules for: {set(COMMANDS) - listed}"


def test_every_command_has_help():
    for path, cmd in all_commands():
        assert (cmd.help or "").strip(), f"{path} has no help text"
        assert cmd.get_short_help_str().strip(), path


def test_every_command_is_in_the_readme():
    for path, _ in all_commands():
        # "kit memory search" may appear as `kit memory search` or in a `kit memory index|search|…` list
        words = path.split()
        pattern = re.escape(" ".join(words[:-1])) + r"\s[^`\n]*\b" + re.escape(words[-1]) + r"\b" if len(words) > 2 else re.escape(path) + r"\b"
        assert re.search(pattern, README), f"README does not mention `{path}`"
