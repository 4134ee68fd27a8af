"""`kit run [MESSAGE]`: one agent turn, or the interactive REPL without a message."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from kit.cli.common import (
    emit_json,
    fail,
    handle_errors,
    json_option,
    open_workspace,
    workspace_option,
)

if TYPE_CHECKING:  # pragma: no cover
    from kit import Workspace


KINDS = ("default", "subagent", "cron", "heartbeat", "shared")


def _check_model(spec: str, config) -> None:
    """A --model that cannot name a model (no provider/ part, an unknown provider) is a usage
    error (exit 2), found before a session is opened. A script: file is checked when it is read."""
    from kit.errors import ConfigError
    from kit.providers.registry import settings_for, split_spec

    try:
        provider, _model = split_spec(spec)
        if provider != "script":
            settings_for(provider, config)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="'--model'") from None


def _in_force(ws: Workspace, issue) -> str:
    """What a one-shot run does about a load problem. The workspace was just opened, so there is
    no last good version: a broken setting or document is simply left out (the config starts
    from every valid value of every layer, else the defaults)."""
    if issue.area == "config":
        if "workspace" not in set(ws.config.sources.values()):
            return "ignored until fixed; no kit.yaml setting applies"
        return "ignored until fixed; the valid settings apply"
    if ws.snapshot.get(issue.path) is not None:
        return "last good version in force"
    return "ignored until fixed"


@click.command("run")
@click.argument("message", required=False)
@workspace_option
@click.option("--model", "model", default=None,
              help="provider/model for this run (e.g. openai/gpt-4o-mini), or script:PATH (test/offline provider).")
@click.option("--session", "session_key", default=None,
              help="Session key: continue its current session (created on first use). Default: a new session.")
@click.option("--kind", type=click.Choice(KINDS), default="default", show_default=True,
              help="Run kind: which workspace files enter the prompt.")
@json_option
@handle_errors
def run(message, workspace, model, session_key, kind, as_json):
    """Talk to the agent: one turn with MESSAGE ("-" reads it from stdin), else an interactive REPL."""
    ws = open_workspace(workspace)
    if model is not None:
        _check_model(model, ws.config)

    def status(text: str) -> None:
        click.echo(f"kit: {text}", err=True)

    if message is None:
        if as_json:
            fail("--json needs a MESSAGE (the REPL is interactive)", 2)
        from kit.agent.repl import run_repl

        sys.exit(run_repl(ws, model=model, session_key=session_key, kind=kind))

    from kit.agent.loop import Agent

    if message == "-":  # `echo "…" | kit run -`
        message = sys.stdin.read().strip()
        if not message:
            fail("no message on stdin", 2)
    if not message.strip():
        fail("empty MESSAGE: give the text to send (or leave it out for the REPL)", 2)
    spec = model or str(ws.config.get("agent.model"))
    if spec.startswith("script:"):
        from kit.providers.script import LABEL

        status(f"model {spec}: {LABEL}")
    # principle 5: a broken kit.yaml or document is announced on the turn's status line
    for issue in ws.snapshot.errors:
        status(f"warning: {issue} ({_in_force(ws, issue)})")
    # §6: untrusted workspace hooks are skipped; say so, since nobody is asked in a one-shot run
    from kit.hooks.registry import registry_for

    for hook in registry_for(ws).untrusted():
        status(f"hook {hook.name} does not run: its workspace code is not trusted "
               f"(review hooks/{hook.name}/, then `kit hooks trust {hook.name}`)")
    interactive = sys.stdin.isatty() and not as_json

    def approve(command: str, reason: str) -> bool:
        return click.confirm(f"exec `{command}` ({reason}). Run it?", default=False, err=True)

    agent = Agent(ws, model=model, session_key=session_key, kind=kind, interactive=interactive,
                  approve=approve, status=status)
    try:
        result = agent.turn(message)
    finally:
        agent.close()
    data = result.to_json()
    if not agent.persisted:
        # a skipped heartbeat or a blocked message in a new session leaves no session behind:
        # an id here would be one `kit sessions show` cannot find
        data["session"] = None
    if result.skip_reason:
        # §4: nothing to do is not an error, but "(no reply)" would not say why nothing happened
        status(f"{kind} skipped: {result.skip_reason}")
        if as_json:
            emit_json(data)
        return
    if as_json:
        emit_json(data)
    else:
        from rich.markdown import Markdown

        from kit.cli.common import console

        for call in result.tool_calls:
            state = "blocked" if call.blocked else ("ok" if call.ok else "failed")
            click.echo(f"→ {call.name} · {state}", err=True)
        console().print(Markdown(result.reply or "_(no reply)_"))
        usage = result.usage
        click.echo(f"kit: session {result.session} · {result.iterations} step(s) · "
                   f"{usage['total_tokens']} tokens", err=True)
    if result.stopped in ("max_iterations", "repeated_tool_call"):
        status(f"stopped: {result.stopped}")
        sys.exit(1)
