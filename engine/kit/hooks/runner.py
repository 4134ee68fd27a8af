"""Run one hook on one event, isolated: a timeout, exceptions caught, nothing leaks out.

Handlers (`handler.py` with `handle(event)`, plain or async) are loaded from their file path as
a module of their own — one per hook and content hash, so two hooks never share globals and an
edited handler is loaded afresh — and run on a daemon worker thread that the caller waits on for
at most the timeout. A handler still running after its timeout is abandoned (Python cannot kill a
thread), logged, and the pipeline goes on; until it returns, that hook is skipped (logged) rather
than started again on another thread.

What a handler prints (stdout, stderr) is captured per run (kit.hooks.output) and logged, never
shown on Kit's own streams.

Commands run through /bin/sh in the workspace root (`$KIT_HOOK_DIR` names the hook's folder),
in their own process group, with the event JSON on stdin and the dangerous environment variables
removed. Every process the command starts ends with it: when the shell exits (or at the timeout)
Kit ends its process group and every process still carrying the run's `KIT_HOOK_RUN` token in
its environment — which also finds children that left the group with `setsid`, `nohup` or a
double fork (descendants inherit the environment; /proc shows it). Not in the hook's folder: a file a command writes there would
change the folder's content hash and so untrust the hook.
Exit 0 → stdout JSON (if any: it starts with `{` and ends with `}`) is the return value, and
stdout that looks like JSON but does not parse is an error (`unreadable`: on tool:before and
message:received the registry blocks, failing closed); exit 2 → block, stderr is the reason;
anything else is an error.
"""

from __future__ import annotations

import contextlib
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

from kit.hooks.events import HookEvent, json_problem, looks_like_json
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
    output: str = ""  # a handler's printed text, or a command's non-JSON stdout (logged)
    ended: int = 0  # processes a command left behind that Kit ended
    # the hook answered something Kit cannot read (stdout that looks like JSON but does not
    # parse): Kit cannot tell what it meant, so where it may stop Kit it blocks (fails closed)
    unreadable: bool = False
    # a hook that never got to answer (it timed out, its command could not start): it may have
    # said no, so it blocks there too. A hook that failed (an exception, exit 1) answered nothing
    # either, but said so: logged, the pipeline goes on, as Claude Code does for exit 1
    not_run: bool = False


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
    "permissionDecisionReason": …}} or {"continue": false, "stopReason": …}."""
    if not isinstance(value, dict):
        return False, None
    decision = str(value.get("decision", "")).lower()
    if value.get("block") is True or decision in ("block", "deny"):
        return True, str(value.get("reason") or "blocked by hook")
    specific = value.get("hookSpecificOutput")
    if isinstance(specific, dict) and str(specific.get("permissionDecision", "")).lower() == "deny":
        return True, str(specific.get("permissionDecisionReason") or value.get("systemMessage") or "blocked by hook")
    if value.get("continue") is False:
        return True, str(value.get("stopReason") or "stopped by hook (continue: false)")
    return False, None


def unread_decision(value: Any) -> str | None:
    """What Kit cannot read in an answer where a hook may say no (`FAIL_CLOSED_EVENTS`): a value
    that is not a mapping ("deny", True), `{"block": 1}`, `{"decision": "denied"}`, a
    permissionDecision other than allow/deny, `{"continue": "no"}`. Such a hook may have meant no,
    so Kit blocks (fails closed). A key set to null (or an empty decision) is no answer at all."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"returned {type(value).__name__}, expected a mapping or None"
    if value.get("block") is not None and not isinstance(value["block"], bool):
        return f"block {json.dumps(value['block'], default=str)} is not true or false"
    decision = value.get("decision")
    if decision not in (None, "") and str(decision).lower() not in ("block", "deny", "allow", "approve"):
        return f"decision {json.dumps(decision, default=str)} is not block, deny, allow or approve"
    if value.get("continue") is not None and not isinstance(value["continue"], bool):
        return f"continue {json.dumps(value['continue'], default=str)} is not true or false"
    specific = value.get("hookSpecificOutput")
    permission = specific.get("permissionDecision") if isinstance(specific, dict) else None
    if permission not in (None, "") and str(permission).lower() not in ("allow", "deny"):
        return (f"permissionDecision {json.dumps(permission, default=str)} is not allow or deny "
                "(Kit's own hooks cannot ask)")
    return None


def answer(value: Any, **fields: Any) -> RunResult:
    """The RunResult of a hook that answered `value`."""
    blocked, reason = block_of(value)
    return RunResult(value=value, blocked=blocked, reason=reason, **fields)


_abandoned: dict[str, threading.Thread] = {}  # hook folder → its handler thread still running past a timeout


