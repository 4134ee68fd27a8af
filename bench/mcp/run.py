"""`kit mcp serve` start-up and calls, next to a plain SDK server in the same run.

    python bench/mcp/run.py [--runs 15] [--calls 30]

1. spawn → initialize result: the time from starting the process to reading its answer to
   `initialize` on stdout (raw JSON-RPC over the pipes, no client library in the way), for
   `kit mcp serve`, for the third-party `mcp-server-time` (an SDK server doing nothing else: the
   floor an SDK-based server pays) and for `python -c "import mcp.server"` (the import alone);
2. the first memory_search after initialize (the index and the embedding model come up then, or
   in the warm-up that starts after the handshake), then the median of warm calls;
3. the agent's side: `kit mcp list` against mcp-server-time (spawn, initialize, tools/list, stop).

Figures are medians (and ratios) of one run; the machine's other load moves them.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE.parent)]

os.environ.setdefault("HF_HUB_OFFLINE", "1")

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "kit-bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Rpc:
    """One server process spoken to in newline-delimited JSON-RPC (the stdio transport)."""

    def __init__(self, argv: list[str], cwd: Path):
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=0)
        self._buf = b""
        self._id = 1

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    def answer(self, wanted: int, timeout: float = 300.0) -> dict:
        """The response with id `wanted` (notifications in between are skipped)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                if line.strip():
                    message = json.loads(line)
                    if message.get("id") == wanted:
                        return message
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TimeoutError(f"no answer {wanted} within {timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError("the server exited")
            self._buf += chunk

    def request(self, method: str, params: dict) -> dict:
        self._id += 1
        self.send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        return self.answer(self._id)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def spawn_to_initialize(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    rpc = Rpc(argv, cwd)
    try:
        rpc.send(INITIALIZE)
        reply = rpc.answer(1)
        elapsed = time.perf_counter() - start
        assert "result" in reply, reply
        return elapsed
    finally:
        rpc.close()


def timed(argv: list[str], cwd: Path, env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("skipped: the MCP SDK is not installed; pip install 'kit-agent[mcp]'")
        return 0
    time_server = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent)) or shutil.which(
        "mcp-server-time")
    from _isolated import isolate_home

    tmp = Path(tempfile.mkdtemp(prefix="kit-bench-mcp-"))
    isolate_home(tmp)
    os.environ["KIT_NOW"] = "2026-05-07T09:00:00+00:00"
    try:
        return run(tmp, time_server, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, time_server: str | None, args) -> int:
    from kit import init_workspace

    ws = tmp / "agent"
    init_workspace(ws)
    notes = ws / "memory"
    notes.mkdir(exist_ok=True)
    for day in range(1, 8):
        (notes / f"2026-05-0{day}.md").write_text(
            "".join(f"- fact {day}.{i}: the {('staging', 'billing', 'search')[i % 3]} service runs "
                    f"on host h{day}{i}\n" for i in range(40)), encoding="utf-8")
    py = sys.executable
    kit_serve = [py, "-m", "kit", "mcp", "serve", "-w", str(ws)]
    subprocess.run([py, "-m", "kit", "memory", "index", "-w", str(ws)], check=True, stdout=subprocess.DEVNULL)
    spawn_to_initialize(kit_serve, ws)  # warm the OS file cache once, not counted

    # interleaved, round by round, so a change in the machine's load hits every figure alike
    kit: list[float] = []
    floor: list[float] = []
    imports: list[float] = []
    bare: list[float] = []
    for _ in range(args.runs):
        kit.append(spawn_to_initialize(kit_serve, ws))
        if time_server:
            floor.append(spawn_to_initialize([time_server, "--local-timezone", "UTC"], ws))
        imports.append(timed([py, "-c", "import mcp.server"], ws))
        bare.append(timed([py, "-c", "pass"], ws))
    rows: list[tuple[str, float]] = [("kit mcp serve: spawn → initialize result", median_ms(kit))]
    if time_server:
        rows.append(("mcp-server-time (SDK server): spawn → initialize result", median_ms(floor)))
    rows.append(("python -c 'import mcp.server'", median_ms(imports)))
    rows.append(("python -c pass", median_ms(bare)))

    # first and warm memory_search in one server
    rpc = Rpc(kit_serve, ws)
    try:
        rpc.send(INITIALIZE)
        rpc.answer(1)
        rpc.send(INITIALIZED)
        start = time.perf_counter()
        first = rpc.request("tools/call", {"name": "memory_search", "arguments": {"query": "billing host"}})
        first_s = time.perf_counter() - start
        assert not first["result"].get("isError"), first
        warm = []
        for i in range(args.calls):
            start = time.perf_counter()
            reply = rpc.request("tools/call", {"name": "memory_search",
                                               "arguments": {"query": f"which host runs staging {i}"}})
            warm.append(time.perf_counter() - start)
            assert not reply["result"].get("isError"), reply
        reads = []
        for _ in range(args.calls):
            start = time.perf_counter()
            rpc.request("resources/read", {"uri": "kit://workspace/MEMORY.md"})
            reads.append(time.perf_counter() - start)
    finally:
        rpc.close()
    rows.append(("kit mcp serve: first memory_search after initialize", first_s * 1000))
    rows.append((f"kit mcp serve: memory_search, warm (median of {args.calls})", median_ms(warm)))
    rows.append((f"kit mcp serve: resources/read MEMORY.md (median of {args.calls})", median_ms(reads)))

    if time_server:
        (ws / "kit.yaml").write_text(
            "mcp:\n  servers:\n    time:\n"
            f"      command: {json.dumps(time_server)}\n      args: [--local-timezone, UTC]\n"
            "      policy: allow\n", encoding="utf-8")
        lists = [timed([py, "-m", "kit", "mcp", "list", "-w", str(ws), "--json"], ws) for _ in range(max(5, args.runs // 3))]
        cached = [timed([py, "-m", "kit", "mcp", "list", "-w", str(ws), "--json", "--cached"], ws)
                  for _ in range(max(5, args.runs // 3))]
        rows.append(("kit mcp list (starts mcp-server-time)", median_ms(lists)))
        rows.append(("kit mcp list --cached (starts nothing)", median_ms(cached)))

    width = max(len(name) for name, _ in rows)
    print(f"medians of {args.runs} runs (ms):")
    for name, value in rows:
        print(f"  {name:<{width}}  {value:8.0f}")
    figures = dict(rows)
    k = figures["kit mcp serve: spawn → initialize result"]
    floor_name = "mcp-server-time (SDK server): spawn → initialize result"
    if floor_name in figures:
        print(f"  ratio kit serve / mcp-server-time (spawn → initialize): {k / figures[floor_name]:.2f}")
    print(f"  ratio kit serve / import mcp.server: {k / figures['python -c ' + repr('import mcp.server')]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
