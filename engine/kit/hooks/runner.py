"""Run one hook on one event, isolated: a timeout, exceptions caught, nothing leaks out.

Handlers (`handler.py` with `handle(event)`, plain or async) are loaded from their file path as
a module of their own — one per hook and content hash, so two hooks never share globals and an
edited handler is loaded afresh — and run on a daemon worker thread that the caller waits on for
at most the timeout. A handler still running after its timeout is abandoned (Python cannot kill a
thread), logged, and the pipeline goes on; until it returns, that hook is skipped (logged) rather
than started again on another thread.

Commands run through /bin/sh in the workspace root (`$KIT_HOOK_DIR` names the hook's folder),
in their own process group (killed on timeout), with the event JSON on stdin and the dangerous
environment variables removed. Not in the hook's folder: a file a command writes there would
change the folder's content hash and so untrust the hook.
Exit 0 → stdout JSON (if any) is the return value; exit 2 → block, stderr is the reason;
anything else is an error.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kit.hooks.events import HookEvent
from kit.hooks.spec import HookSpec

# an async handler is cancelled at its timeout on its own loop; this lets the cancellation land
# before the caller gives up on the thread (else it would count as stuck)
CANCEL_GRACE_S = 0.2
# Process-wide on purpose, unlike every other piece of Kit's state: handler modules are in
# sys.modules and threads belong to the process, so a stuck handler must be known to every
# workspace the process opens (a fleet worker opens one per task).
_modules: dict[tuple[str, str], ModuleType] = {}
_modules_lock = threading.Lock()


@dataclass(frozen=True)
class RunResult:
    value: Any = None  # what the hook returned (dict or None)
    error: str | None = None  # exception / timeout / exit status, for the log
    blocked: bool = False
    reason: str | None = None


def load_handler(path: Path, digest: str) -> ModuleType:
    key = (str(path), digest)
    with _modules_lock:
        module = _modules.get(key)
    if module is not None:
        return module
    module_name = f"kit_hook_{path.parent.name.replace('-', '_')}_{digest[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    if not callable(getattr(module, "handle", None)):
        raise AttributeError(f"{path.name} defines no handle(event) function")
    with _modules_lock:
        _modules[key] = module
    return module


def block_of(value: Any) -> tuple[bool, str | None]:
    """A returned dict blocks with {"block": true, "reason": …} or {"decision": "block"|"deny"},
    or as Claude Code's hooks answer: {"hookSpecificOutput": {"permissionDecision": "deny",
    "permissionDecisionReason": …}}."""
    if not isinstance(value, dict):
        return False, None
    decision = str(value.get("decision", "")).lower()
    if value.get("block") is True or decision in ("block", "deny"):
        return True, str(value.get("reason") or "blocked by hook")
    specific = value.get("hookSpecificOutput")
    if isinstance(specific, dict) and str(specific.get("permissionDecision", "")).lower() == "deny":
        return True, str(specific.get("permissionDecisionReason") or value.get("systemMessage") or "blocked by hook")
    return False, None


_abandoned: dict[str, threading.Thread] = {}  # hook folder → its handler thread still running past a timeout


def run_handler(hook: HookSpec, event: HookEvent, timeout_s: float, digest: str) -> RunResult:
    key = str(hook.dir)
    stuck = _abandoned.get(key)
    if stuck is not None:
        if stuck.is_alive():
            # one stuck thread per hook at most: a handler that hangs on every event must not
            # pile up a thread per tool call
            return RunResult(error="not run: still running after an earlier timeout")
        _abandoned.pop(key, None)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            module = load_handler(hook.handler, digest)
            value = module.handle(event)
            if inspect.isawaitable(value):
                value = asyncio.run(_await(value, timeout_s))
            box["value"] = value
        except TimeoutError:
            box["error"] = f"timed out after {timeout_s:g}s"
        except BaseException as exc:  # SystemExit from a handler must not end Kit either
            box["error"] = f"{type(exc).__name__}: {exc}"

    worker = threading.Thread(target=work, name=f"hook-{hook.name}", daemon=True)
    worker.start()
    worker.join(timeout_s + CANCEL_GRACE_S)
    if worker.is_alive():
        _abandoned[key] = worker
        return RunResult(error=f"timed out after {timeout_s:g}s (handler abandoned)")
    if "error" in box:
        return RunResult(error=box["error"])
    value = box.get("value")
    blocked, reason = block_of(value)
    return RunResult(value=value, blocked=blocked, reason=reason)


async def _await(awaitable: Any, timeout_s: float) -> Any:
    return await asyncio.wait_for(awaitable, timeout_s)


@dataclass(frozen=True)
class ShellResult:
    returncode: int | None  # None when it was killed at the timeout
    stdout: str
    stderr: str
    timed_out: bool


def run_shell(command: str, *, cwd: str | os.PathLike, env: dict[str, str], timeout_s: float,
              stdin: bytes | None = None) -> ShellResult:
    """`/bin/sh -c command` in its own process group, so a timeout kills its children too — the
    one place Kit starts shell commands (command hooks here, the exec tool in kit.agent). Output
    is decoded as UTF-8 with replacement. OSError when the shell cannot start."""
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command], cwd=os.fspath(cwd), env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        out, err = proc.communicate()
        timed_out = True
    return ShellResult(None if timed_out else proc.returncode, out.decode("utf-8", "replace"),
                       err.decode("utf-8", "replace"), timed_out)


def run_command(hook: HookSpec, event: HookEvent, timeout_s: float) -> RunResult:
    from kit.envsafe import clean_env

    env = clean_env()
    env.update({
        "KIT_HOOK_EVENT": event.type,
        "KIT_HOOK_NAME": hook.name,
        "KIT_HOOK_DIR": str(hook.dir),
        "KIT_WORKSPACE": event.workspace,
    })
    payload = json.dumps(event.to_json(), ensure_ascii=False, default=str).encode("utf-8")
    try:
        done = run_shell(hook.command or "", cwd=event.workspace, env=env, timeout_s=timeout_s, stdin=payload)
    except OSError as exc:
        return RunResult(error=f"cannot start command: {exc}")
    if done.timed_out:
        return RunResult(error=f"timed out after {timeout_s:g}s (command killed)")
    stdout, stderr = done.stdout.strip(), done.stderr.strip()
    if done.returncode == 2:
        return RunResult(blocked=True, reason=stderr or "blocked by hook command (exit 2)")
    if done.returncode != 0:
        tail = stderr[-500:] or stdout[-500:]
        return RunResult(error=f"command exited {done.returncode}" + (f": {tail}" if tail else ""))
    if not stdout:
        return RunResult()
    try:
        value = json.loads(stdout)
    except json.JSONDecodeError:
        return RunResult()  # plain text output is fine for a non-decision command hook
    blocked, reason = block_of(value)
    return RunResult(value=value, blocked=blocked, reason=reason)