def run_handler(hook: HookSpec, event: HookEvent, timeout_s: float, digest: str) -> RunResult:
    key = str(hook.dir)
    stuck = _abandoned.get(key)
    if stuck is not None:
        if stuck.is_alive():
            # one stuck thread per hook at most: a handler that hangs on every event must not
            # pile up a thread per tool call
            return RunResult(error="still running after an earlier timeout (not started again)", not_run=True)
        _abandoned.pop(key, None)
    box: dict[str, Any] = {}

    def work() -> None:
        from kit.hooks.output import CAPTURE

        box["sink"] = CAPTURE.begin()  # print() in the handler goes to the log, not Kit's stdout
        try:
            module = load_handler(hook.handler, digest)
            value = module.handle(event)
            if inspect.isawaitable(value):
                import asyncio  # ~0.1 s of imports: only for a handler that is a coroutine

                value = asyncio.run(_await(value, timeout_s))
            box["value"] = value
        except TimeoutError:
            box["error"] = f"timed out after {timeout_s:g}s"
            box["not_run"] = True  # an async handler cancelled at its timeout: it never answered
        except BaseException as exc:  # SystemExit from a handler must not end Kit either
            box["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            CAPTURE.end()

    worker = threading.Thread(target=work, name=f"hook-{hook.name}", daemon=True)
    worker.start()
    worker.join(timeout_s + CANCEL_GRACE_S)
    if worker.is_alive():
        _abandoned[key] = worker
        return RunResult(error=f"timed out after {timeout_s:g}s (handler abandoned)", not_run=True)
    from kit.hooks.output import joined

    output = joined(box.get("sink") or [])
    if "error" in box:
        return RunResult(error=box["error"], output=output, not_run=bool(box.get("not_run")))
    return answer(box.get("value"), output=output)


async def _await(awaitable: Any, timeout_s: float) -> Any:
    import asyncio

    return await asyncio.wait_for(awaitable, timeout_s)


@dataclass(frozen=True)
class ShellResult:
    returncode: int | None  # None when it was killed at the timeout
    stdout: str
    stderr: str
    timed_out: bool
    ended: int = 0  # with end_all: processes still running when the shell was done, then ended


RUN_TOKEN = "KIT_HOOK_RUN"  # in the environment of every process a command hook starts
END_GRACE_S = 0.5  # SIGTERM, then this long, then SIGKILL


def run_shell(command: str, *, cwd: str | os.PathLike, env: dict[str, str], timeout_s: float,
              stdin: bytes | None = None, end_all: bool = False) -> ShellResult:
    """`/bin/sh -c command` in its own process group, so a timeout kills its children too — the
    one place Kit starts shell commands (command hooks here, the exec tool in kit.tools). Output
    is decoded as UTF-8 with replacement. OSError when the shell cannot start.

    `end_all` (command hooks): the command's life ends with the shell's — whatever it started is
    ended then, found by process group and by a token in the environment (see the module
    docstring), even when it was detached with setsid."""
    if end_all:
        return _run_and_end_all(command, cwd=cwd, env=env, timeout_s=timeout_s, stdin=stdin)
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


def _run_and_end_all(command: str, *, cwd: str | os.PathLike, env: dict[str, str], timeout_s: float,
                     stdin: bytes | None) -> ShellResult:
    import uuid

    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command], cwd=os.fspath(cwd), env={**env, RUN_TOKEN: token},
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    since = _start_ticks(proc.pid)  # every process of the run starts no earlier than its shell
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def pump(stream: Any, into: list[bytes]) -> None:
        with stream:
            for block in iter(lambda: stream.read1(65536), b""):
                into.append(block)

    def feed() -> None:
        try:
            with proc.stdin:  # type: ignore[union-attr]
                proc.stdin.write(stdin)  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            pass  # the command did not read its stdin

    threads = [threading.Thread(target=pump, args=(proc.stdout, chunks["out"]), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, chunks["err"]), daemon=True)]
    if stdin is not None:
        threads.append(threading.Thread(target=feed, daemon=True))
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except BaseException as exc:  # the timeout, or Ctrl-C while waiting: the command ends here
        timed_out = isinstance(exc, subprocess.TimeoutExpired)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if not timed_out:
            end_processes(proc.pid, token, grace_s=0.0, since=since)
            raise
    # the shell is done (or out of time): so is everything it started. (Linux never hands out a
    # pid still in use as a process group id, so the group outlives the reaped shell safely.)
    ended = end_processes(proc.pid, token, grace_s=0.0 if timed_out else END_GRACE_S, since=since)
    for thread in threads:
        thread.join(timeout=5.0)  # the pipes close once every holder has been ended
    out = b"".join(chunks["out"]).decode("utf-8", "replace")
    err = b"".join(chunks["err"]).decode("utf-8", "replace")
    return ShellResult(None if timed_out else proc.returncode, out, err, timed_out, ended=ended)


