"""The CLI reference (docs/cli.md) from the commands' own `--help`: `make docs` runs cog over it."""

from __future__ import annotations

import click
from click.testing import CliRunner

from kit.cli.main import cli

WIDTH = 100


def _paths(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path, parents before their sub-commands, in the order `--help` lists them."""
    out = [path]
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1] if path else "kit")
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                out.extend(_paths(sub, (*path, name)))
    return out


def help_text(path: tuple[str, ...]) -> str:
    """`kit PATH --help` as a terminal WIDTH columns wide shows it."""
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="kit", terminal_width=WIDTH)
    if result.exit_code != 0:  # pragma: no cover - a command whose help fails is a bug to see
        raise RuntimeError(f"kit {' '.join(path)} --help failed: {result.output}")
    return result.output.rstrip() + "\n"


def reference() -> str:
    """Markdown: one section per command, its help in a text block."""
    parts = []
    for path in _paths(cli):
        title = " ".join(("kit", *path))
        level = "#" * min(2 + len(path), 4)
        parts.append(f"\n{level} `{title}`\n\n```text\n{help_text(path)}```\n")
    return "".join(parts)
