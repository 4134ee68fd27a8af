"""`kit run [MESSAGE]`: one agent turn, or the interactive REPL without a message."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kit import KINDS, KitError, plural
from kit.cli.common import (
    _default,
    emit_json,
    fail,
    handle_errors,
    json_option,
    open_workspace,
    workspace_option,
)

if TYPE_CHECKING:  # pragma: no cover
    from kit import Workspace


def _from_shell(spec: str) -> str:
    """A `script:PATH` typed on the command line is the shell's: relative to the current
    directory (the library and kit.yaml take it relative to the workspace)."""
    raw = spec[len("script:"):] if spec.startswith("script:") else ""
    path = Path(raw).expanduser()
    return spec if not raw or path.is_absolute() else f"script:{Path.cwd() / path}"


def _check_model(ws: Workspace, spec: str, typed: str) -> None:
    """A --model that cannot name a model is a usage error (exit 2), found before a session opens; a
    script file that is there but wrong is an error in that file (exit 1).
    `typed`: the spec as typed (a relative script path the workspace has is pointed out)."""
    from kit import ConfigError

    try:
        ws.check_model(spec)
    except ConfigError as exc:
        if spec.startswith("script:") and Path(spec[len("script:"):]).expanduser().is_file():
            raise  # the file is there, its contents are wrong: a file error (exit 1, file and line)
        message = str(exc)
        rel = typed[len("script:"):] if typed != spec else ""
        # only when the workspace's file is another one: from inside the workspace both are the same
        if rel and (ws.root / rel).is_file() and (ws.root / rel).resolve() != (Path.cwd() / rel).resolve():
            message += (f" (a path typed on the command line is the current directory's; the workspace's "
                        f"is script:{ws.root / rel})")
        raise click.BadParameter(message, param_hint="'--model'") from None


@click.command("run")
@click.argument("message", required=False)
@workspace_option
@click.option("--model", "model", default=None,
              help="provider/model for this run (e.g. openai/gpt-4o-mini), or script:PATH (test/offline "
                   "provider; a relative PATH is the current directory's).")
@click.option("--session", "session_key", default=None,
              help="Session key: continue its current session (created on first use). Default: a new session.")
@click.option("--kind", type=click.Choice(KINDS), default="default", show_default=True,
              help="Run kind: which workspace files enter the prompt.")
@click.option("--max-tokens", "max_tokens", type=click.IntRange(min=1), default=None,
              help="Cap each reply at N tokens for this run (over agent.max_tokens and the provider's).")
@click.option("--temperature", type=click.FloatRange(0, 2), default=None,
              help="Sampling temperature for this run (over agent.temperature and the provider's).")
@json_option
@click.option("--stream-json", "stream_json", is_flag=True,
              help="Print the turn as it happens: one JSON event per line (text deltas, tool calls and "
                   "results, status, then a final event with the --json document). Schema: docs/agent.md.")
@handle_errors
def run(message, workspace, model, session_key, kind, max_tokens, temperature, as_json, stream_json):
    """Talk to the agent: one turn with MESSAGE ("-" reads it from stdin), else an interactive REPL."""
    if as_json and stream_json:
        fail("--json and --stream-json exclude each other (--stream-json ends with the same document)", 2)
    ws = open_workspace(workspace, config_warnings=False)
    typed, model = model, (_from_shell(model) if model is not None else None)
    # first: a configuration file that does not load stops the run here (a ConfigError, one line),
    # before a --model is judged against a configuration that is not the user's
    notices = ws.run_notices(model)
    if model is not None:
        _check_model(ws, model, typed)
    generation = None
    if max_tokens is not None or temperature is not None:
        from kit import GenerationSettings

        generation = GenerationSettings(max_tokens=max_tokens, temperature=temperature)

    view = None  # the live reply on a terminal (kit.cli.live.LiveTurn)

    def status(text: str) -> None:
        if view is not None:
            view.note(f"kit: {text}")  # above the live reply, not through it
        else:
            click.echo(f"kit: {text}", err=True)

    if message is None:
        if as_json or stream_json:
            fail(f"--{'json' if as_json else 'stream-json'} needs a MESSAGE (the REPL is interactive)", 2)
        from kit.cli.repl import run_repl

        sys.exit(run_repl(ws, model=model, session_key=session_key, kind=kind, generation=generation))

    if message == "-":  # `echo "…" | kit run -`
        message = sys.stdin.read().strip()
        if not message:
            fail("no message on stdin", 2)
    if not message.strip():
        fail("empty MESSAGE: give the text to send (or leave it out for the REPL)", 2)
    # the script label, load problems and skipped untrusted hooks: nobody is asked in a one-shot run
    for notice in notices:
        status(notice)
    machine = as_json or stream_json
    interactive = sys.stdin.isatty() and not machine
    on_event = None
    if stream_json:
        def on_event(event) -> None:  # the final line is the --json document, as `--json` prints it
            _json_lines(event, _document(agent, event.result) if event.type == "final" else None)
    elif not as_json and sys.stdout.isatty():
        from kit.cli.common import console
        from kit.cli.live import LiveTurn

        view = on_event = LiveTurn(console(), tool_line=_tool_line)

    def approve(command: str, reason: str) -> bool:
        what = "mcp" if reason.startswith("MCP server") else "exec"  # an MCP tool under policy ask
        paused = view.paused() if view is not None else contextlib.nullcontext()
        with paused:
            return click.confirm(f"{what} `{command}` ({reason}). Run it?", default=False, err=True)

    agent = ws.agent(model=model, session_key=session_key, kind=kind, interactive=interactive,
                     approve=approve, status=status, generation=generation, on_event=on_event,
                     model_flag="--model")
    written = _messages(ws, agent)
    try:
        result = agent.turn(message)
    except KitError as exc:
        # a turn that failed after it wrote to its session (a tool call, then the provider's error;
        # the message, in a resumed session): named after the error, for `kit sessions show`
        if _messages(ws, agent) > written:
            fail(f"{exc}\nkit: session {agent.session_id} kept what this turn wrote before the error", exc.exit_code)
        raise
    finally:
        agent.close()
        if view is not None:
            view.close()
    data = _document(agent, result)
    if result.blocked is not None:
        # a hook refused the message: no model saw it, and Kit's notice is not a reply (stdout
        # stays empty; --json has "blocked"); exit 1, as for a turn that did not complete
        if as_json:
            emit_json(data)
        status(f"blocked by a hook: {result.blocked}")
        sys.exit(1)
    if result.skip_reason:
        # §4: nothing to do is not an error, but "(no reply)" would not say why nothing happened
        status(f"{kind} skipped: {result.skip_reason}")
        if as_json:
            emit_json(data)
        return
    if as_json:
        emit_json(data)
    elif not stream_json:
        from rich.markdown import Markdown

        from kit.cli.common import console

        if view is None:
            for call in result.tool_calls:
                click.echo(_tool_line(call), err=True)
        if view is None or view.streamed != result.reply or not result.reply:
            # not streamed (a pipe), or a reply that is not the model's text (a stop, a block)
            console().print(Markdown(result.reply or "_(no reply)_"))
        from kit import cut_marker

        marker = cut_marker(result)
        if marker:
            console().print(marker, style="yellow", markup=False, highlight=False)
        usage = result.usage
        if agent.persisted:  # never an id `kit sessions show` cannot find
            click.echo(f"kit: session {result.session} · {plural(result.iterations, 'step')} · "
                       f"{plural(usage['total_tokens'], 'token')}", err=True)
    if result.stopped in ("max_iterations", "repeated_tool_call", "cut_tool_call", "interrupted"):
        status(f"stopped: {result.stopped}")
        sys.exit(1)
    if result.stopped == "cancelled":
        sys.exit(130)  # Ctrl-C, as a shell reports it


def _messages(ws: Workspace, agent) -> int:
    """How many messages the agent's session holds in the store (0 before its first is written)."""
    return ws.sessions.get(agent.session_id).messages if agent.persisted else 0


def _tool_line(call) -> str:
    """`→ name · ok` for a finished call (a ToolOutcome or a tool_result event)."""
    state = "blocked" if call.blocked else ("ok" if call.ok else "failed")
    return f"→ {call.name} · {state}"


def _document(agent, result) -> dict:
    """`kit run --json`'s document: the turn's JSON, with `session` null when no session was
    written."""
    data = result.to_json()
    if not agent.persisted:
        # a skipped heartbeat or a blocked message in a new session leaves no session behind:
        # an id here would be one `kit sessions show` cannot find
        data["session"] = None
    return data


def _json_lines(event, document: dict | None = None) -> None:
    """--stream-json: one event per line, flushed at once (a reader sees each as it happens).
    `document`: the final line's --json document (`final` events)."""
    line = event.to_json() if document is None else {"type": event.type, **document}
    sys.stdout.write(json.dumps(line, ensure_ascii=False, default=_default) + "\n")
    sys.stdout.flush()
