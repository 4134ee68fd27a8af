"""The `script` provider — a TEST / OFFLINE provider, not a model.

It replays a YAML file of assistant turns so that tests and offline demos can drive Kit's agent
loop (tools, hooks, sessions, compaction) without an LLM. Each model call consumes the next turn:

    turns:
      - tool_calls:
          - {name: memory_search, arguments: {query: "deploy checklist"}}
      - text: "The checklist is in your notes from Tuesday."
      - {text: "…", usage: {prompt_tokens: 120, completion_tokens: 9}}
      - error: {kind: rate_limit, message: "simulated 429"}     # raise a ProviderError
      - {text: "The answer is", finish_reason: length}          # a reply the max_tokens cap cut
      - {tool_calls: [{name: write_file, arguments_raw: '{"pa'}], finish_reason: length}  # a cut call
      - {text: "streamed word by word", delay_s: 0.2}           # pause before each word (streaming)

Optional top-level `record: FILE` (relative to the script) appends every request the provider
receives (messages and tool names) as one JSON line, so tests can inspect what the model saw.

Replies stream like a model's: text comes as word-sized `TextDelta` events (with `delay_s`
between them if the turn asks), tool calls as `ToolCallDelta` events, then `Finish`, `UsageUpdate`
and `Reply` (kit.providers.events), assembled by the same Assembler as a real provider's. A run
that needs more turns than the script has fails with a clear ProviderError.
Turn positions live in a `ScriptPositions` that the caller owns (the workspace keeps one:
`kit.providers.failover` passes it), so a REPL or a client that re-creates the provider keeps moving
forward through the same script, and a new workspace starts every script from its first turn.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kit.core import WorkspaceCore
from kit.errors import ConfigError, DocumentError
from kit.providers.base import (
    ERROR_KINDS,
    GenerationSettings,
    ProviderError,
    Usage,
    system_text,
)
from kit.providers.events import Finish, TextDelta, ToolCallDelta, UsageUpdate
from kit.providers.streaming import StreamingProvider, assembled
from kit.wording import did_you_mean, plural

LABEL = "script (test/offline provider: replays a YAML file, no model involved)"



class ScriptPositions:
    """How far each script (by path) has been played; shared by the providers given it."""

    def __init__(self) -> None:
        self._played: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, path: Path) -> int:
        with self._lock:
            return self._played.get(str(path), 0)

    def take(self, path: Path, available: int) -> int | None:
        """The index of the next turn (and move past it), or None when all `available` are played."""
        with self._lock:
            index = self._played.get(str(path), 0)
            if index >= available:
                return None
            self._played[str(path)] = index + 1
            return index

    def reset(self) -> None:
        """Start every script from its first turn again."""
        with self._lock:
            self._played.clear()


def positions_for(ws: WorkspaceCore) -> ScriptPositions:
    """The workspace's positions: a REPL or a re-created client keeps moving forward through a
    script; a new workspace starts every script from its first turn."""
    return ws.owned("providers.script_positions", ScriptPositions)


MAX_SCRIPT_VALUES = 200_000  # a long scripted session is legitimate; a YAML bomb is not


def _key_line(node: Any, name: str) -> int | None:
    """1-based line of a top-level key (for errors)."""
    for key, _ in getattr(node, "value", None) or []:
        if getattr(key, "value", None) == name:
            return key.start_mark.line + 1
    return None


def _turn_lines(node: Any) -> list[int]:
    """1-based line of each item of the top-level `turns:` list (for errors)."""
    for key, value in getattr(node, "value", None) or []:
        if getattr(key, "value", None) == "turns" and isinstance(getattr(value, "value", None), list):
            return [item.start_mark.line + 1 for item in value.value]
    return []


TURN_KEYS = ("text", "tool_calls", "error", "usage", "finish_reason", "delay_s")
CALL_KEYS = ("name", "arguments", "arguments_raw", "id")


def _unknown(given: Any, known: tuple[str, ...], what: str) -> str | None:
    for key in given:
        if key not in known:
            return f"{what}unknown key {key!r}" + (did_you_mean(str(key), known) or f" (known: {', '.join(known)})")
    return None


def _turn_problem(turn: Any) -> str | None:
    """Why a scripted turn cannot be replayed, or None."""
    if isinstance(turn, dict) and (unknown := _unknown(turn, TURN_KEYS, "has an ")):
        return unknown  # a typo (`txt:`) is named, not reported as a missing `text`
    if not isinstance(turn, dict) or not ({"text", "tool_calls", "error"} & set(turn)):
        return "needs `text`, `tool_calls` or `error`"
    if isinstance(turn.get("text"), (dict, list)):
        return "`text` must be a string"
    calls = turn.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return "`tool_calls` must be a list"
    for number, call in enumerate(calls or [], start=1):
        if isinstance(call, dict) and (unknown := _unknown(call, CALL_KEYS, f"tool call {number} has an ")):
            return unknown
        if not isinstance(call, dict) or "name" not in call:
            return f"tool call {number} needs a `name`"
        if call.get("arguments") is not None and not isinstance(call["arguments"], dict):
            return f"tool call {number}: `arguments` must be a mapping"
    usage = turn.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            return "`usage` must be a mapping"
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                return f"`usage.{key}` must be a whole number, 0 or more"
    delay = turn.get("delay_s")
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 3600):
        return "`delay_s` must be a number of seconds (0 to 3600)"
    error = turn.get("error")
    if error is not None and not isinstance(error, (dict, str)):
        return "`error` must be a mapping (kind, message) or a message"
    if isinstance(error, dict) and "kind" in error and error["kind"] not in ERROR_KINDS:
        return f"`error.kind` {error['kind']!r} is not one of {', '.join(ERROR_KINDS)}"
    return None


def _estimate(text: str) -> int:
    # the script has no tokenizer; a chars/4 guess keeps usage accounting meaningful in tests
    return max(1, len(text) // 4) if text else 0


def _paced(events: list[Any], delay: float) -> Iterator[Any]:
    """The events, each text delta `delay` seconds after the one before (a slow model)."""
    for event in events:
        if isinstance(event, TextDelta):
            time.sleep(delay)
        yield event


class ScriptProvider(StreamingProvider):
    """Replays `turns` from a YAML file. Clearly labelled: it is for tests and offline demos."""

    name = "script"
    label = LABEL

    def __init__(self, path: str | Path, positions: ScriptPositions | None = None, *, root: Path | None = None):
        """`root`: what a relative `path` is relative to (the workspace, for a spec from kit.yaml or
        the library); without it, the current directory."""
        given = Path(path).expanduser()
        try:
            self.path = (given if root is None or given.is_absolute() else Path(root) / given).resolve()
        except RuntimeError:  # Python 3.11's way of reporting a symlink loop
            raise ConfigError(f"script provider: {path}: symlink loop (the link points back to itself)") from None
        self.positions = positions if positions is not None else ScriptPositions()
        self.turns, self.record = self._load()

    def _load(self) -> tuple[list[dict[str, Any]], Path | None]:
        from kit.fsutil import read_text
        from kit.yamlsafe import NotAMapping, YamlError, load_mapping

        display = str(self.path)
        if not os.path.lexists(self.path):
            raise ConfigError(f"script provider: no such script file {display}")
        try:
            text = read_text(self.path, display=display)
            data, node = load_mapping(text, max_chars=len(text) + 1, max_nodes=MAX_SCRIPT_VALUES)
        except NotAMapping:
            data, node = {}, None  # said below: the file needs a top-level `turns:` list
        except DocumentError as exc:
            raise ConfigError(f"script provider: {exc.message}", path=display, line=exc.line) from None
        except YamlError as exc:
            raise ConfigError(f"script provider: invalid YAML: {exc.message}", path=display, line=exc.line) from None
        if not isinstance(data.get("turns"), list):
            raise ConfigError("script provider: the file needs a top-level `turns:` list", path=display)
        if not data["turns"]:  # a malformed script, as the README says (it read "only 0 turns" at run time)
            raise ConfigError("script provider: `turns:` is empty; a script needs at least one turn", path=display,
                              line=_key_line(node, "turns"))
        lines = _turn_lines(node)
        for number, turn in enumerate(data["turns"], start=1):
            problem = _turn_problem(turn)
            if problem:
                raise ConfigError(f"script provider: turn {number} {problem}", path=display,
                                  line=lines[number - 1] if number <= len(lines) else None)
        record = data.get("record")
        if record is not None and not isinstance(record, str):
            raise ConfigError("script provider: `record` must be a file name", path=display)
        return list(data["turns"]), (self.path.parent / record) if record else None

    @property
    def position(self) -> int:
        return self.positions.get(self.path)

    def _take(self) -> tuple[int, dict[str, Any]]:
        index = self.positions.take(self.path, len(self.turns))
        if index is None:
            raise ProviderError(
                f"script {self.path} has only {plural(len(self.turns), 'turn')} but the run asked for "
                f"turn {len(self.turns) + 1}; add more turns to the script",
                kind="format",
                provider="script",
            )
        return index, self.turns[index]

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, model: str = "",
        generation: GenerationSettings | None = None,
    ) -> Iterator[Any]:
        """The next turn as a model's stream would deliver it, assembled by the same Assembler as
        a real provider's (a call with `arguments_raw` and `finish_reason: length` is cut)."""
        index, turn = self._take()
        self._record_request(index, messages, tools, generation)
        if "error" in turn:
            err = turn["error"] or {}
            kind = err.get("kind", "format") if isinstance(err, dict) else "format"
            message = err.get("message", "scripted error") if isinstance(err, dict) else str(err)
            raise ProviderError(message, kind=kind, provider="script")  # (an unknown kind is refused at load)
        events: list[Any] = []
        text = turn.get("text")
        for piece in re.findall(r"\S+\s*|\s+", "" if text is None else str(text)):
            events.append(TextDelta(piece))
        calls = turn.get("tool_calls") or []
        for number, call in enumerate(calls, start=1):
            if not isinstance(call, dict) or "name" not in call:
                raise ConfigError(
                    f"script provider: turn {index + 1}, tool call {number} needs a `name`",
                    path=str(self.path),
                )
            raw = call.get("arguments_raw")
            arguments = str(raw) if raw is not None else json.dumps(dict(call.get("arguments") or {}),
                                                                     ensure_ascii=False)
            events.append(ToolCallDelta(index=number - 1, id=call.get("id") or f"call_{index + 1}_{number}",
                                        name=str(call["name"]), arguments=arguments))
        events.append(Finish(str(turn.get("finish_reason") or ("tool_calls" if calls else "stop"))))
        usage = turn.get("usage") or {}
        prompt_chars = sum(len(system_text(m.get("content"))) for m in messages)
        events.append(UsageUpdate(Usage(
            prompt_tokens=int(usage.get("prompt_tokens", max(1, prompt_chars // 4))),
            completion_tokens=int(usage.get("completion_tokens", _estimate(str(text or "")))),
        )))
        delay = float(turn.get("delay_s") or 0)
        yield from assembled(_paced(events, delay) if delay else events, f"script:{self.path.name}")

    def _record_request(self, index: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                        generation: GenerationSettings | None) -> None:
        if self.record is None:
            return
        line: dict[str, Any] = {
            "turn": index + 1,
            # the system prompt as one string, whether or not Kit split it for prompt caching
            "messages": [{**m, "content": system_text(m.get("content"))} if m.get("role") == "system" else m
                         for m in messages],
            "tools": sorted(t["function"]["name"] for t in tools),
        }
        if generation is not None:
            line["generation"] = generation.to_json()
        with self.record.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
