"""Running one tool call (§9): hooks, the tool itself, result truncation.

Every call goes through `execute_tool`, which fires `tool:before` (a hook may block the call with a
reason or rewrite its arguments), runs the tool from the context's registry, cuts an oversized
result and fires `tool:after`. Tools never raise into the loop: a failure becomes an `ok=False`
outcome whose text the model sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kit.errors import KitError
from kit.tools.registry import Blocked, ToolContext, ToolRegistry
from kit.tools.truncate import NARROWER, result_limit, saved_hint, truncate_result

if TYPE_CHECKING:
    from kit.hooks.registry import HookOutcome

PREVIEW_CHARS = 200

def fire_hook(ws: Any, event: str, data: dict[str, Any], *, session_key: str | None = None) -> HookOutcome:
    from kit.hooks.registry import fire_hook as fire  # on first call: listing tools stays cheap

    return fire(ws, event, data, session_key=session_key)


@dataclass(frozen=True)
class ToolOutcome:
    name: str
    arguments: dict[str, Any]
    ok: bool
    blocked: bool
    result: str  # what the model sees (after truncation)
    truncated: bool = False
    call_id: str = ""

    @property
    def preview(self) -> str:
        text = self.result.strip()
        return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "ok": self.ok,
            "blocked": self.blocked,
            "result_preview": self.preview,
        }


def _registry(ctx: ToolContext) -> ToolRegistry:
    if ctx.tools is not None:
        return ctx.tools
    from kit.tools.builtin import builtin_registry

    return builtin_registry()


def _run(ctx: ToolContext, name: str, arguments: dict[str, Any]) -> tuple[str, bool, bool]:
    """(text, ok, blocked) of running the tool; every failure becomes text for the model."""
    tools = _registry(ctx)
    found = tools.get(name)
    if found is None:
        return f"error: unknown tool `{name}`; available: {', '.join(tools.names)}", False, False
    try:
        return found.run(ctx, arguments), True, False
    except Blocked as exc:
        return str(exc), False, True
    except KitError as exc:
        return f"error: {exc}", False, False
    except ModuleNotFoundError as exc:
        return f"error: tool `{name}` is unavailable in this build ({exc.name} missing)", False, False
    except (OSError, ValueError, TypeError) as exc:
        return f"error: {type(exc).__name__}: {exc}", False, False
    except Exception as exc:  # noqa: BLE001 - a broken tool must not end the turn
        return f"error: internal error in `{name}`: {type(exc).__name__}: {exc}", False, False


def execute_tool(ctx: ToolContext, name: str, arguments: dict[str, Any], *, call_id: str = "") -> ToolOutcome:
    """Run one tool call with hooks and truncation; never raises for tool-level failures."""
    ws = ctx.ws
    if not isinstance(arguments, dict):
        outcome = ToolOutcome(name, {}, False, False,
                              f"error: arguments for `{name}` must be a JSON object, got {type(arguments).__name__}",
                              call_id=call_id)
        return _with_context(outcome, _after(ctx, outcome))
    arguments = dict(arguments)
    refusal = ctx.skills.refusal(name, arguments) if ctx.skills is not None else None
    if refusal is not None:  # a skill's allowed-tools: not even offered to the hooks
        outcome = ToolOutcome(name, arguments, False, True, f"blocked: {refusal}", call_id=call_id)
        return _with_context(outcome, _after(ctx, outcome))
    before = fire_hook(
        ws,
        "tool:before",
        {"tool": name, "name": name, "arguments": arguments, "session_id": ctx.session_id, "call_id": call_id},
        session_key=ctx.session_key,
    )
    refused = (before.reason or "no reason given") if before.blocked else _refused_ask(
        ctx, name, arguments, getattr(before, "ask", None))
    if refused is not None:
        outcome = ToolOutcome(name, arguments, False, True, f"blocked by a hook: {refused}", call_id=call_id)
        return _with_context(outcome, list(getattr(before, "context", None) or []) + _after(ctx, outcome))
    rewritten = before.data.get("arguments")
    if isinstance(rewritten, dict):
        arguments = dict(rewritten)

    text, ok, blocked = _run(ctx, name, arguments)
    cfg = ws.config
    limit = result_limit(text, cfg.tools.max_result_chars, cfg.agent.context_window)
    more = _see_the_rest(ctx, name, arguments, text, call_id) if len(text) > limit else NARROWER
    cut = truncate_result(text, limit, more=more)
    outcome = ToolOutcome(name, arguments, ok, blocked, cut.text, cut.cut, call_id)
    return _with_context(outcome, list(getattr(before, "context", None) or []) + _after(ctx, outcome))


def _refused_ask(ctx: ToolContext, name: str, arguments: dict[str, Any], ask: str | None) -> str | None:
    """A Claude Code hook answered `ask`: the person decides in an interactive run (as for exec's
    ask mode); nobody to ask means no, as exec's ask does."""
    if not ask:
        return None
    if ctx.interactive and ctx.approve is not None:
        import json

        shown = arguments.get("command") if name == "exec" else json.dumps(arguments, ensure_ascii=False)
        if ctx.approve(f"{name} {shown}", ask):
            return None
        return f"{ask}; the person said no"
    return f"{ask}; this run is not interactive, so nobody could approve it"


def _with_context(outcome: ToolOutcome, context: list[str]) -> ToolOutcome:
    """Hook context (Claude Code's additionalContext) goes to the model with the call's result."""
    if not context:
        return outcome
    from dataclasses import replace

    extra = "\n".join(f"[hook context] {text}" for text in context)
    return replace(outcome, result=f"{outcome.result}\n\n{extra}")


def _see_the_rest(ctx: ToolContext, name: str, arguments: dict[str, Any], text: str, call_id: str) -> str:
    """How the model can read what a cut left out: read_file's own file again (start/lines), or
    the whole output saved under .kit/tool-output/ when the model has read_file to read it back."""
    if name == "read_file":  # the file itself holds the rest; a copy would only fill the disk
        return f"read_file {arguments.get('path')} with start/lines reads the rest"
    if "read_file" not in _registry(ctx).names:  # e.g. an MCP client of `kit mcp serve`
        return NARROWER
    from kit.tools.saved_output import save_output

    tools = ctx.ws.config.tools
    saved = save_output(ctx.ws, text, session=ctx.session_id, call=call_id,
                        keep_days=tools.output_keep_days, keep_mb=tools.output_keep_mb)
    return NARROWER if saved is None else saved_hint(saved)


def _after(ctx: ToolContext, outcome: ToolOutcome) -> list[str]:
    after = fire_hook(
        ctx.ws,
        "tool:after",
        {
            "tool": outcome.name,
            "name": outcome.name,
            "arguments": outcome.arguments,
            "ok": outcome.ok,
            "blocked": outcome.blocked,
            "result": outcome.result,
            "truncated": outcome.truncated,
            "session_id": ctx.session_id,
            "call_id": outcome.call_id,
        },
        session_key=ctx.session_key,
    )
    return list(getattr(after, "context", None) or [])