def _environ(pid: int) -> bytes:
    with open(f"/proc/{pid}/environ", "rb") as handle:
        return handle.read()


ENVIRON_RETRIES = 20  # × 5 ms: how long a process may look environment-less while it execs


def _start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat field 22); None
    where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[-1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _run_pids(pgid: int, token: str, since: int | None = None) -> set[int]:
    """Live processes of the run: in process group `pgid`, or carrying the run's token in their
    environment (Linux /proc; empty elsewhere, where the process group kill still applies).
    `since`: when the run's shell started (clock ticks, _start_ticks); an environment-less process
    older than that is not the run's, mid-exec or not, and is not read again."""
    import time

    needle = f"{RUN_TOKEN}={token}".encode()
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    me = os.getpid()
    unsure: list[int] = []
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[-1].split()
            if fields[0] == b"Z":  # a zombie has ended already
                continue
            if int(fields[2]) == pgid:
                found.add(int(name))
                continue
            env = _environ(int(name))
            if needle in env.split(b"\0"):
                found.add(int(name))
            elif not env and int(fields[1]) not in (0, 2) and (since is None or int(fields[19]) >= since):
                # not a kernel thread, nor older than the run (a process of `env -i`: every scan
                # would wait out the retries, ~100 ms a hook): a process in the middle of execve reads as environment-less
                # until the kernel has set up the new image's stack (a `setsid` child of the hook
                # exec'ing its command escaped this way under load) — look again in a moment
                unsure.append(int(name))
        except (OSError, IndexError, ValueError):  # gone meanwhile, or not ours to read
            continue
    for _try in range(ENVIRON_RETRIES):
        if not unsure:
            break
        time.sleep(0.005)
        still: list[int] = []
        for pid in unsure:
            try:
                env = _environ(pid)
            except OSError:
                continue  # gone
            if needle in env.split(b"\0"):
                found.add(pid)
            elif not env:
                still.append(pid)
        unsure = still
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def end_processes(pgid: int, token: str, *, grace_s: float = END_GRACE_S, since: int | None = None) -> int:
    """End the process group `pgid` and every process carrying `token`: SIGTERM, `grace_s` to
    exit, then SIGKILL. Repeats while new ones appear (a child forking as it is ended). Returns
    how many distinct processes were ended. `since`: when the run's shell started (_run_pids)."""
    import time

    signalled: set[int] = set()
    for _round in range(5):
        pids = _run_pids(pgid, token, since)
        with contextlib.suppress(ProcessLookupError, PermissionError):  # members /proc did not show
            os.killpg(pgid, signal.SIGTERM if grace_s > 0 else signal.SIGKILL)
        if not pids:
            break
        signalled |= pids
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM if grace_s > 0 else signal.SIGKILL)
        deadline = time.monotonic() + grace_s
        while grace_s > 0 and time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.02)
        for pid in pids:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return len(signalled)


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
        done = run_shell(hook.command or "", cwd=event.workspace, env=env, timeout_s=timeout_s, stdin=payload,
                         end_all=True)
    except OSError as exc:
        return RunResult(error=f"cannot start command: {exc}", not_run=True)
    if done.timed_out:
        return RunResult(error=f"timed out after {timeout_s:g}s (command killed)", ended=done.ended, not_run=True)
    stdout, stderr = done.stdout.strip(), done.stderr.strip()
    if done.returncode == 2:
        return RunResult(blocked=True, reason=stderr or "blocked by hook command (exit 2)", ended=done.ended)
    if done.returncode != 0:
        not_run = done.returncode in (126, 127)  # the shell could not run what it names (a mistyped script path)
        if not not_run and looks_like_json(stdout):  # a block the hook wrote is not let through for its exit status
            with contextlib.suppress(json.JSONDecodeError):
                blocked, reason = block_of(json.loads(stdout))
                if blocked:
                    return RunResult(blocked=True, reason=reason, ended=done.ended)
        tail = stderr[-500:] or stdout[-500:]
        return RunResult(error=f"command exited {done.returncode}" + (f": {tail}" if tail else ""),
                         ended=done.ended, not_run=not_run)
    if not stdout:
        return RunResult(output=stderr and f"[stderr] {stderr}", ended=done.ended)
    if not looks_like_json(stdout):
        # plain text output is fine for a non-decision command hook (a custom /command shows it)
        return RunResult(output=stdout, ended=done.ended)
    try:
        value = json.loads(stdout)
    except json.JSONDecodeError as exc:  # meant as JSON, but Kit cannot tell what it says
        return RunResult(error=json_problem(exc), unreadable=True, ended=done.ended)
    return answer(value, ended=done.ended)
