"""The interactive REPL of `kit run` (no MESSAGE): history, Markdown replies, slash commands.

The watcher runs while the REPL is open, so an edit to SOUL.md, a skill or kit.yaml applies on
the next turn; the memory index follows edits to notes. Every slash command fires
`command:<name>` hooks with `{"args", "session_id", "key", "messages"}` (the bundled
session-memory hook archives the conversation on /new and /reset). Before the first prompt the
REPL offers each untrusted workspace hook for trust (§6); declined ones stay off.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from kit import KitError, estimate_tokens, plural
from kit.cli.common import where_lines

if TYPE_CHECKING:  # pragma: no cover
    from kit import Agent, Workspace

PROMPT = "you> "
CONTINUE = "...> "

COMMANDS: dict[str, str] = {
    "new": "archive this conversation (session-memory) and start a new session",
    "reset": "archive this conversation (session-memory, labelled /reset) and start a new session",
    "skill": "/skill NAME [message] — run a turn that follows the skill NAME",
    "memory": "/memory QUERY — search memory (not recorded as a recall)",
    "dream": "run dreaming now (light, REM, deep)",
    "prompt": "show the current system prompt and its size",
    "compact": "/compact [focus] — compact the conversation now (old tool results, then a summary)",
    "help": "show this help (also /?)",
    "exit": "leave (also /quit, /q, Ctrl-D); a --session KEY session stays open to resume",
}
ALIASES = {"quit": "exit", "q": "exit", "?": "help"}


@dataclass(frozen=True)
class SlashCommand:
    name: str
    args: str


def parse_slash(line: str) -> SlashCommand | None:
    """`/name args…` → SlashCommand; anything else is a message."""
    text = line.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, _, args = text[1:].partition(" ")
    name = name.strip().lower()
    return SlashCommand(ALIASES.get(name, name), args.strip())


class Repl:
    """Read-eval-print over an Agent. `input_func` and `console` are injectable for tests."""

    def __init__(self, ws: Workspace, agent: Agent, *, console=None, input_func: Callable[[str], str] | None = None,
                 echo: bool | None = None):
        from rich.console import Console

        self.ws = ws
        self.agent = agent
        self.console = console or Console(highlight=False, soft_wrap=True)
        self.input = input_func or input
        # Piped input is not echoed by a terminal: without an echo "you> " and whatever comes next
        # (a reply, an MCP warning) would share one line. Default: echo when reading a pipe.
        self.echo = (input_func is None and not sys.stdin.isatty()) if echo is None else echo
        self._reading = False  # at the prompt: a status line now would land after "you> "
        self.watcher: Any = None
        self.view: Any = None  # the live reply of the turn in progress (kit.cli.live.LiveTurn)
        self._stop_index: Callable[[], None] | None = None
        # reload notices come from the watcher thread; printed while the user types they would
        # land after "you> ", so they wait for the next flush (before a prompt, before a turn)
        self._notices: list[str] = []
        self._notices_lock = threading.Lock()

    # ------------------------------------------------------------------ setup

    def _start_background(self) -> None:
        self.watcher = self.ws.watch(on_reload=self._on_reload).start()
        self._stop_index = self.ws.memory.auto_index()

    def _stop_background(self) -> None:
        if self._stop_index is not None:
            with contextlib.suppress(Exception):
                self._stop_index()
        if self.watcher is not None:
            self.watcher.stop()

    def _on_reload(self, result) -> None:
        changed = [p for p in result.changed if not p.startswith("memory/")]
        notices = []
        if changed:
            notices.append(f"[dim]reloaded: {escape(', '.join(changed))}[/dim]")
        for error in result.errors:
            notices.append(f"[yellow]workspace error: {escape(str(error))} (previous version kept)[/yellow]")
        for error in self.ws.rule_errors(result.changed, besides=result.errors):  # read fine, a rule broken
            notices.append(f"[yellow]workspace error: {escape(str(error))}[/yellow]")
        with self._notices_lock:
            self._notices.extend(notices)

    def notify(self, markup: str) -> None:
        """A status line (rich markup) from the agent or a background thread: printed now during a
        turn, queued while the person is at the prompt (it would land after "you> ") and printed
        on its own line before the next prompt."""
        if self._reading or threading.current_thread() is not threading.main_thread():
            with self._notices_lock:
                self._notices.append(markup)
        else:
            self.console.print(markup)

    def read(self, prompt: str) -> str:
        """One line from the person (EOFError at the end of input)."""
        self._reading = True
        try:
            line = self.input(prompt)
        finally:
            self._reading = False
        if self.echo:
            self.console.print(line, markup=False, highlight=False)
        return line

    def flush_notices(self) -> None:
        """Print the reload and status notices queued since the last flush."""
        with self._notices_lock:
            notices, self._notices = self._notices, []
        for notice in notices:
            self.console.print(notice)

    def _history_file(self):
        try:
            import readline
        except ImportError:  # pragma: no cover - not on every platform
            return None
        path = self.ws.kit_dir / "repl_history"
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            readline.read_history_file(str(path))
        readline.set_history_length(1000)
        return readline, path

    # ------------------------------------------------------------------ loop

    def run(self) -> int:
        history = self._history_file()
        self._start_background()
        spec = self.agent.model or self.ws.config.agent.model
        label = " (script: test/offline provider, no model involved)" if spec.startswith("script:") else ""
        self.console.print(
            f"[bold]kit[/bold] · session {self.agent.session_id} · model {escape(spec)}{label} · "
            "/help for commands, /exit to leave", markup=True, highlight=False,
        )
        try:
            while True:
                try:
                    self.flush_notices()
                    line = self.read(PROMPT)
                    while line.endswith("\\"):  # a trailing backslash continues the message
                        line = line[:-1] + "\n" + self.read(CONTINUE)
                except EOFError:
                    self.console.print()
                    break
                except KeyboardInterrupt:
                    self.console.print("[dim](Ctrl-C: /exit to leave)[/dim]")
                    continue
                if not line.strip():
                    continue
                command = parse_slash(line)
                if command is None:
                    self.message(line)
                    continue
                if not self.slash(command):
                    break
        finally:
            # a named session (--session KEY) stays open to be resumed; an unnamed one ends here
            if self.agent.session.key == self.agent.session.id:
                with contextlib.suppress(Exception):
                    self.agent.end_session("exit")
            self._stop_background()
            self.agent.close()
            if history is not None:
                with contextlib.suppress(OSError):
                    history[0].write_history_file(str(history[1]))
        self.console.print("[dim]bye[/dim]")
        return 0

    def _settle(self) -> None:
        # let edits made while the user typed reach the snapshot before the turn starts
        if self.watcher is not None:
            self.watcher.wait_idle(timeout=2.0)

    def message(self, text: str) -> None:
        self._settle()
        self.flush_notices()  # an edit made while the user typed: say so before the reply
        view = self.view = self._live_view()
        self.agent.on_event = view
        try:
            result = self.agent.turn(text)
        except KitError as exc:
            self.console.print(f"[red]error:[/red] {escape(str(exc))}")
            return
        except KeyboardInterrupt:
            self.console.print("[yellow]interrupted[/yellow]")
            return
        finally:
            self.agent.on_event = self.view = None
            if view is not None:
                view.close()
        if view is None:
            for call in result.tool_calls:
                self.console.print(tool_line(call), markup=False, highlight=False, style="dim")
        for compaction in result.compactions:
            self.console.print(f"[dim]compacted ({compaction.mode}): {compaction.before_tokens} → "
                               f"{compaction.after_tokens} tokens[/dim]")
        if view is None or view.streamed != result.reply or not result.reply:
            # not streamed (no terminal), or a reply that is not the model's text (a stop, a block)
            from kit.cli.live import markdown  # rich.markdown once there is something to print

            self.console.print(markdown(result.reply or "_(no reply)_"))
        from kit import cut_marker

        marker = cut_marker(result)
        if marker:
            self.console.print(marker, style="yellow", markup=False, highlight=False)
        if result.stopped:
            self.console.print(f"[yellow]stopped: {result.stopped}[/yellow]")
        usage = result.usage
        self.console.print(
            f"[dim]{plural(result.iterations, 'step')} · {plural(usage['total_tokens'], 'token')} · context "
            f"{usage['context_tokens']}/{usage['context_window']}[/dim]"
        )

    def _live_view(self):
        """On a terminal, the reply is drawn as it arrives (kit.cli.live); elsewhere it is printed
        once it is complete."""
        if not self.console.is_terminal:
            return None
        from kit.cli.live import LiveTurn

        return LiveTurn(self.console, tool_line=tool_line)

    # ------------------------------------------------------------------ slash commands

    def slash(self, command: SlashCommand) -> bool:
        """Run one slash command; False means leave the REPL."""
        name = command.name
        self.flush_notices()
        # command:<name> fires first, for every command: that is how hooks add commands of their own
        outcome = self.ws.hooks.fire(f"command:{name}", self.agent.hook_data(args=command.args, command=name),
                                     session_key=self.agent.session.own_key)
        for error in outcome.errors:
            self.console.print(f"[dim]hook error: {escape(error)}[/dim]")
        for reply in outcome.replies:
            self.console.print(reply, markup=False, highlight=False)
        if name not in COMMANDS:
            # a hook that ran for it made it a command (anything it prints or replies is above)
            if not set(outcome.ran) & set(self.ws.hooks.command_hooks(name)):
                self.console.print(f"[yellow]unknown command /{escape(name)}[/yellow] — /help lists them")
            return True
        handler = getattr(self, f"cmd_{name}")
        try:
            return handler(command.args) is not False
        except KitError as exc:
            self.console.print(f"[red]error:[/red] {escape(str(exc))}")
            return True

    def cmd_help(self, args: str) -> None:
        for name, text in COMMANDS.items():
            self.console.print(f"  /{name:<7} {text}", markup=False)
        for hook in self.ws.hooks.valid():  # commands hooks add (events: [command:NAME])
            for pattern in hook.events:
                name = pattern.removeprefix("command:")
                if pattern.startswith("command:") and name and name not in COMMANDS and not any(c in name for c in "*?["):
                    self.console.print(f"  /{name:<7} {hook.description} (hook {hook.name})", markup=False)

    def cmd_exit(self, args: str) -> bool:
        return False

    def cmd_new(self, args: str) -> None:
        session = self.agent.new_session("new")
        self.console.print(f"[dim]new session {session.id}[/dim]")

    def cmd_reset(self, args: str) -> None:
        session = self.agent.new_session("reset")
        self.console.print(f"[dim]session reset; new session {session.id}[/dim]")

    def cmd_prompt(self, args: str) -> None:
        self._settle()
        self.flush_notices()
        result = self.agent.prompt_result()
        text = result.prompt
        self.console.print(text, markup=False, highlight=False)
        for warning in getattr(result, "warnings", ()):
            self.console.print(f"[yellow]budget: {escape(str(warning))}[/yellow]", highlight=False)
        self.console.print(f"[dim]system prompt: {len(text)} chars, ~{estimate_tokens(text)} tokens "
                           f"(workspace version {self.ws.version})[/dim]")

    def cmd_compact(self, args: str) -> None:
        result = self.agent.compact(args or None)
        if result.mode == "none":
            self.console.print(f"[dim]nothing to compact: {escape(result.error or 'the history is short')}[/dim]")
            return
        note = f" ({escape(result.error)})" if result.error else ""
        self.console.print(f"[dim]compacted ({result.mode}): {result.before_tokens} → "
                           f"{result.after_tokens} tokens{note}[/dim]")

    def cmd_memory(self, args: str) -> None:
        if not args:
            self.console.print("usage: /memory QUERY")
            return
        result = self.ws.memory.search(args)
        results = list(getattr(result, "results", []) or [])
        if not results:
            self.console.print("[dim]no matches[/dim]")
        for hit in results:
            self.console.print(f"[bold]{escape(where_lines(str(hit.path), hit.start_line, hit.end_line))}[/bold] "
                               f"[dim]{hit.score:.2f}[/dim]  {escape(' '.join(str(hit.snippet).split()))}")

    def cmd_dream(self, args: str) -> None:
        result = self.ws.dream()
        data = result.to_json() if hasattr(result, "to_json") else {}
        promoted = (data.get("deep") or {}).get("promoted") or []
        self.console.print(f"dreamed: {plural(len(promoted), 'memory')} promoted"
                           + ("".join(f"\n  - {key}" for key in promoted)), markup=False)

    def cmd_skill(self, args: str) -> None:
        name, _, rest = args.partition(" ")
        if not name:
            self.console.print("usage: /skill NAME [message]", markup=False)
            return
        # the model receives the skill body; transcripts and archives keep what the user typed
        self.message(self.agent.skill_message(name, rest))


def tool_line(call: Any) -> str:
    """`→ name {args} · ok` for a finished call (a ToolOutcome or a tool_result event)."""
    state = "blocked" if call.blocked else ("ok" if call.ok else "failed")
    arguments = getattr(call, "arguments", None)
    args = json.dumps(arguments, ensure_ascii=False) if arguments is not None else ""
    if len(args) > 80:
        args = args[:79] + "…"
    return f"→ {call.name} {args} · {state}" if args else f"→ {call.name} · {state}"


def offer_hook_trust(ws: Workspace, ask: Callable[[str], str], say: Callable[[str], None]) -> list[str]:
    """§6: workspace hook code runs only once the user allows it — `kit hooks trust NAME`, or here,
    at the first interactive prompt. Each untrusted workspace hook is offered once; only a yes
    trusts it (by content hash, so an edit asks again next time). Returns the names trusted."""

    def confirm(hook) -> bool:
        runs = f"the command `{hook.command}`" if hook.command else f"hooks/{hook.name}/handler.py"
        try:
            answer = ask(f"Workspace hook {hook.name!r} ({', '.join(hook.events)}) runs {runs}, which is "
                         f"not trusted yet. Review hooks/{hook.name}/ first. Allow it to run? [y/N] ")
        except (EOFError, KeyboardInterrupt):
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            return True
        say(f"hook {hook.name} stays off (`kit hooks trust {hook.name}` allows it later)")
        return False

    return ws.hooks.ask_trust(confirm)


def run_repl(ws: Workspace, *, model: str | None = None, session_key: str | None = None,
             kind: str = "default", generation=None) -> int:
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)

    repl: Repl | None = None

    def approve(command: str, reason: str) -> bool:
        what = "mcp" if reason.startswith("MCP server") else "exec"  # an MCP tool under policy ask
        view = repl.view if repl is not None else None
        with view.paused() if view is not None else contextlib.nullcontext():
            answer = console.input(f"[yellow]{what}[/yellow] `{escape(command)}` ({escape(reason)}). "
                                   f"Run it? {escape('[y/N]')} ")
        return answer.strip().lower() in ("y", "yes")

    def status(message: str) -> None:
        view = repl.view if repl is not None else None
        if view is not None and threading.current_thread() is threading.main_thread():
            view.note(message)  # a reply is being drawn: the line goes above it, or after its text
        elif repl is not None:
            repl.notify(f"[dim]{escape(message)}[/dim]")  # never onto the prompt's line
        else:
            console.print(f"[dim]{escape(message)}[/dim]")

    # the same words as `kit run MESSAGE` (there is no previous version yet: "previous/default" was wrong)
    for notice in ws.load_notices():
        console.print(f"[yellow]{escape(notice)}[/yellow]")
    # before the Agent exists, so a hook allowed now already sees session:start; only on a
    # terminal: piped input is the conversation, not answers to trust questions
    if sys.stdin.isatty():
        for name in offer_hook_trust(ws, lambda question: console.input(escape(question)), status):
            status(f"hook {name} trusted")
    agent = ws.agent(model=model, session_key=session_key, kind=kind, interactive=True,
                     approve=approve, status=status, generation=generation, model_flag="--model")
    repl = Repl(ws, agent, console=console)
    return repl.run()
