"""The `kit` command: a thin click floor over the library.

Sub-commands live in their own modules and are imported only when used, so `kit --help`
and light commands never pay for heavy imports.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util

import click

from kit import __version__

# where `kit -w PATH COMMAND` leaves PATH (click's context meta is shared by every nested command;
# kit.cli.common.open_workspace reads it). Here rather than in kit.cli.common so that `kit --help`
# and `kit --version` load neither it nor what it needs (json, pathlib, the library's errors).
WORKSPACE_KEY = "kit.workspace"

# name -> "module:attribute"; each module is small and imports the library lazily.
COMMANDS: dict[str, str] = {
    "init": "kit.cli.init_cmd:init",
    "import": "kit.cli.import_cmd:import_",
    "doctor": "kit.cli.doctor_cmd:doctor",
    "config": "kit.cli.config_cmd:config",
    "watch": "kit.cli.watch_cmd:watch",
    "prompt": "kit.cli.prompt_cmd:prompt",
    "skills": "kit.cli.skills_cmd:skills",
    "memory": "kit.cli.memory_cmd:memory",
    "dream": "kit.cli.dream_cmd:dream",
    "serve": "kit.cli.serve_cmd:serve",
    "cron": "kit.cli.cron_cmd:cron",
    "hooks": "kit.cli.hooks_cmd:hooks",
    "run": "kit.cli.run_cmd:run",
    "sessions": "kit.cli.sessions_cmd:sessions",
    "fleet": "kit.cli.fleet_cmd:fleet",
    "mcp": "kit.cli.mcp_cmd:mcp",
}

# commands that work on no single workspace, and what names theirs instead
NO_WORKSPACE = {"fleet": "it works on the registered workspaces; name them as PATH arguments"}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | {n for n in COMMANDS if self._available(n)})

    @staticmethod
    def _available(name: str) -> bool:
        module = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module) is not None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS and self._available(name):
            module_name, attr = COMMANDS[name].split(":")
            return getattr(importlib.import_module(module_name), attr)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context):
        """Ctrl-C outside a command's own handling (while its module loads) is `kit: interrupted`,
        exit 130, as inside one: click said `Aborted!` and exited 1."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            import sys

            # kit.cli.common.fail's words; not imported from there: common imports this module
            click.echo("kit: interrupted", err=True)
            sys.exit(130)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """click suggests a close name from `self.commands`, which holds none of the lazy commands:
        `kit docter` said only "No such command" where `kit memory serch` suggests."""
        name = click.utils.make_str(args[0])
        if not ctx.resilient_parsing and not name.startswith("-") and self.get_command(ctx, name) is None:
            raise click.exceptions.NoSuchCommand(name, possibilities=self.list_commands(ctx), ctx=ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kit")
@click.option("-w", "--workspace", "workspace", type=click.Path(), default=None,
              help="Workspace folder for the command (as its own -w, which wins; `kit -w PATH init` creates it there).")
@click.pass_context
def cli(ctx: click.Context, workspace: str | None) -> None:
    """Kit: a Markdown-driven agent kit. Your agent is a folder of files you edit and version.

    Start with `kit init PATH`, then `kit doctor` and `kit prompt` inside it.
    """
    # `kit -w PATH doctor` as well as `kit doctor -w PATH` (kit.cli.common.open_workspace reads it)
    if workspace is not None:
        from pathlib import Path

        if ctx.invoked_subcommand in NO_WORKSPACE:
            # silently ignored, it would run the command somewhere the user did not name
            raise click.UsageError(f"-w does not apply to `kit {ctx.invoked_subcommand}`: "
                                   f"{NO_WORKSPACE[ctx.invoked_subcommand]}")

        ctx.meta[WORKSPACE_KEY] = Path(workspace)


def main() -> None:
    """The console script: runs one command, then the process ends (in-process callers use `cli`:
    this leaves the collector frozen)."""
    try:
        cli(prog_name="kit")
    finally:
        # At exit the interpreter runs the cycle collector over every object it tracks, to free
        # cycles the OS frees anyway: 15 ms of a 165 ms `kit prompt` (measured). Frozen, they are
        # skipped; atexit handlers, stream flushes and everything freed by reference counting
        # still run. An object in a cycle is not finalized, so what must be closed is closed by
        # the command (the workspace's database connections: kit.cli.common.open_workspace).
        gc.freeze()

