"""Part 1: generated malformed inputs through the real loaders and CLI.

Every file kind a workspace holds (kit.yaml and the user's, each bootstrap file, SKILL.md, HOOK.md,
daily notes, the archive, the prompt template, script provider files, session transcripts) gets
every mutation: broken YAML of every kind (depth, aliases, huge scalars and integers, surrogates,
bad dates, tags), bad bytes (NUL, invalid UTF-8, UTF-16, control and invisible characters, 3 MiB),
odd shapes, and things that are not regular files (FIFOs, sockets, symlink loops, /dev/zero).

Each case runs the commands that read that kind (`kit prompt`, `kit doctor`, `kit skills list`,
`kit memory index`, `kit run --model script:…`, `kit sessions show` …) in a worker process via
click's CliRunner, the real command code; every 20th case also as a real `kit` subprocess. A
worker that does not answer within the timeout is killed: a hang. A crash is a traceback or an
exception that is not one of Kit's typed errors (exit codes 0-3 are answers).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

NOW = "2026-05-07T09:00:00+00:00"
TODAY = "2026-05-07"
HANG_S = 20.0  # the bar for a hang
SLOW_S = 5.0
ENV = {
    "KIT_NOW": NOW,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    # no embedding model: the cases are about reading files, not vectors (fts-only, no torch)
    "KIT_MEMORY__EMBEDDING__MODEL": "stress-no-such-model",
    "KIT_HOOKS__TIMEOUT_S": "5",
}

SKILL = "---\nname: notes\ndescription: Take notes about the project\n---\n# Notes\n\nWrite things down.\n"
HOOK = ("---\nname: logger\ndescription: Log memory writes\nevents: [memory:write]\n"
        "command: echo logged\n---\n# Logger\n")
NOTE = "# 2026-05-01\n\n- Alice drinks oat milk.\n- Deploys happen on Tuesdays.\n"
SCRIPT = "turns:\n  - text: hello from the script\n"
TEMPLATE = "{{ soul }}\n"
SESSION = '{"seq": 1, "role": "user", "content": "hi"}\n{"seq": 2, "role": "assistant", "content": "hello"}\n'
CONFIG = "agent:\n  max_iterations: 5\n"

# kind -> (path, valid content, commands that read it); {script} and {session} are filled in
KINDS: dict[str, tuple[str, str, list[list[str]]]] = {
    "kit.yaml": ("kit.yaml", CONFIG, [["config", "show", "--json"], ["prompt"]]),
    "user-config": ("~/.config/kit/kit.yaml", CONFIG, [["prompt"]]),
    "SOUL.md": ("SOUL.md", "# Soul\n\nBe kind.\n", [["prompt"], ["doctor"]]),
    "USER.md": ("USER.md", "# User\n\nName: Alice\n", [["prompt"]]),
    "AGENTS.md": ("AGENTS.md", "# Agents\n\nWork carefully.\n", [["prompt"]]),
    "IDENTITY.md": ("IDENTITY.md", "# Identity\n\nKit.\n", [["prompt"]]),
    "TOOLS.md": ("TOOLS.md", "# Tools\n\nUse them.\n", [["prompt"]]),
    "HEARTBEAT.md": ("HEARTBEAT.md", "# Heartbeat\n\n- check mail\n",
                     [["run", "--kind", "heartbeat", "--model", "script:{script}"]]),
    "BOOTSTRAP.md": ("BOOTSTRAP.md", "# Bootstrap\n\nSay hello.\n", [["prompt"]]),
    "MEMORY.md": ("MEMORY.md", "# Memory\n\n- Alice likes tea.\n", [["prompt"], ["dream"], ["memory", "index"]]),
    "DREAMS.md": ("DREAMS.md", "# Dream diary\n", [["dream"], ["prompt"]]),
    "SKILL.md": ("skills/notes/SKILL.md", SKILL, [["skills", "list"], ["skills", "check"]]),
    "HOOK.md": ("hooks/logger/HOOK.md", HOOK, [["hooks", "list"], ["memory", "write", "a fact"]]),
    "daily-note": ("memory/2026-05-01.md", NOTE, [["memory", "index"], ["memory", "search", "oat milk"]]),
    "today-note": (f"memory/{TODAY}.md", NOTE, [["memory", "write", "the deploy moved to Wednesday"]]),
    "archive": ("memory/archive/promoted.md", "# Archive\n", [["memory", "index"], ["dream"]]),
    "template": ("templates/system.md.j2", TEMPLATE, [["prompt"]]),
    "script": ("script.yaml", SCRIPT, [["run", "--model", "script:{script}", "hi"]]),
    "session": (".kit/sessions/{session}.jsonl", SESSION, [["sessions", "show", "{session}"]]),
    # the fleet registry (no -w: it is the user's, not a workspace's); `add` rewrites it
    "fleet.yaml": ("~/.config/kit/fleet.yaml", "workspaces:\n  - /srv/kit/team\n",
                   [["fleet", "list", "--json"], ["fleet", "add", "{root}"]]),
}


def _nested_flow(n: int) -> str:
    return "[" * n + "]" * n


BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + "".join(f"{b}: &{b} [{','.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)))


def _fm(body: str) -> str:
    return f"---\n{body}\n---\nBody.\n"


# name -> function(valid text) -> bytes
MUTATIONS = {
    "empty": lambda v: b"",
    "bom-only": lambda v: b"\xef\xbb\xbf",
    "nul-bytes": lambda v: v.encode().replace(b" ", b"\x00", 3),
    "invalid-utf8": lambda v: v.encode()[:10] + b"\xff\xfe\xc3(" + v.encode()[10:],
    "latin1": lambda v: (v + "café naïve\n").encode("latin-1", "replace"),
    "utf16": lambda v: v.encode("utf-16"),
    "huge-3mib": lambda v: (v + "x" * (3 * 1024 * 1024)).encode(),
    "one-line-1.9mib": lambda v: (v + "y" * (1900 * 1024) + "\n").encode(),
    "many-lines": lambda v: (v + "- line\n" * 150_000).encode(),
    "crlf": lambda v: v.replace("\n", "\r\n").encode(),
    "cr-only": lambda v: v.replace("\n", "\r").encode(),
    "control-chars": lambda v: (v + "\x01\x02\x1b[31mred\x1b[0m\x7f\n").encode(),
    "invisible": lambda v: (v + "hidden\u200b\u202etext\u2066\n").encode(),
    "surrogate-escape": lambda v: _fm('name: "\\ud800\\udfff"\ndescription: "x"').encode(),
    "lone-surrogate": lambda v: _fm('name: x\ndescription: "\\udc80 lone"').encode(),
    "surrogate-plain": lambda v: b'name: "\\ud83d"\n',
    "flow-nesting-10k": lambda v: _fm("name: x\nmeta: " + _nested_flow(10_000)).encode(),
    "flow-open-200k": lambda v: ("agent: " + "[" * 200_000 + "\n").encode(),
    "dash-nesting-5k": lambda v: _fm("name: x\nmeta:\n  " + "- " * 5000 + "x").encode(),
    "map-nesting-1k": lambda v: _fm("name: x\nmeta: " + "{a: " * 1000 + "1" + "}" * 1000).encode(),
    "alias-bomb": lambda v: (BOMB + "agent:\n  fallbacks: *i\n").encode(),
    "alias-bomb-fm": lambda v: _fm("name: x\n" + BOMB.strip()).encode(),
    "recursive-alias": lambda v: _fm("name: x\ndescription: &d [*d]").encode(),
    "int-5000-digits": lambda v: _fm("name: x\nsize: " + "9" * 5000).encode(),
    "int-config": lambda v: ("agent:\n  max_iterations: " + "9" * 5000 + "\n").encode(),
    "float-huge": lambda v: _fm("name: x\nratio: 1e99999").encode(),
    "hex-huge": lambda v: ("agent:\n  max_iterations: 0x" + "f" * 20_000 + "\n").encode(),
    "bad-date": lambda v: _fm("name: x\ncreated: 2026-13-45").encode(),
    "bad-time": lambda v: _fm("name: x\nat: 2026-02-30 25:61:61").encode(),
    "unclosed-quote": lambda v: _fm('name: "x\ndescription: y').encode(),
    "unclosed-bracket": lambda v: (b"agent: {model: [a, b\n"),
    "tab-indent": lambda v: b"agent:\n\tmax_iterations: 5\n",
    "duplicate-keys": lambda v: b"agent:\n  max_iterations: 5\nagent:\n  max_iterations: 6\n",
    "top-level-list": lambda v: b"- a\n- b\n",
    "top-level-scalar": lambda v: b"just text\n",
    "fm-scalar": lambda v: _fm("just a string").encode(),
    "python-tag": lambda v: _fm("name: !!python/object/apply:os.system ['echo pwned']").encode(),
    "binary-tag": lambda v: _fm('name: x\nblob: !!binary "@@not base64@@"').encode(),
    "set-tag": lambda v: _fm("name: !!set {a, b}\ndescription: y").encode(),
    "merge-scalar": lambda v: _fm("name: x\n<<: 5").encode(),
    "complex-key": lambda v: _fm("? [a, b]\n: c").encode(),
    "null-key": lambda v: _fm("~: x\nname: y").encode(),
    "many-keys": lambda v: _fm("\n".join(f"k{i}: {i}" for i in range(30_000))).encode(),
    "huge-string": lambda v: _fm("name: x\ndescription: " + "z" * 300_000).encode(),
    "fm-unclosed": lambda v: b"---\nname: x\ndescription: y\nBody without end\n",
    "fm-only-dashes": lambda v: b"---\n",
    "fm-dots-end": lambda v: b"---\nname: x\n...\nbody\n",
    "wrong-types": lambda v: _fm("name: [1, 2]\ndescription: {a: b}\nevents: 5\ncommand: [x]\n"
                                 "metadata: 7\nuser-invocable: maybe").encode(),
    "empty-name": lambda v: _fm('name: ""\ndescription: ""').encode(),
    "bad-name": lambda v: _fm("name: ../../etc\ndescription: escape").encode(),
    "config-wrong-types": lambda v: (b"agent: 5\nmemory: [1]\ntools: {exec: {mode: yes}}\nhooks: {timeout_s: -1}\n"
                                     b"providers: {x: 7}\n"),
    "config-unknown": lambda v: (b"nope: 1\nagent: {modle: x}\n"),
    "config-secret": lambda v: (b"providers:\n  openai:\n    api_key: sk-123\n"),
    "config-bad-cron": lambda v: (b"dreaming:\n  enabled: true\n  schedule: 'every night'\n"
                                  b"  timezone: Mars/Olympus\n"),
    "md-deep-list": lambda v: (v + "".join("  " * i + "- item\n" for i in range(3000))).encode(),
    "md-unclosed-comment": lambda v: (v + "<!-- never closed\n- fact\n").encode(),
    "md-managed-garbage": lambda v: (v + "## Promoted memories\n\n<!-- kit:promoted key= claim= score=x"
                                     " recalls=1e999 date=2026-99-99 -->\n- half\n<!-- kit:promoted -->\n").encode(),
    "md-long-heading": lambda v: ("# " + "h" * 200_000 + "\n").encode(),
    "md-many-headings": lambda v: "".join(f"## topic {i}\n- x\n" for i in range(20_000)).encode(),
    "jinja-syntax": lambda v: b"{% for x in %}\n{{ soul }\n",
    "jinja-huge-loop": lambda v: b"{% for i in range(10**9) %}x{% endfor %}",
    "jinja-huge-mul": lambda v: b"{{ 'x' * 10**10 }}",
    "jinja-recursion": lambda v: b"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
    "jinja-undefined": lambda v: b"{{ no_such_variable.attr }}",
    "jinja-attr-escape": lambda v: b"{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "script-shapes": lambda v: (b"turns:\n  - tool_calls: {name: x}\n  - text: [1]\n"
                                b"  - usage: {prompt_tokens: lots}\n    text: y\n"),
    "script-args": lambda v: b"turns:\n  - tool_calls: [{name: read_file, arguments: [1, 2]}]\n",
    "script-no-turns": lambda v: b"record: 5\n",
    "json-garbage": lambda v: (v + "[1, 2]\n\"text\"\n{\"role\": 5}\n{not json\n").encode(),
    "json-huge-int": lambda v: (v + '{"seq": ' + "9" * 5000 + ', "role": "user", "content": "x"}\n').encode(),
    "json-deep": lambda v: (v + "[" * 200_000 + "\n").encode(),
    "json-compaction": lambda v: (v + '{"kind": "compaction", "mode": "summary", "dropped": "x", "role": "user"}\n'
                                  '{"kind": "compaction", "mode": "placeholders", "replaced": [1]}\n').encode(),
}

# things that are not regular files: created in place of the file
SPECIALS = ("fifo", "socket", "symlink-self", "symlink-cycle", "symlink-dev-zero", "symlink-dev-urandom",
            "symlink-dev-null", "symlink-outside", "symlink-dangling", "directory")
FUZZ_PER_KIND = 4  # random byte-level corruptions of each kind's valid content


@dataclass(frozen=True)
class Case:
    id: int
    kind: str
    mutation: str


def cases() -> list[Case]:
    out: list[Case] = []
    for kind in KINDS:
        for name in list(MUTATIONS) + list(SPECIALS) + [f"fuzz-{i}" for i in range(FUZZ_PER_KIND)]:
            out.append(Case(len(out), kind, name))
    return out


def _fuzz(valid: str, seed: int) -> bytes:
    rng = random.Random(seed)
    raw = bytearray((valid * 3).encode())
    for _ in range(rng.randint(1, 12)):
        op = rng.random()
        pos = rng.randrange(len(raw) + 1)
        if op < 0.4 and raw:
            raw[min(pos, len(raw) - 1)] = rng.randrange(256)
        elif op < 0.7:
            raw[pos:pos] = bytes(rng.choice(b"{}[]:-&*!|>'\"#\n\t\\%") for _ in range(rng.randint(1, 40)))
        else:
            del raw[pos: pos + rng.randint(1, 20)]
    return bytes(raw)


# --------------------------------------------------------------------------- running one case


def _prepare(case: Case, base: Path, work: Path) -> tuple[Path, dict[str, str], list[list[str]]]:
    """A fresh workspace with the case's file in place; (root, env, commands)."""
    root = work / "ws"
    shutil.copytree(base, root, symlinks=True)
    home = work / "home"
    home.mkdir()
    rel, valid, commands = KINDS[case.kind]
    fills = {"script": str(root / "script.yaml"), "session": "s-stress", "root": str(root)}
    (root / "script.yaml").write_text(SCRIPT)
    target = home / rel[2:] if rel.startswith("~/") else root / rel.format(**fills)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    m = case.mutation
    if m in MUTATIONS:
        target.write_bytes(MUTATIONS[m](valid))
    elif m.startswith("fuzz-"):
        target.write_bytes(_fuzz(valid, case.id))
    elif m == "fifo":
        os.mkfifo(target)
    elif m == "socket":
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.bind(str(target))
        except OSError:  # path too long for AF_UNIX: a FIFO instead
            os.mkfifo(target)
        finally:
            sock.close()
    elif m == "symlink-self":
        target.symlink_to(target.name)
    elif m == "symlink-cycle":
        other = target.with_name(target.name + ".other")
        target.symlink_to(other.name)
        other.symlink_to(target.name)
    elif m.startswith("symlink-dev-"):
        target.symlink_to("/dev/" + m.removeprefix("symlink-dev-").replace("-", ""))
    elif m == "symlink-outside":
        outside = work / "outside.md"
        outside.write_text(valid)
        target.symlink_to(outside)
    elif m == "symlink-dangling":
        target.symlink_to("no-such-file.md")
    elif m == "directory":
        target.mkdir()
    env = dict(ENV, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_CACHE_HOME=str(home / ".cache"))
    return root, env, [[part.format(**fills) for part in cmd] for cmd in commands]


