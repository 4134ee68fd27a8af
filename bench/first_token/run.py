"""Kit's own time before the first token: `kit run` against an OpenAI-compatible server on
127.0.0.1 that answers at once (a stdlib SSE server in this process: its own time to first token
is ~0, so what is measured is Kit's overhead), before and after a change, in one run.

    python bench/first_token/run.py [--runs N] [--before REF]

Each source tree runs from its own copy (`git archive`; the current tree is the working copy's
files, uncommitted edits included), with the same interpreter and site-packages. Per tree, timed
from spawn:

- `request`: until the server receives the chat request (everything Kit does before asking:
  imports, workspace, hooks, active recall, the prompt);
- `stream-json`: until the first `text_delta` line of `kit run --stream-json`;
- `terminal`: until the reply's first word is on the screen of `kit run` on a pseudo-terminal
  (the live view: time to first printed token);
- `cpu`: the CPU time (user + system) of the whole `--stream-json` process, which a loaded
  machine inflates far less than the wall times above.

Two bytecode settings: `pyc` (each tree compiled first, as a wheel install is) and `no pyc`
(PYTHONDONTWRITEBYTECODE=1 over an uncompiled tree: every Kit module compiled from source on
each run, as on this development machine). Medians of --runs; ratios after/before in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from _isolated import isolate_home  # noqa: E402

NOW = "2026-05-07T09:00:00+00:00"
QUESTION = "What is the office door code?"
REPLY = ["Kestrel ", "says ", "the ", "code ", "is ", "ZEBRA-7431."]  # a first word no prompt has


class Server:
    """POST /v1/chat/completions → an SSE stream of REPLY at once; records when each request came."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._json(200, {"data": [{"id": "smollm2", "object": "model"}]})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.endswith("/chat/completions"):
                    # llama.cpp's /apply-template: a template that renders tools
                    names = " ".join(t["function"]["name"] for t in json.loads(body or b"{}").get("tools", []))
                    self._json(200, {"prompt": f"tools: {names}"})
                    return
                outer.arrived.append(time.perf_counter())
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for piece in REPLY:
                    self._event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                self._event({"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 6,
                                                      "total_tokens": 906}})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _event(self, data: dict) -> None:
                chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "smollm2", **data}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

            def _json(self, status: int, data: dict) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def source_tree(ref: str | None, into: Path) -> Path:
    """A copy of Kit's engine at `ref` (None: the working copy's files) under `into`."""
    into.mkdir(parents=True)
    if ref is None:
        shutil.copytree(ROOT / "engine", into / "engine", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("workspace", "skills", "hooks"):
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, into / name)
    else:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "engine", "workspace", "skills", "hooks"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "engine"


def workspace(tmp: Path, url: str) -> Path:
    ws = tmp / "ws"
    subprocess.run([sys.executable, "-m", "kit", "init", str(ws)], check=True, capture_output=True)
    with open(ws / "MEMORY.md", "a", encoding="utf-8") as fh:
        fh.write("\n- The office door code is ZEBRA-7431.\n")
    (ws / "memory").mkdir(exist_ok=True)
    (ws / "memory" / "2026-05-05.md").write_text(
        "# 2026-05-05\n\n- The staging database moved to db-7.\n- The door code changes in June.\n", encoding="utf-8")
    config = (ws / "kit.yaml").read_text(encoding="utf-8")
    (ws / "kit.yaml").write_text(
        config + f"\nagent: {{model: local/smollm2}}\nproviders:\n  local: {{type: openai, base_url: \"{url}\"}}\n",
        encoding="utf-8")
    return ws


def stream_json(ws: Path, env: dict[str, str], server: Server) -> tuple[float, float, float]:
    """(seconds to the request at the server, seconds to the first text_delta line, CPU seconds
    of the whole process: user + system, which a busy machine inflates far less than wall time)."""
    seen = len(server.arrived)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kit", "run", "--stream-json", QUESTION], cwd=ws, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    first = None
    for line in proc.stdout:
        if first is None and b'"text_delta"' in line:
            first = time.perf_counter() - start
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if first is None or len(server.arrived) <= seen:
        raise RuntimeError("kit run --stream-json printed no text")
    return server.arrived[seen] - start, first, usage.ru_utime + usage.ru_stime


def terminal(ws: Path, env: dict[str, str]) -> float:
    """Seconds from spawn until the reply's first word is on the pseudo-terminal."""
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(ws)
        os.execve(sys.executable, [sys.executable, "-m", "kit", "run", QUESTION], env)
    screen, first = b"", None
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
            if first is None and REPLY[0].strip().encode() in screen:
                first = time.perf_counter() - start
    finally:
        os.waitpid(pid, 0)
        os.close(fd)
    if first is None:
        raise RuntimeError("kit run printed no reply on the terminal")
    return first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", default="main", help="git ref of the 'before' tree (default main)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kit-bench-first-token-"))
    try:
        isolate_home(tmp)
        trees = {"before": source_tree(args.before, tmp / "before"), "after": source_tree(None, tmp / "after")}
        results: dict[tuple[str, str], dict[str, list[float]]] = {}
        with Server() as server:
            base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
            base.update(KIT_NOW=NOW, TERM="xterm-256color", COLUMNS="100", LINES="40")
            ws = workspace(tmp, server.url)
            for mode in ("pyc", "no pyc"):
                envs = {}
                for name, engine in trees.items():
                    env = envs[name] = dict(base, PYTHONPATH=str(engine))
                    if mode == "pyc":
                        subprocess.run([sys.executable, "-m", "compileall", "-q", str(engine)], check=True)
                    else:
                        env["PYTHONDONTWRITEBYTECODE"] = "1"
                        for cache in engine.rglob("__pycache__"):
                            shutil.rmtree(cache)
                    stream_json(ws, env, server)  # untimed: indexes, builds the embedding graph once
                    results[(mode, name)] = {"request": [], "stream-json": [], "terminal": [], "cpu": []}
                for _ in range(args.runs):
                    for name in trees:  # interleaved: a change in the machine's load hits both alike
                        figures = results[(mode, name)]
                        request, first, cpu = stream_json(ws, envs[name], server)
                        figures["request"].append(request)
                        figures["stream-json"].append(first)
                        figures["cpu"].append(cpu)
                        figures["terminal"].append(terminal(ws, envs[name]))
        print(f"kit run against a server that answers at once; medians of {args.runs} runs, seconds from "
              f"spawn (before = {args.before}, after = this working copy)")
        print(f"{'bytecode':<8} {'measure':<12} {'before':>8} {'after':>8} {'after/before':>13}")
        for mode in ("pyc", "no pyc"):
            for measure in ("request", "stream-json", "terminal", "cpu"):
                before = statistics.median(results[(mode, "before")][measure])
                after = statistics.median(results[(mode, "after")][measure])
                print(f"{mode:<8} {measure:<12} {before:>8.3f} {after:>8.3f} {after / before:>13.2f}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