def _base_workspace(folder: Path) -> Path:
    from kit.agent.sessions import SessionStore
    from kit.init import init_workspace
    from kit.workspace import Workspace

    root = folder / "base"
    init_workspace(root)
    os.environ["KIT_NOW"] = NOW
    ws = Workspace.open(root)
    store = SessionStore(ws)
    store.create("stress", session_id="s-stress")
    store.transcript_path("s-stress").write_text(SESSION)
    store.close()
    return root


def _argv(cmd: list[str], root: Path) -> list[str]:
    return cmd if cmd[0] == "fleet" else [*cmd, "-w", str(root)]


def run_inprocess(case: Case, base: Path, scratch: Path) -> dict:
    """Run the case's commands with CliRunner in this process; crash = anything but a typed exit."""
    import traceback

    from click.testing import CliRunner

    from kit.cli.main import cli

    work = Path(tempfile.mkdtemp(dir=scratch))
    try:
        root, env, commands = _prepare(case, base, work)
        runner = CliRunner()
        for cmd in commands:
            old = os.getcwd()
            os.chdir(root)
            try:
                result = runner.invoke(cli, _argv(cmd, root), env=env, catch_exceptions=True)
            finally:
                os.chdir(old)
            output = (result.output or "") + (getattr(result, "stderr", "") if result.stderr_bytes else "")
            exc = result.exception
            if exc is not None and not isinstance(exc, SystemExit):
                tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
                return {"id": case.id, "status": "crash", "command": cmd, "detail": tb[-600:]}
            if result.exit_code not in (0, 1, 2, 3) or "Traceback (most recent call last)" in output:
                return {"id": case.id, "status": "crash", "command": cmd, "detail": output[-600:]}
        return {"id": case.id, "status": "ok"}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_subprocess(case: Case, base: Path, scratch: Path) -> dict:
    """The same case through the real `kit` executable."""
    work = Path(tempfile.mkdtemp(dir=scratch))
    try:
        root, env, commands = _prepare(case, base, work)
        full = dict(os.environ, **env)
        for cmd in commands:
            try:
                done = subprocess.run([sys.executable, "-m", "kit", *_argv(cmd, root)], cwd=root, env=full,
                                      capture_output=True, text=True, timeout=HANG_S, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return {"id": case.id, "status": "hang", "command": cmd, "detail": "real kit process"}
            if done.returncode not in (0, 1, 2, 3) or "Traceback (most recent call last)" in done.stderr:
                return {"id": case.id, "status": "crash", "command": cmd, "detail": done.stderr[-600:]}
        return {"id": case.id, "status": "ok"}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def worker() -> None:
    """`malformed.py --worker BASE SCRATCH`: read case ids on stdin, answer one JSON line each."""
    base, scratch = Path(sys.argv[2]), Path(sys.argv[3])
    todo = {c.id: c for c in cases()}
    for line in sys.stdin:
        case = todo[int(line)]
        t0 = time.monotonic()
        try:
            out = run_inprocess(case, base, scratch)
        except BaseException as exc:  # the harness itself must survive anything
            out = {"id": case.id, "status": "crash", "detail": f"harness: {type(exc).__name__}: {exc}"}
        out["seconds"] = round(time.monotonic() - t0, 3)
        print(json.dumps(out), flush=True)


# --------------------------------------------------------------------------- the part


class _Worker:
    def __init__(self, base: Path, scratch: Path):
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", str(base), str(scratch)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **ENV), start_new_session=True)

    def ask(self, case: Case, timeout: float) -> dict | None:
        import select

        self.proc.stdin.write(f"{case.id}\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"id": case.id, "status": "crash", "detail": "worker died"}

    def kill(self) -> None:
        import signal

        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def run(limit: int | None = None, subprocess_every: int = 20, parallel: int = 2) -> dict:
    import concurrent.futures
    import threading

    all_cases = cases()[:limit] if limit else cases()
    scratch = Path(tempfile.mkdtemp(prefix="kit-stress-malformed-"))
    results: list[dict] = []
    lock = threading.Lock()
    try:
        base = _base_workspace(scratch)
        queue = list(all_cases)

        def drain() -> None:
            w = _Worker(base, scratch)
            try:
                while True:
                    with lock:
                        if not queue:
                            return
                        case = queue.pop(0)
                    t0 = time.monotonic()
                    out = w.ask(case, HANG_S)
                    if out is None:
                        w.kill()
                        out = {"id": case.id, "status": "hang", "seconds": round(time.monotonic() - t0, 1)}
                        w = _Worker(base, scratch)
                    if out["status"] == "ok" and subprocess_every and case.id % subprocess_every == 0:
                        real = run_subprocess(case, base, scratch)
                        if real["status"] != "ok":
                            out = real
                        out["subprocess"] = True
                    out.update(kind=case.kind, mutation=case.mutation)
                    with lock:
                        results.append(out)
            finally:
                w.kill()

        with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
            for f in [pool.submit(drain) for _ in range(parallel)]:
                f.result()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    bad = [r for r in results if r["status"] != "ok"]
    seconds = sorted(r.get("seconds", 0.0) for r in results)
    return {
        "inputs": len(results),
        "kinds": len({r["kind"] for r in results}),
        "crashes": sum(r["status"] == "crash" for r in results),
        "hangs": sum(r["status"] == "hang" for r in results),
        "slow": sum(s > SLOW_S for s in seconds),
        "median_s": seconds[len(seconds) // 2] if seconds else 0.0,
        "max_s": seconds[-1] if seconds else 0.0,
        "subprocess_runs": sum(1 for r in results if r.get("subprocess")),
        "bad": bad,
    }


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--worker":
    worker()
